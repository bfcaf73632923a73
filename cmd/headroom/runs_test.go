package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/headroom-sim/headroom/internal/study/replay"
)

const (
	exampleLLMServingSim = "../../testdata/llmservingsim/RTX4090/Llama-3.1-8B"
	exampleInferencePerf = "../../testdata/inference-perf/vllm+v0_engine/results"
	sglangAppended       = "../../internal/adapter/measured/testdata/sglang-bench/datacrunch-llama_3_3_70b_online_output.jsonl"
)

// inferencePerfFlags repeat what the inference-perf example's
// manifests.yaml says (flags override the run's own).
var inferencePerfFlags = []string{"--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--max-num-seqs", "128", "--max-model-len", "512",
	"--enable-chunked-prefill=false", "--enable-prefix-caching=false"}

func TestInspect(t *testing.T) {
	for _, c := range []struct{ name, path string }{
		{"inspect-inference-perf.json", exampleInferencePerf},
		{"inspect-llmservingsim-repo.json", exampleLLMServingSim},
		{"inspect-sglang-appended.json", sglangAppended},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, out, stderr := runCLI(t, "inspect", c.path, "--output", "json")
			if code != 0 {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			golden(t, c.name, out)
		})
	}
	code, out, _ := runCLI(t, "inspect", exampleInferencePerf)
	for _, want := range []string{"inference-perf-report", "manifests.yaml's node selector cloud.google.com/gke-accelerator: nvidia-h100-80gb", "stage 3 sent: 7113 requests at 118.56 req/s over 89.7 s (79.29 req/s achieved; sent 12970 ms late on average, 29807 ms at most)", "236.12 req/s", "summary", "Not read", "scheduler v0"} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	var in replay.Inspection
	_, out, _ = runCLI(t, "inspect", exampleLLMServingSim, "--output", "json")
	if err := json.Unmarshal([]byte(out), &in); err != nil || in.CatalogModel != "llama-3.1-8b" || in.CatalogGPU != "rtx-4090" || in.Requests.Completed != 300 || in.TTFTMS["p99"] <= 0 || in.Basis != "requests" {
		t.Errorf("%+v, %v", in, err)
	}
}

func TestValidateExamples(t *testing.T) {
	code, out, stderr := runCLI(t, "validate", "--run", exampleLLMServingSim)
	if code != 0 || !strings.Contains(out, "RTX4090/Llama-3.1-8B (llama-3.1-8b on rtx-4090, vLLM 0.19.0, 300 requests completed; KV blocks logged 2588") {
		t.Fatalf("exit %d: %s%s", code, out, stderr)
	}
	// The same run with its GPU named on the command line.
	if code, out, _ = runCLI(t, "validate", "--run", exampleLLMServingSim+"/vllm", "--gpu", "rtx4090"); code != 0 || !strings.Contains(out, "on rtx-4090") {
		t.Errorf("--gpu: exit %d: %s", code, out)
	}
	args := append([]string{"validate", "--run", exampleInferencePerf, "--output", "json"}, inferencePerfFlags...)
	code, out, stderr = runCLI(t, args...)
	if code != 0 {
		t.Fatalf("inference-perf: exit %d: %s", code, stderr)
	}
	var comps []struct {
		Run     string
		Stage   *int
		Basis   string
		Metrics []struct{ Name string }
	}
	if err := json.Unmarshal([]byte(out), &comps); err != nil || len(comps) != 7 {
		t.Fatalf("%d comparisons, %v", len(comps), err)
	}
	for i, c := range comps {
		if c.Stage == nil || *c.Stage != i || c.Basis != "aggregate" || len(c.Metrics) != 10 || !strings.Contains(c.Run, "(constant)") {
			t.Errorf("comparison %d: %+v", i, c)
		}
	}
	// The run folder as the demos publish it needs no flag: manifests.yaml
	// names the model, the GPU and the server's settings.
	code, out, stderr = runCLI(t, "validate", "--run", "../../testdata/inference-perf/vllm+v0_engine")
	if code != 0 || !strings.Contains(out, "vllm+v0_engine stage 3 (constant) (llama-3.1-8b on h100-sxm, vLLM 0.9.0") ||
		!strings.Contains(out, "manifests.yaml's node selector cloud.google.com/gke-accelerator: nvidia-h100-80gb") {
		t.Errorf("run folder: exit %d: %s / %s", code, out, stderr)
	}
	// --runs-from finds both example runs.
	code, out, stderr = runCLI(t, "validate", "--runs-from", "../../testdata")
	if code != 0 || !strings.Contains(out, "vllm+v0_engine stage 0") || !strings.Contains(out, "RTX4090/Llama-3.1-8B") {
		t.Errorf("--runs-from: exit %d: %s / %s", code, out, stderr)
	}
}

// TestCalibrateOnSummaries fits files that hold only the tools' summaries
// of several benchmarks.
func TestCalibrateOnSummaries(t *testing.T) {
	args := append([]string{"calibrate", "--trace", exampleInferencePerf, "--max-evaluations", "4"}, inferencePerfFlags...)
	code, out, stderr := runCLI(t, args...)
	if code != 0 || !strings.Contains(out, "Fitted to      the tool's summaries of 7 benchmarks") || !strings.Contains(out, "   0  ttft_ms") {
		t.Fatalf("exit %d: %s%s", code, out, stderr)
	}
	code, out, stderr = runCLI(t, "calibrate", "--trace", sglangAppended, "--model", "Llama-3.3-70B-Instruct", "--gpu", "h200", "--tp", "4",
		"--stage", "5", "--max-evaluations", "3", "--output", "json")
	if code != 0 {
		t.Fatalf("sglang: exit %d: %s", code, stderr)
	}
	var rep calibrationReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	f := rep.File
	if f.Model != "llama-3.1-70b" || f.TP != 4 || f.Source.Requests != 1200 || f.Fit.After.Basis != "aggregate" || !strings.Contains(f.Fit.After.Run, "stage 5 (poisson)") {
		t.Errorf("calibration %+v", f)
	}
}
