package catalogs

import (
	"bytes"
	"errors"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/headroom-sim/headroom/hardware"
	"github.com/headroom-sim/headroom/internal/testkit/refdata"
	"github.com/headroom-sim/headroom/models"
)

// refConfigs are the configs of the measured runs' models (byte copies
// under testdata/hf/aiconfigurator), with the hf_quant_config.json given
// beside some, and the catalog entry each import must equal.
var refConfigs = []struct {
	name, config, quant, id string
}{
	{"minimax fp8", "aiconfigurator/MiniMaxAI--MiniMax-M2.5_config.json", "", "minimax-m2.5"},
	{"minimax nvfp4", "aiconfigurator/nvidia--MiniMax-M2.5-NVFP4_config.json", "", "minimax-m2.5-nvfp4"},
	{"minimax nvfp4 + hf_quant_config", "aiconfigurator/nvidia--MiniMax-M2.5-NVFP4_config.json", "aiconfigurator/nvidia--MiniMax-M2.5-NVFP4_hf_quant_config.json", "minimax-m2.5-nvfp4"},
	{"qwen3-235b bf16", "aiconfigurator/Qwen--Qwen3-235B-A22B_config.json", "", "qwen3-235b-a22b"},
	{"qwen3-235b fp8", "aiconfigurator/Qwen--Qwen3-235B-A22B-FP8_config.json", "", "qwen3-235b-a22b-fp8"},
	{"gpt-oss-120b", "aiconfigurator/openai--gpt-oss-120b_config.json", "", "gpt-oss-120b"},
	{"llama-3.1-8b", "aiconfigurator/meta-llama--Meta-Llama-3.1-8B_config.json", "", "llama-3.1-8b"},
	// Meta's config.json with ModelOpt's FP8 hf_quant_config.json beside it
	// (a fixture built from the ModelOpt layout).
	{"llama-3.1-8b fp8 modelopt", "aiconfigurator/meta-llama--Meta-Llama-3.1-8B_config.json", "layout/nvidia--Llama-3.1-8B-Instruct-FP8_hf_quant_config.json", "llama-3.1-8b-instruct-fp8"},
}

func importFixture(t testing.TB, config, quant string, lenient bool) (*models.Model, []string, error) {
	t.Helper()
	opts := HFOptions{ID: "x", Lenient: lenient}
	if quant != "" {
		opts.QuantConfig = bytes.NewReader(hfReadFixture(t, quant))
		opts.QuantConfigName = filepath.Base(quant)
	}
	return ImportHFWith(filepath.Base(config), bytes.NewReader(hfReadFixture(t, config)), opts)
}

func TestImportHFReferenceConfigs(t *testing.T) {
	cat, err := Builtin()
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range refConfigs {
		t.Run(tt.name, func(t *testing.T) {
			want, err := cat.Model(tt.id)
			if err != nil {
				t.Fatal(err)
			}
			got, ignored, err := importFixture(t, tt.config, tt.quant, false)
			if err != nil {
				t.Fatalf("ImportHF: %v", err)
			}
			if g, w := hfShape(got), hfShape(want); !reflect.DeepEqual(g, w) {
				t.Errorf("imported shape differs from catalog entry %s:\n got  %+v\n want %+v", tt.id, g, w)
				if g.Quantization != nil && w.Quantization != nil {
					t.Errorf("quantization:\n got  %+v\n want %+v", *g.Quantization, *w.Quantization)
				}
				if g.MoE != nil && w.MoE != nil {
					t.Errorf("moe: got %+v, want %+v", *g.MoE, *w.MoE)
				}
			}
			for _, k := range ignored {
				if hfUsedKeys[k] {
					t.Errorf("key %q reported as ignored but the importer reads it", k)
				}
			}
		})
	}
}

// TestImportHFSharedConfigs: the copies under testdata equal the reference
// data's, and every config there imports strictly.
func TestImportHFSharedConfigs(t *testing.T) {
	dir := refdata.Path(t, "models/hf-configs")
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range entries {
		shared, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if copied := hfReadFixture(t, "aiconfigurator/"+e.Name()); !bytes.Equal(copied, shared) {
			t.Errorf("testdata/hf/aiconfigurator/%s differs from the reference data's copy", e.Name())
		}
		if !strings.HasSuffix(e.Name(), "_config.json") || strings.HasSuffix(e.Name(), "_hf_quant_config.json") {
			continue
		}
		n++
		if _, _, err := ImportHF(e.Name(), bytes.NewReader(shared), "x"); err != nil {
			t.Errorf("ImportHF(%s): %v", e.Name(), err)
		}
	}
	if n < 6 {
		t.Errorf("imported %d configs from %s, want the 6 the reference data hold", n, dir)
	}
}

