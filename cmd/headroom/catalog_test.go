package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// hfConfigs are byte copies of Hugging Face configs kept by the catalogs
// package's tests.
const hfConfigs = "../../catalogs/testdata/hf/aiconfigurator/"

// TestImportHFSlashIDRoundTrip: an id with a slash is written under
// models/ORG/NAME.yaml, and --catalog-dir then finds it by id and by
// Hugging Face id, in place of the built-in entry with that Hugging Face id.
func TestImportHFSlashIDRoundTrip(t *testing.T) {
	dir := t.TempDir()
	code, out, errOut := runCLI(t, "catalog", "import-hf", hfConfigs+"MiniMaxAI--MiniMax-M2.5_config.json",
		"--id", "MiniMaxAI/MiniMax-M2.5", "--out", dir)
	if code != 0 {
		t.Fatalf("import-hf exit %d: %s", code, errOut)
	}
	want := filepath.Join(dir, "models", "MiniMaxAI", "MiniMax-M2.5.yaml")
	if _, err := os.Stat(want); err != nil {
		t.Fatalf("import-hf did not write %s: %v", want, err)
	}
	if !strings.Contains(out, "wrote "+want) || !strings.Contains(out, "use --catalog-dir "+dir) {
		t.Errorf("import-hf said %q, want it to name %s and --catalog-dir %s", out, want, dir)
	}
	for _, name := range []string{"MiniMaxAI/MiniMax-M2.5", "minimaxai/minimax-m2.5"} {
		code, out, errOut := runCLI(t, "catalog", "show", "models", name, "--catalog-dir", dir, "--output", "json")
		if code != 0 {
			t.Fatalf("show %s exit %d: %s", name, code, errOut)
		}
		var got struct {
			Model struct {
				ID           string `json:"id"`
				HFID         string `json:"hf_id"`
				Source       string `json:"source"`
				Quantization *struct {
					Scheme string `json:"scheme"`
				} `json:"quantization"`
			}
		}
		if err := json.Unmarshal([]byte(out), &got); err != nil {
			t.Fatalf("show output: %v\n%s", err, out)
		}
		m := got.Model
		if m.ID != "MiniMaxAI/MiniMax-M2.5" || m.HFID != "MiniMaxAI/MiniMax-M2.5" || m.Source != "MiniMaxAI--MiniMax-M2.5_config.json" {
			t.Errorf("show %s: id %q, hf_id %q, source %q; want the imported entry", name, m.ID, m.HFID, m.Source)
		}
		if m.Quantization == nil || m.Quantization.Scheme != "fp8_block" {
			t.Errorf("show %s: quantization %+v, want fp8_block", name, m.Quantization)
		}
	}
	// Other commands read the same directory.
	if code, _, errOut := runCLI(t, "capacity", "--model", "MiniMaxAI/MiniMax-M2.5", "--gpu", "b300_sxm", "--tp", "2", "--catalog-dir", dir); code != 0 {
		t.Errorf("capacity with the imported model: exit %d: %s", code, errOut)
	}
	// Without the directory the built-in entry answers.
	code, out, _ = runCLI(t, "catalog", "show", "models", "MiniMaxAI/MiniMax-M2.5", "--output", "json")
	if code != 0 || !strings.Contains(out, `"id": "minimax-m2.5"`) {
		t.Errorf("built-in lookup: exit %d, %s", code, out)
	}
}

// TestImportHFQuantConfigBeside: ModelOpt's hf_quant_config.json is read
// when given, and found beside config.json otherwise.
func TestImportHFQuantConfigBeside(t *testing.T) {
	src := t.TempDir()
	for from, to := range map[string]string{
		"meta-llama--Meta-Llama-3.1-8B_config.json": "config.json",
	} {
		data, err := os.ReadFile(hfConfigs + from)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(src, to), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	quant, err := os.ReadFile("../../catalogs/testdata/hf/layout/nvidia--Llama-3.1-8B-Instruct-FP8_hf_quant_config.json")
	if err != nil {
		t.Fatal(err)
	}
	config := filepath.Join(src, "config.json")
	// Without hf_quant_config.json: a bf16 model.
	code, out, errOut := runCLI(t, "catalog", "import-hf", config, "--id", "nvidia/Llama-3.1-8B-Instruct-FP8")
	if code != 0 || strings.Contains(out, "quantization:") {
		t.Fatalf("import without hf_quant_config.json: exit %d, %s%s", code, out, errOut)
	}
	// Given explicitly.
	explicit := filepath.Join(t.TempDir(), "quant.json")
	if err := os.WriteFile(explicit, quant, 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut = runCLI(t, "catalog", "import-hf", config, "--id", "nvidia/Llama-3.1-8B-Instruct-FP8", "--quant-config", explicit)
	if code != 0 || !strings.Contains(out, "scheme: fp8_per_tensor") || !strings.Contains(out, "kv_cache_quant_algo: fp8") || !strings.Contains(out, "from config.json and quant.json") {
		t.Errorf("--quant-config: exit %d, %s%s", code, out, errOut)
	}
	// Found beside config.json.
	if err := os.WriteFile(filepath.Join(src, "hf_quant_config.json"), quant, 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut = runCLI(t, "catalog", "import-hf", config, "--id", "llama-fp8")
	if code != 0 || !strings.Contains(out, "scheme: fp8_per_tensor") || !strings.Contains(out, "hf_quant_config.json") {
		t.Errorf("hf_quant_config.json beside config.json: exit %d, %s%s", code, out, errOut)
	}
	if !strings.Contains(out, `hf_id: ""`) {
		t.Errorf("an id without a slash set hf_id: %s", out)
	}
}

func TestImportHFErrorsCLI(t *testing.T) {
	dir := t.TempDir()
	cfg := hfConfigs + "MiniMaxAI--MiniMax-M2.5_config.json"
	for _, c := range []struct {
		name   string
		args   []string
		inErr  string
		noFile string
	}{
		{"id escapes the directory", []string{"catalog", "import-hf", cfg, "--id", "../escape", "--out", dir}, "--id", filepath.Join(dir, "..", "escape.yaml")},
		{"id with an empty part", []string{"catalog", "import-hf", cfg, "--id", "a//b", "--out", dir}, "--id", ""},
		{"missing quant config", []string{"catalog", "import-hf", cfg, "--id", "x", "--quant-config", filepath.Join(dir, "nope.json")}, "--quant-config", ""},
		{"quant config beside a non-modelopt config", []string{"catalog", "import-hf", cfg, "--id", "x", "--quant-config",
			hfConfigs + "nvidia--MiniMax-M2.5-NVFP4_hf_quant_config.json"}, `says quant_method "fp8"`, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, _, errOut := runCLI(t, c.args...)
			if code != 2 || !strings.Contains(errOut, c.inErr) {
				t.Errorf("exit %d, stderr %q; want 2 containing %q", code, errOut, c.inErr)
			}
			if c.noFile != "" {
				if _, err := os.Stat(c.noFile); err == nil {
					t.Errorf("%s was written", c.noFile)
				}
			}
		})
	}
}
