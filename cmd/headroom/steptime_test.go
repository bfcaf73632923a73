package main

import (
	"bytes"
	"encoding/json"
	"io/fs"
	"math"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"

	"github.com/headroom-sim/headroom/catalogs"
	"github.com/headroom-sim/headroom/internal/study/stepreport"
)

// TestStepTimeGolden pins the explanation of a dense model on both
// backends, a MoE model with its experts spread over data-parallel ranks,
// and a sliding-window MoE model, in both output formats.
func TestStepTimeGolden(t *testing.T) {
	for _, c := range []struct {
		golden string
		args   []string
	}{
		{"steptime-llama8b-h100-table.txt", []string{"--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--batch-decode", "64", "--kv-len", "2048", "--steptime", "table"}},
		{"steptime-llama8b-h100-formula.txt", []string{"--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--batch-decode", "64", "--kv-len", "2048", "--steptime", "formula"}},
		{"steptime-qwen3-30b-a3b-h200-ep8.json", []string{"--model", "qwen3-30b-a3b", "--gpu", "h200", "--dp", "8", "--expert-parallel",
			"--batch-decode", "64", "--kv-len", "2048", "--steptime", "table", "--output", "json"}},
		{"steptime-minimax-m2.5-b200-tp4-ep.txt", []string{"--model", "minimax-m2.5", "--gpu", "b200", "--tp", "4", "--moe-ep", "4",
			"--batch-decode", "32", "--kv-len", "8192", "--prefill-tokens", "256", "--prefill-context", "1024", "--steptime", "table"}},
		{"steptime-gpt-oss-120b-h100-tp2.txt", []string{"--model", "gpt-oss-120b", "--gpu", "h100-sxm", "--tp", "2",
			"--batch-decode", "32", "--kv-len", "4096", "--prefill-tokens", "1024", "--steptime", "table"}},
		// The shared vllm+eagle run's server: EAGLE-3 drafting 4 tokens,
		// one request decoding (its 1 request/s stage).
		{"steptime-llama8b-h100-eagle3.txt", specArgs("--batch-decode", "1", "--kv-len", "230")},
	} {
		t.Run(c.golden, func(t *testing.T) {
			code, out, errb := runCLI(t, append([]string{"steptime"}, c.args...)...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errb)
			}
			golden(t, c.golden, out)
		})
	}
}

// specArgs are Llama-3.1-8B on an H100 with EAGLE-3 drafting 4 tokens, as
// the shared vllm+eagle run served it (max_num_seqs 128, vLLM 0.11:
// async scheduling off), with more flags.
func specArgs(more ...string) []string {
	return append([]string{"--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--max-num-seqs", "128", "--async-scheduling=false",
		"--set", "engine.speculative.method=eagle3", "--set", "engine.speculative.num_speculative_tokens=4", "--steptime", "table"}, more...)
}

func stepJSON(t *testing.T, args ...string) *stepreport.Report {
	t.Helper()
	code, out, errb := runCLI(t, append(append([]string{"steptime"}, args...), "--output", "json")...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errb)
	}
	var r stepreport.Report
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	return &r
}

// TestStepTimeSums: the kernels' times add up to gpu_ms, and gpu_ms plus
// the CPU time async scheduling does not hide is step_ms.
func TestStepTimeSums(t *testing.T) {
	for _, args := range [][]string{
		{"--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--batch-decode", "64", "--kv-len", "2048", "--steptime", "table"},
		{"--model", "qwen3-30b-a3b", "--gpu", "h200", "--tp", "2", "--batch-decode", "100", "--kv-len", "3000", "--prefill-tokens", "2048", "--prefill-chunks", "2"},
		{"--model", "gpt-oss-120b", "--gpu", "h200", "--tp", "4", "--batch-decode", "8", "--kv-len", "70000", "--async-scheduling=false"},
		specArgs("--batch-decode", "64", "--kv-len", "230", "--prefill-tokens", "90", "--prefill-context", "112"),
	} {
		r := stepJSON(t, args...)
		added := 0.0
		if sp := r.Speculative; sp != nil {
			added = sp.AddedUS / 1e3
			if math.Abs(sp.RejectionSamplerUS+sp.ProposerUS-sp.AddedUS) > 0.002 {
				t.Errorf("%v: rejection sampler %.3f + proposer %.3f µs ≠ added %.3f", args, sp.RejectionSamplerUS, sp.ProposerUS, sp.AddedUS)
			}
			if want := sp.ProposerHostSetupUS + math.Max(sp.ProposerHostPassesUS, sp.DraftGPUUS); math.Abs(sp.ProposerUS-want) > 0.002 {
				t.Errorf("%v: proposer %.3f µs, want set-up + max(host passes, GPU) = %.3f", args, sp.ProposerUS, want)
			}
		}
		var bounds float64
		for _, b := range r.Bounds {
			bounds += b.TimeUS
		}
		if math.Abs(bounds-r.StepMS*1e3) > 0.01 {
			t.Errorf("%v: bounds sum to %.3f µs, step_ms %.6f", args, bounds, r.StepMS)
		}
		var sum float64
		for _, k := range r.Kernels {
			sum += k.TimeUS
		}
		if math.Abs(sum-r.GPUMS*1e3) > 0.001*float64(len(r.Kernels)+1) {
			t.Errorf("%v: kernels sum to %.3f µs, gpu_ms %.6f", args, sum, r.GPUMS)
		}
		if math.Abs(r.GPUMS+r.CPUMS-r.CPUHiddenMS+added-r.StepMS) > 1e-5 {
			t.Errorf("%v: gpu %.6f + cpu %.6f − hidden %.6f + speculative %.6f ≠ step %.6f", args, r.GPUMS, r.CPUMS, r.CPUHiddenMS, added, r.StepMS)
		}
	}
}