// TestImportHFLayoutFixtures: compressed-tensors schemes, Kimi-K2's
// experts-only int4 and a multimodal text_config, from fixtures built to
// the documented layouts.
func TestImportHFLayoutFixtures(t *testing.T) {
	tests := []struct {
		file  string
		want  models.Quantization
		check func(t *testing.T, m *models.Model)
	}{
		{"layout/redhat--Meta-Llama-3.1-8B-Instruct-quantized.w4a16_config.json",
			models.Quantization{Method: "compressed-tensors", DType: hardware.INT4, Scheme: models.SchemeINT4WeightOnly, GroupSize: 128, ModulesToNotConvert: []string{"lm_head"}},
			func(t *testing.T, m *models.Model) {
				if p := m.DefaultPrecision(); p.Weights != hardware.INT4 || p.Attention != "" || p.KV != hardware.BF16 {
					t.Errorf("DefaultPrecision = %+v, want int4 weights everywhere, bf16 KV", p)
				}
			}},
		{"layout/redhat--Meta-Llama-3.1-8B-Instruct-quantized.w8a8_config.json",
			models.Quantization{Method: "compressed-tensors", DType: hardware.INT8, Scheme: models.SchemeINT8W8A8, ActivationScheme: "dynamic", ModulesToNotConvert: []string{"lm_head"}},
			func(t *testing.T, m *models.Model) {
				if a := m.Quantization.ActivationDType(m.DType); a != hardware.INT8 {
					t.Errorf("GEMM inputs %s, want int8", a)
				}
			}},
		{"layout/redhat--Qwen3-30B-A3B-FP8-block_config.json",
			models.Quantization{Method: "compressed-tensors", DType: hardware.FP8, Scheme: models.SchemeFP8Block, WeightBlockSize: []int{128, 128}, ActivationScheme: "dynamic", ModulesToNotConvert: []string{"lm_head", "re:.*mlp.gate$"}},
			func(t *testing.T, m *models.Model) {
				if m.MoE == nil || m.MoE.NumExperts != 128 {
					t.Errorf("moe %+v, want Qwen3-30B-A3B's 128 experts", m.MoE)
				}
			}},
		{"layout/moonshotai--Kimi-K2-Thinking_config.json",
			models.Quantization{Method: "compressed-tensors", DType: hardware.INT4, Scheme: models.SchemeINT4WeightOnly, GroupSize: 32,
				ExpertsOnly: true, AttentionUnquantized: true,
				ModulesToNotConvert: []string{"lm_head", "re:.*self_attn.*", "re:.*shared_experts.*", `re:.*mlp\.(gate|up|gate_up|down)_proj.*`}},
			func(t *testing.T, m *models.Model) {
				if m.MLA == nil || m.MoE == nil || m.MoE.NumExperts != 384 || m.MoE.FirstDenseLayers != 1 || m.MoE.NumSharedExperts != 1 {
					t.Errorf("shape: mla %+v moe %+v, want MLA and 384 experts, 1 shared, 1 dense layer", m.MLA, m.MoE)
				}
				// Moonshot: "1 trillion total parameters, 32 billion activated".
				if c := m.Params(); math.Abs(float64(c.Total)/1.03e12-1) > 0.02 || math.Abs(float64(c.Active)/32e9-1) > 0.05 {
					t.Errorf("params total %.4g active %.4g, want about 1.03T and 32B", float64(c.Total), float64(c.Active))
				}
				p := m.DefaultPrecision()
				if p.Weights != hardware.BF16 || p.ExpertDType() != hardware.INT4 {
					t.Errorf("DefaultPrecision = %+v, want bf16 weights and int4 experts", p)
				}
			}},
		{"layout/redhat--Mistral-Small-3.1-24B-Instruct-2503-FP8-dynamic_config.json",
			models.Quantization{Method: "compressed-tensors", DType: hardware.FP8, Scheme: models.SchemeFP8PerChannel, ActivationScheme: "dynamic",
				ModulesToNotConvert: []string{"language_model.lm_head", "re:vision_tower.*", "re:multi_modal_projector.*"}},
			func(t *testing.T, m *models.Model) {
				if m.Architecture != "Mistral3ForConditionalGeneration" || m.NumLayers != 40 || m.HiddenSize != 5120 || m.HeadDim != 128 || m.NumKVHeads != 8 || m.VocabSize != 131072 {
					t.Errorf("text_config shape not read: %+v", *m)
				}
			}},
	}
	for _, tt := range tests {
		t.Run(filepath.Base(tt.file), func(t *testing.T) {
			m, _, err := importFixture(t, tt.file, "", false)
			if err != nil {
				t.Fatalf("ImportHF: %v", err)
			}
			if m.Quantization == nil || !reflect.DeepEqual(*m.Quantization, tt.want) {
				t.Errorf("quantization:\n got  %+v\n want %+v", m.Quantization, tt.want)
			}
			tt.check(t, m)
		})
	}
}

// quantEdit rewrites a fixture; it panics when the edit does not apply, so
// a stale test cannot pass silently.
func quantEdit(old, new string) func(string) string {
	return func(s string) string {
		out := strings.Replace(s, old, new, 1)
		if out == s {
			panic("fixture edit did not apply: " + old)
		}
		return out
	}
}

func TestImportHFQuantErrors(t *testing.T) {
	const (
		w4a16   = "layout/redhat--Meta-Llama-3.1-8B-Instruct-quantized.w4a16_config.json"
		w8a8    = "layout/redhat--Meta-Llama-3.1-8B-Instruct-quantized.w8a8_config.json"
		nvfp4   = "aiconfigurator/nvidia--MiniMax-M2.5-NVFP4_config.json"
		nvfp4Q  = "aiconfigurator/nvidia--MiniMax-M2.5-NVFP4_hf_quant_config.json"
		minimax = "aiconfigurator/MiniMaxAI--MiniMax-M2.5_config.json"
		llama   = "aiconfigurator/meta-llama--Meta-Llama-3.1-8B_config.json"
		llamaQ  = "layout/nvidia--Llama-3.1-8B-Instruct-FP8_hf_quant_config.json"
		qwen    = "aiconfigurator/Qwen--Qwen3-235B-A22B_config.json"
	)
	keep := func(s string) string { return s }
	tests := []struct {
		name                string
		config              string
		editConfig          func(string) string
		quant               string
		editQuant           func(string) string
		wantFile, wantField string
		wantIn              string
	}{
		{"ct unknown key", w4a16, quantEdit(`"quantization_status"`, `"quantisation_status": 1, "quantization_status"`), "", nil,
			"redhat--Meta-Llama-3.1-8B-Instruct-quantized.w4a16_config.json", "quantization_config.quantisation_status", "unknown quantization key"},
		{"ct 3-bit weights", w4a16, quantEdit(`"num_bits": 4`, `"num_bits": 3`), "", nil,
			"", "quantization_config.config_groups.group_0", "3-bit int weights are not supported"},
		{"ct int8 weights, fp8 activations", w8a8, quantEdit(`"strategy": "token",
          "symmetric": true,
          "type": "int"`, `"strategy": "token",
          "symmetric": true,
          "type": "float"`), "", nil,
			"", "quantization_config.config_groups.group_0", "int8 weights with 8-bit float activations"},
		{"ct output activations", w4a16, quantEdit(`"output_activations": null`, `"output_activations": {"num_bits": 8}`), "", nil,
			"", "quantization_config.config_groups.group_0.output_activations", "not supported"},
		{"ct attention-only target", w4a16, quantEdit(`"Linear"`, `"re:.*self_attn.*"`), "", nil,
			"", "quantization_config.config_groups.group_0.targets", "only Linear"},
		{"ct no groups", w4a16, quantEdit(`"config_groups": {`, `"config_groups": {}, "x_groups": {`), "", nil,
			"", "quantization_config.x_groups", "unknown quantization key"},
		{"ct type", w4a16, quantEdit(`"type": "int"`, `"type": "uint"`), "", nil,
			"", "quantization_config.config_groups.group_0.weights.type", "not int or float"},
		{"ct bad regex", w4a16, quantEdit(`"lm_head"`, `"re:(unclosed"`), "", nil,
			"", "quantization_config.ignore[0]", "pattern"},
		{"ct kv 4-bit", w4a16, quantEdit(`"kv_cache_scheme": null`, `"kv_cache_scheme": {"num_bits": 4, "type": "float"}`), "", nil,
			"", "quantization_config.kv_cache_scheme.num_bits", "KV cache is not supported"},
		{"ct sparse", w4a16, quantEdit(`"sparsity_config": {}`, `"sparsity_config": {"format": "sparse-24-bitmask"}`), "", nil,
			"", "quantization_config.sparsity_config.format", "sparse"},
		{"fp8 block of one number", minimax, quantEdit(`"weight_block_size": [128, 128]`, `"weight_block_size": [128]`), "", nil,
			"", "quantization_config.weight_block_size", "two entries"},
		{"fp8 e5m2", minimax, quantEdit(`"fmt": "float8_e4m3fn"`, `"fmt": "e5m2"`), "", nil,
			"", "quantization_config.fmt", "not supported"},
		{"mxfp4 on a dense model", llama, quantEdit(`"use_cache": true,`, `"use_cache": true, "quantization_config": {"quant_method": "mxfp4"},`), "", nil,
			"", "quantization_config.quant_method", "routed experts only"},
		{"modelopt unknown algo", nvfp4, quantEdit(`"quant_algo": "NVFP4"`, `"quant_algo": "MIXED_PRECISION"`), "", nil,
			"", "quantization_config.quant_algo", "unsupported quant_algo"},
		{"modelopt algo disagrees with hf_quant_config", nvfp4, keep, nvfp4Q, quantEdit(`"quant_algo": "NVFP4"`, `"quant_algo": "FP8"`),
			"nvidia--MiniMax-M2.5-NVFP4_hf_quant_config.json", "quantization.quant_algo", "disagrees"},
		{"modelopt kv disagrees", nvfp4, keep, nvfp4Q, quantEdit(`"kv_cache_quant_algo": "FP8"`, `"kv_cache_quant_algo": "INT8"`),
			"nvidia--MiniMax-M2.5-NVFP4_hf_quant_config.json", "quantization.kv_cache_quant_algo", "disagrees"},
		{"modelopt kv nvfp4", llama, keep, llamaQ, quantEdit(`"kv_cache_quant_algo": "FP8"`, `"kv_cache_quant_algo": "NVFP4"`),
			"nvidia--Llama-3.1-8B-Instruct-FP8_hf_quant_config.json", "quantization.kv_cache_quant_algo", "not supported"},
		{"modelopt group size", llama, keep, llamaQ, quantEdit(`"quant_algo": "FP8",`, `"quant_algo": "NVFP4", "group_size": 32,`),
			"nvidia--Llama-3.1-8B-Instruct-FP8_hf_quant_config.json", "quantization.group_size", "does not fit quant_algo NVFP4"},
		{"modelopt config_groups disagree", nvfp4, func(s string) string {
			fp4 := `"num_bits": 4,
                    "type": "float",
                    "group_size": 16`
			if strings.Count(s, fp4) != 2 {
				panic("fixture edit did not apply")
			}
			return strings.ReplaceAll(s, fp4, `"num_bits": 8, "type": "float"`)
		}, "", nil,
			"", "quantization_config.config_groups", "fp8_per_tensor, but quant_algo NVFP4"},
		{"modelopt without algo", llama, keep, llamaQ, quantEdit(`"quant_algo": "FP8",`, ``),
			"nvidia--Llama-3.1-8B-Instruct-FP8_hf_quant_config.json", "quantization.quant_algo", "is required"},
		{"hf_quant_config beside a non-modelopt config", minimax, keep, llamaQ, keep,
			"nvidia--Llama-3.1-8B-Instruct-FP8_hf_quant_config.json", "", `quant_method "fp8"`},
		{"hf_quant_config unknown top key", llama, keep, llamaQ, quantEdit(`"producer"`, `"produced": 1, "producer"`),
			"nvidia--Llama-3.1-8B-Instruct-FP8_hf_quant_config.json", "produced", "unknown hf_quant_config.json key"},
		{"hf_quant_config not JSON", llama, keep, llamaQ, func(string) string { return "quant_algo: FP8" },
			"nvidia--Llama-3.1-8B-Instruct-FP8_hf_quant_config.json", "", "not a JSON object"},
		{"lightning attention layer", nvfp4, quantEdit(`"attn_type_list": [
        1,`, `"attn_type_list": [
        0,`), "", nil,
			"", "attn_type_list[0]", "lightning"},
		{"attn_type_list length", nvfp4, quantEdit(`"attn_type_list": [
        1,`, `"attn_type_list": [`), "", nil,
			"", "attn_type_list", "61 entries for 62 layers"},
		{"rotary_dim disagrees", nvfp4, quantEdit(`"rotary_dim": 64`, `"rotary_dim": 32`), "", nil,
			"", "rotary_dim", "disagrees with partial_rotary_factor"},
		{"rotary_dim above head_dim", minimax, quantEdit(`"rotary_dim": 64`, `"rotary_dim": 256`), "", nil,
			"", "rotary_dim", "between 1 and head_dim"},
		{"awq bits", qwen, quantEdit(`"use_cache": true,`, `"use_cache": true, "quantization_config": {"quant_method": "awq", "bits": 3},`), "", nil,
			"", "quantization_config.bits", "3-bit awq"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := tt.editConfig(string(hfReadFixture(t, tt.config)))
			opts := HFOptions{ID: "x"}
			if tt.quant != "" {
				opts.QuantConfig = strings.NewReader(tt.editQuant(string(hfReadFixture(t, tt.quant))))
				opts.QuantConfigName = filepath.Base(tt.quant)
			}
			_, _, err := ImportHFWith(filepath.Base(tt.config), strings.NewReader(cfg), opts)
			var fe *FileError
			if !errors.As(err, &fe) {
				t.Fatalf("error %v (%T), want *FileError", err, err)
			}
			wantFile := tt.wantFile
			if wantFile == "" {
				wantFile = filepath.Base(tt.config)
			}
			if fe.File != wantFile || fe.Field != tt.wantField || !strings.Contains(err.Error(), tt.wantIn) {
				t.Errorf("error %q\n (file %q, field %q), want file %q, field %q, containing %q", err, fe.File, fe.Field, wantFile, tt.wantField, tt.wantIn)
			}
		})
	}
}