// gemmTableUS reads one GEMM latency straight from the built-in h100_sxm
// table (ms per call in the file), in µs.
func gemmTableUS(t *testing.T, m, n, k int64) float64 {
	t.Helper()
	b, err := fs.ReadFile(catalogs.Kernels(), "h100_sxm/gemm/vllm/0.19.0/gemm_perf.parquet")
	if err != nil {
		t.Fatal(err)
	}
	type row struct {
		DType   string  `parquet:"gemm_dtype"`
		M       int64   `parquet:"m"`
		N       int64   `parquet:"n"`
		K       int64   `parquet:"k"`
		Latency float64 `parquet:"latency"`
	}
	rows, err := parquet.Read[row](bytes.NewReader(b), int64(len(b)))
	if err != nil {
		t.Fatal(err)
	}
	var found []float64
	for _, r := range rows {
		if r.DType == "bfloat16" && r.M == m && r.N == n && r.K == k {
			found = append(found, r.Latency*1e3)
		}
	}
	if len(found) != 1 {
		t.Fatalf("the table has %d bf16 rows at m=%d n=%d k=%d, want one", len(found), m, n, k)
	}
	return found[0]
}

// TestStepTimeMeasured: on a shape the table holds exactly, measured_us is
// the table's value and the prediction is it; the formula backend never
// reports a measured value.
func TestStepTimeMeasured(t *testing.T) {
	args := []string{"--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--batch-decode", "64", "--kv-len", "2048"}
	r := stepJSON(t, append(args, "--steptime", "table")...)
	// Llama-3.1-8B's fused qkv projection: 4096 → (32 + 2 × 8) × 128.
	want := gemmTableUS(t, 64, 6144, 4096)
	var qkv *stepreport.Kernel
	for i, k := range r.Kernels {
		if k.Name == "qkv_proj" {
			qkv = &r.Kernels[i]
		}
	}
	if qkv == nil || qkv.MeasuredUS == nil {
		t.Fatalf("qkv_proj has no measured value: %+v", qkv)
	}
	if math.Abs(*qkv.MeasuredUS-want) > 0.0005 || math.Abs(qkv.PerCallUS-want) > 0.0005 {
		t.Errorf("qkv_proj: measured %.3f µs, predicted %.3f µs a call; the table says %.3f", *qkv.MeasuredUS, qkv.PerCallUS, want)
	}
	if math.Abs(qkv.TimeUS-32*want) > 0.01 || qkv.Calls != 32 {
		t.Errorf("qkv_proj: %d calls, %.3f µs; want 32 layers × %.3f", qkv.Calls, qkv.TimeUS, want)
	}
	f := stepJSON(t, append(args, "--steptime", "formula")...)
	for _, k := range f.Kernels {
		if k.MeasuredUS != nil {
			t.Errorf("formula backend reports a measured value for %s", k.Name)
		}
	}
	if f.KernelDB != nil || f.Backend != "formula" {
		t.Errorf("formula backend: kernel_db %+v, backend %s", f.KernelDB, f.Backend)
	}
	// The table output shows the measured value beside the prediction.
	_, out, _ := runCLI(t, append([]string{"steptime"}, append(args, "--steptime", "table")...)...)
	if !strings.Contains(out, "(measured shape)") || !strings.Contains(out, "Measured µs/call") {
		t.Errorf("the table lacks the measured column:\n%s", out)
	}
}