func TestImportHFQuantLenient(t *testing.T) {
	in := strings.Replace(string(hfReadFixture(t, "layout/redhat--Meta-Llama-3.1-8B-Instruct-quantized.w4a16_config.json")),
		`"quantization_status"`, `"brand_new_quant_key": 1, "quantization_status"`, 1)
	m, ignored, err := ImportHFLenient("config.json", strings.NewReader(in), "x")
	if err != nil {
		t.Fatalf("ImportHFLenient: %v", err)
	}
	if m.Quantization == nil || m.Quantization.Scheme != models.SchemeINT4WeightOnly {
		t.Errorf("quantization %+v, want int4 weight-only", m.Quantization)
	}
	found := false
	for _, k := range ignored {
		found = found || k == "quantization_config.brand_new_quant_key"
	}
	if !found {
		t.Errorf("ignored keys %v do not include quantization_config.brand_new_quant_key", ignored)
	}
}

// TestImportHFQuantVariants: spellings the fixture files do not cover.
func TestImportHFQuantVariants(t *testing.T) {
	llama := string(hfReadFixture(t, "aiconfigurator/meta-llama--Meta-Llama-3.1-8B_config.json"))
	qwen := string(hfReadFixture(t, "aiconfigurator/Qwen--Qwen3-235B-A22B_config.json"))
	with := func(base, quant string) string {
		return strings.Replace(base, `"use_cache": true,`, `"use_cache": true, "quantization_config": `+quant+`,`, 1)
	}
	tests := []struct {
		name, config string
		want         models.Quantization
	}{
		{"gptq per channel", with(llama, `{"quant_method": "gptq", "bits": 4, "group_size": -1, "desc_act": true, "sym": true}`),
			models.Quantization{Method: "gptq", DType: hardware.INT4, Scheme: models.SchemeINT4WeightOnly}},
		{"awq default group", with(llama, `{"quant_method": "awq", "bits": 4, "zero_point": true, "version": "gemm"}`),
			models.Quantization{Method: "awq", DType: hardware.INT4, Scheme: models.SchemeINT4WeightOnly, GroupSize: 128}},
		{"fbgemm fp8", with(llama, `{"quant_method": "fbgemm_fp8", "activation_scale_ub": 1200.0, "modules_to_not_convert": ["lm_head"]}`),
			models.Quantization{Method: "fbgemm_fp8", DType: hardware.FP8, Scheme: models.SchemeFP8PerChannel, ActivationScheme: "dynamic", ModulesToNotConvert: []string{"lm_head"}}},
		{"fp8 per tensor static", with(llama, `{"quant_method": "fp8", "activation_scheme": "static"}`),
			models.Quantization{Method: "fp8", DType: hardware.FP8, Scheme: models.SchemeFP8PerTensor, ActivationScheme: "static"}},
		{"modelopt flat in config.json", with(llama, `{"quant_method": "modelopt", "quant_algo": "FP8", "kv_cache_quant_algo": "FP8", "exclude_modules": ["lm_head"]}`),
			models.Quantization{Method: "modelopt", DType: hardware.FP8, Scheme: models.SchemeFP8PerTensor, ActivationScheme: "static", KVCacheQuantAlgo: hardware.FP8, ModulesToNotConvert: []string{"lm_head"}}},
		{"modelopt nested in config.json", with(llama, `{"quant_method": "modelopt", "producer": {"name": "modelopt"}, "quantization": {"quant_algo": "W4A16_AWQ", "group_size": 64, "kv_cache_quant_algo": null}}`),
			models.Quantization{Method: "modelopt", DType: hardware.INT4, Scheme: models.SchemeINT4WeightOnly, GroupSize: 64}},
		{"ct nvfp4 experts only by target", with(qwen, `{"quant_method": "compressed-tensors", "config_groups": {"group_0": {"targets": ["re:.*mlp.experts.*"],
			"weights": {"num_bits": 4, "type": "float", "strategy": "tensor_group", "group_size": 16},
			"input_activations": {"num_bits": 4, "type": "float", "strategy": "tensor_group", "group_size": 16, "dynamic": "local"}}},
			"ignore": ["lm_head"], "format": "nvfp4-pack-quantized"}`),
			models.Quantization{Method: "compressed-tensors", DType: hardware.FP4, Scheme: models.SchemeNVFP4, GroupSize: 16, ActivationScheme: "dynamic",
				ExpertsOnly: true, AttentionUnquantized: true, ModulesToNotConvert: []string{"lm_head"}}},
		{"ct fp8 weight-only", with(llama, `{"quant_method": "compressed-tensors", "config_groups": {"group_0": {"targets": ["Linear"],
			"weights": {"num_bits": 8, "type": "float", "strategy": "channel"}}}}`),
			models.Quantization{Method: "compressed-tensors", DType: hardware.FP8, Scheme: models.SchemeFP8WeightOnly}},
		{"ct int4 w4a8 fp8", with(llama, `{"quant_method": "compressed-tensors", "config_groups": {"group_0": {"targets": ["Linear"],
			"weights": {"num_bits": 4, "type": "int", "strategy": "group", "group_size": 128},
			"input_activations": {"num_bits": 8, "type": "float", "strategy": "token", "dynamic": true}}}}`),
			models.Quantization{Method: "compressed-tensors", DType: hardware.INT4, Scheme: models.SchemeINT4W4A8FP8, GroupSize: 128, ActivationScheme: "dynamic"}},
		{"ct block as string, kv fp8", with(llama, `{"quant_method": "compressed-tensors", "config_groups": {"group_0": {"targets": ["Linear"],
			"weights": {"num_bits": 8, "type": "float", "strategy": "block", "block_structure": "128x128"},
			"input_activations": {"num_bits": 8, "type": "float", "strategy": "group", "group_size": 128, "dynamic": true}}},
			"kv_cache_scheme": {"num_bits": 8, "type": "float", "strategy": "tensor", "dynamic": false, "symmetric": true}}`),
			models.Quantization{Method: "compressed-tensors", DType: hardware.FP8, Scheme: models.SchemeFP8Block, WeightBlockSize: []int{128, 128}, ActivationScheme: "dynamic", KVCacheQuantAlgo: hardware.FP8}},
		// Some layers' attention excluded: not all, so attention counts as
		// quantised; the list keeps the layer numbers.
		{"partial attention exclusion", with(llama, `{"quant_method": "fp8", "modules_to_not_convert": ["model.layers.0.self_attn", "model.layers.31.self_attn", "lm_head"]}`),
			models.Quantization{Method: "fp8", DType: hardware.FP8, Scheme: models.SchemeFP8PerTensor, ActivationScheme: "dynamic",
				ModulesToNotConvert: []string{"model.layers.0.self_attn", "model.layers.31.self_attn", "lm_head"}}},
		// Every layer listed: attention unquantised, the list folded.
		{"every layer's attention listed", with(llama, `{"quant_method": "fp8", "modules_to_not_convert": [`+layerList(32, "model.layers.%d.self_attn")+`]}`),
			models.Quantization{Method: "fp8", DType: hardware.FP8, Scheme: models.SchemeFP8PerTensor, ActivationScheme: "dynamic",
				AttentionUnquantized: true, ModulesToNotConvert: []string{"model.layers.*.self_attn"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, _, err := ImportHF("config.json", strings.NewReader(tt.config), "x")
			if err != nil {
				t.Fatalf("ImportHF: %v", err)
			}
			if m.Quantization == nil || !reflect.DeepEqual(*m.Quantization, tt.want) {
				t.Errorf("quantization:\n got  %+v\n want %+v", m.Quantization, tt.want)
			}
		})
	}
}

func layerList(n int, format string) string {
	parts := make([]string, n)
	for i := range parts {
		parts[i] = `"` + strings.Replace(format, "%d", itoa(i), 1) + `"`
	}
	return strings.Join(parts, ", ")
}

func itoa(i int) string {
	if i < 10 {
		return string(rune('0' + i))
	}
	return itoa(i/10) + string(rune('0'+i%10))
}

// TestExclusionMatching: the three pattern spellings, and the layer
// prefixes of multimodal wrappers.
func TestExclusionMatching(t *testing.T) {
	tests := []struct {
		pattern, module string
		want            bool
	}{
		{"lm_head", "lm_head", true},
		{"gate", "model.layers.3.block_sparse_moe.gate", true},
		{"gate", "model.layers.3.mlp.experts.0.gate_proj", false},
		{"self_attn", "model.layers.3.self_attn.q_proj", true},
		{"model.layers.3.self_attn", "model.layers.3.self_attn.q_proj", true},
		{"model.layers.3.self_attn", "model.layers.13.self_attn.q_proj", false},
		{"model.layers.*.self_attn", "model.layers.13.self_attn.q_proj", true},
		{"model.layers.1*.self_attn*", "model.layers.13.self_attn.o_proj", true},
		{"model.layers.0.self_attn*", "model.layers.0.self_attn.q_proj", true},
		{"model.layers.0.self_attn*", "model.layers.10.self_attn.q_proj", false},
		{"re:.*self_attn.*", "model.language_model.layers.2.self_attn.v_proj", true},
		{"re:vision_tower.*", "model.layers.2.self_attn.v_proj", false},
		{`re:.*mlp\.(gate|up|gate_up|down)_proj.*`, "model.layers.0.mlp.gate_proj", true},
		{`re:.*mlp\.(gate|up|gate_up|down)_proj.*`, "model.layers.1.mlp.experts.7.gate_proj", false},
	}
	for _, tt := range tests {
		ex, err := compileExclusions([]exclPattern{{text: tt.pattern}})
		if err != nil {
			t.Fatalf("%q: %v", tt.pattern, err)
		}
		if got := ex.excluded(tt.module); got != tt.want {
			t.Errorf("pattern %q, module %q: excluded = %v, want %v", tt.pattern, tt.module, got, tt.want)
		}
	}
	// The language model of a multimodal wrapper.
	m := &models.Model{NumLayers: 2, HiddenSize: 8, NumHeads: 2, NumKVHeads: 2, HeadDim: 4}
	ex, _ := compileExclusions([]exclPattern{{text: "re:model\\.language_model\\.layers\\.\\d+\\.self_attn\\..*"}})
	if attn, _, _ := ex.analyse(m); !attn {
		t.Error("attention excluded under model.language_model.layers: not detected")
	}
}

func TestFoldLayerPatterns(t *testing.T) {
	pats := func(s ...string) []exclPattern {
		out := make([]exclPattern, len(s))
		for i, p := range s {
			out[i] = exclPattern{text: p}
		}
		return out
	}
	tests := []struct {
		in     []exclPattern
		layers int
		want   []string
	}{
		{pats("lm_head", "model.layers.0.mlp.gate", "model.layers.1.mlp.gate", "model.layers.1.mlp.gate"), 2, []string{"lm_head", "model.layers.*.mlp.gate"}},
		{pats("model.layers.0.self_attn*", "model.layers.1.self_attn*", "model.layers.2.self_attn*"), 3, []string{"model.layers.*.self_attn*"}},
		{pats("model.layers.0.mlp.gate", "model.layers.2.mlp.gate"), 3, []string{"model.layers.0.mlp.gate", "model.layers.2.mlp.gate"}},
		{pats(`re:model\.layers\.0\..*`, `re:model\.layers\.1\..*`), 2, []string{`re:model\.layers\.0\..*`, `re:model\.layers\.1\..*`}},
		{nil, 4, nil},
	}
	for _, tt := range tests {
		if got := foldLayerPatterns(tt.in, tt.layers); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("foldLayerPatterns(%v, %d) = %q, want %q", tt.in, tt.layers, got, tt.want)
		}
	}
}

func FuzzImportHFQuantConfig(f *testing.F) {
	nvfp4 := hfReadFixture(f, "aiconfigurator/nvidia--MiniMax-M2.5-NVFP4_config.json")
	llama := hfReadFixture(f, "aiconfigurator/meta-llama--Meta-Llama-3.1-8B_config.json")
	f.Add(nvfp4, hfReadFixture(f, "aiconfigurator/nvidia--MiniMax-M2.5-NVFP4_hf_quant_config.json"))
	f.Add(llama, hfReadFixture(f, "layout/nvidia--Llama-3.1-8B-Instruct-FP8_hf_quant_config.json"))
	for _, q := range []string{`{}`, `null`, `{"quantization": 3}`, `{"quantization": {"quant_algo": "NVFP4", "group_size": 16}}`,
		`{"quant_algo": "W4A8_AWQ", "group_size": 0}`, `{"quantization": {"quant_algo": "FP8", "exclude_modules": ["re:("]}}`} {
		f.Add(llama, []byte(q))
	}
	f.Fuzz(func(t *testing.T, config, quant []byte) {
		m, _, err := ImportHFWith("config.json", bytes.NewReader(config), HFOptions{ID: "fuzz",
			QuantConfig: bytes.NewReader(quant), QuantConfigName: "hf_quant_config.json"})
		if err != nil {
			var fe *FileError
			if !errors.As(err, &fe) {
				t.Fatalf("error %v is a %T, want *FileError", err, err)
			}
			if !strings.HasPrefix(err.Error(), "config.json:") && !strings.HasPrefix(err.Error(), "hf_quant_config.json:") {
				t.Fatalf("error %q names neither file", err)
			}
			return
		}
		if err := m.Validate(); err != nil {
			t.Fatalf("imported model fails Validate: %v", err)
		}
		_ = m.WeightBytesPerGPU(m.DefaultPrecision(), 2)
	})
}

// TestModelOptNullKV: a null kv_cache_quant_algo states nothing, so the
// other file's FP8 stands.
func TestModelOptNullKV(t *testing.T) {
	cfg := strings.Replace(string(hfReadFixture(t, "aiconfigurator/meta-llama--Meta-Llama-3.1-8B_config.json")), `"use_cache": true,`,
		`"use_cache": true, "quantization_config": {"quant_method": "modelopt", "quant_algo": "FP8", "kv_cache_quant_algo": null},`, 1)
	m, _, err := ImportHFWith("config.json", strings.NewReader(cfg), HFOptions{ID: "x",
		QuantConfig: bytes.NewReader(hfReadFixture(t, "layout/nvidia--Llama-3.1-8B-Instruct-FP8_hf_quant_config.json"))})
	if err != nil {
		t.Fatal(err)
	}
	if q := m.Quantization; q == nil || q.KVCacheQuantAlgo != hardware.FP8 || q.Scheme != models.SchemeFP8PerTensor {
		t.Errorf("quantization %+v, want fp8 per tensor with an fp8 KV hint", q)
	}
}