// TestStepTimeExitCodes: bad input exits 2 naming the flag; a model that
// does not fit exits 3.
func TestStepTimeExitCodes(t *testing.T) {
	base := []string{"steptime", "--batch-decode", "8", "--kv-len", "1024"}
	for _, c := range []struct {
		name     string
		args     []string
		code     int
		inStderr string
	}{
		{"empty batch", []string{"steptime"}, 2, "--batch-decode: the batch is empty"},
		{"decode without kv-len", []string{"steptime", "--batch-decode", "8"}, 2, "--kv-len: is required"},
		{"negative prefill", []string{"steptime", "--prefill-tokens", "-3"}, 2, "--prefill-tokens: -3 is not in"},
		{"chunks 0", []string{"steptime", "--prefill-tokens", "30", "--prefill-chunks", "0"}, 2, "--prefill-chunks: must be >= 1, got 0"},
		{"context alone", append(base, "--prefill-context", "10"), 2, "--prefill-context: describes prefill chunks"},
		{"kv-len beyond max-model-len", append(base, "--max-model-len", "512"), 2, "--kv-len: 1024 exceeds max_model_len 512"},
		{"beyond max-num-seqs", append(base, "--max-num-seqs", "4"), 2, "--batch-decode: 8 decoding sequences + 0 prefill chunks exceed max_num_seqs 4"},
		{"beyond the token budget", append(base, "--prefill-tokens", "8190"), 2, "--prefill-tokens: the step's 8198 tokens"},
		{"tp 0", append(base, "--tp", "0"), 2, "--tp: must be >= 1, got 0"},
		{"tp not dividing heads", append(base, "--tp", "3"), 2, "--tp: 3 does not divide"},
		{"unknown model", append(base, "--model", "llama-9"), 2, "--model: unknown model"},
		{"unknown gpu", append(base, "--gpu", "z100"), 2, "--gpu: unknown GPU"},
		{"bad backend", append(base, "--steptime", "magic"), 2, `--steptime: "magic" is not table or formula`},
		{"kernel-db with formula", append(base, "--steptime", "formula", "--kernel-db", "."), 2, "--kernel-db: is only read by the table backend"},
		{"kernel-db not a directory", append(base, "--kernel-db", "nope-dir"), 2, "--kernel-db: "},
		{"bad routing", append(base, "--moe-routing", "zipf"), 2, "--moe-routing: "},
		{"bad weights dtype", append(base, "--weights-dtype", "fp7"), 2, "--weights-dtype: "},
		{"missing calibration", append(base, "--calibration", "nope.json"), 2, "--calibration: "},
		{"split of a dense model", append(base, "--moe-ep", "2"), 2, "--moe-ep: llama-3.1-8b has no routed experts"},
		{"split not covering", []string{"steptime", "--model", "qwen3-30b-a3b", "--gpu", "h200", "--tp", "2", "--batch-decode", "1", "--kv-len", "9", "--moe-tp", "2", "--moe-ep", "2"}, 2, "--moe-ep: moe_tp 2 × moe_ep 2 must equal tp × dp = 2 GPUs"},
		{"expert parallel on a dense model", append(base, "--expert-parallel"), 2, "--expert-parallel: llama-3.1-8b has no routed experts"},
		{"bad output", append(base, "--output", "xml"), 2, `--output: "xml" is not table or json`},
		{"stray argument", append(base, "extra"), 2, `unexpected argument "extra"`},
		{"does not fit", append(base, "--model", "llama-3.1-70b"), 3, "does not fit"},
		{"ok", base, 0, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, _, errb := runCLI(t, c.args...)
			if code != c.code || !strings.Contains(errb, c.inStderr) {
				t.Errorf("exit %d, stderr %q; want %d and %q", code, errb, c.code, c.inStderr)
			}
		})
	}
}

// TestStepTimeScenario: a scenario file gives the configuration, the
// flags override it, and its workload is not read.
func TestStepTimeScenario(t *testing.T) {
	r := stepJSON(t, "--scenario", "../../examples/trace-azure.yaml", "--batch-decode", "16", "--kv-len", "600", "--set", "engine.max_num_seqs=32")
	if r.Engine.MaxNumSeqs != 32 || r.Batch.DecodeSeqs != 16 {
		t.Errorf("engine %+v, batch %+v", r.Engine, r.Batch)
	}
	if r.Engine.CUDAGraphMaxTokens != 64 {
		t.Errorf("cuda_graph_max_tokens %d, want min(2 × 32, 512, budget) = 64", r.Engine.CUDAGraphMaxTokens)
	}
}
