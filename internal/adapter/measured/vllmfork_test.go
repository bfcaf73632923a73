package measured

import (
	"slices"
	"strings"
	"testing"
)

// TestVLLMForkSecondsKeys: a fork of benchmark_serving.py writes latency
// statistics in seconds under keys without _ms; they are read, in ms,
// with a note, never dropped.
func TestVLLMForkSecondsKeys(t *testing.T) {
	run := importFixture(t, "testdata/vllm-bench/benchmark_serving_random-seconds.json")
	a := run.Aggregate
	if !near(a.TTFTMS["p50"], 351.12, 1e-9) || !near(a.TTFTMS["p99"], 981.30, 1e-9) || !near(a.E2EMS["p50"], 9582.13, 1e-9) ||
		!near(a.TPOTMS["mean"], 9.01, 1e-9) || !near(a.ITLMS["p99"], 25.41, 1e-9) || a.Concurrency != 32 || a.Completed != 320 {
		t.Errorf("aggregate %+v", a)
	}
	if !hasNote(run, "keys without _ms (median_ttft, p99_e2el …): read as seconds") {
		t.Errorf("notes %q", run.Engine.Extra)
	}
	if !slices.Contains(run.Ignored, "total_token_throughput") || slices.Contains(run.Ignored, "median_ttft") {
		t.Errorf("ignored %q", run.Ignored)
	}

	t.Run("checked against the per-request ttfts", func(t *testing.T) {
		for _, c := range []struct {
			mean string
			want float64
			note string
		}{
			{"0.2", 200, "seconds, as the mean of the per-request ttfts shows"},
			{"200", 200, "milliseconds, as the mean of the per-request ttfts (seconds) shows"},
		} {
			data := `{"model_id": "m", "completed": 2, "mean_ttft": ` + c.mean + `, "ttfts": [0.1, 0.3], "input_lens": [10, 10], "output_lens": [4, 4], "itls": [[0.01, 0.01, 0.01], [0.01, 0.01, 0.01]]}`
			run, err := Import(strings.NewReader(data), "r.json", "")
			if err != nil {
				t.Fatal(err)
			}
			if got := run.Aggregate.TTFTMS["mean"]; !near(got, c.want, 1e-9) || !hasNote(run, c.note) {
				t.Errorf("mean_ttft %s: %v ms, notes %q", c.mean, got, run.Engine.Extra)
			}
		}
	})
	t.Run("an _ms key wins over its plain twin", func(t *testing.T) {
		run, err := Import(strings.NewReader(`{"model_id": "m", "completed": 2, "mean_ttft_ms": 50, "mean_ttft": 0.3}`), "r.json", "")
		if err != nil {
			t.Fatal(err)
		}
		if run.Aggregate.TTFTMS["mean"] != 50 || !hasNote(run, "mean_ttft also under _ms keys") {
			t.Errorf("ttft %v, notes %q", run.Aggregate.TTFTMS, run.Engine.Extra)
		}
	})
}

// TestVLLMMetadata: --metadata names the GPU and the deployment.
func TestVLLMMetadata(t *testing.T) {
	run := importFixture(t, "testdata/vllm-bench/serve-metadata.json")
	if run.GPU != "NVIDIA L40S" || run.GPUNote != "the result's --metadata gpu=4xNVIDIA_L40S" {
		t.Errorf("gpu %q (%s)", run.GPU, run.GPUNote)
	}
	if !hasNote(run, "--metadata: 4 GPUs in all, deployment=pd-disaggregated, decode_replicas=2") {
		t.Errorf("notes %q", run.Engine.Extra)
	}
	if !slices.Contains(run.Ignored, "run_by") || slices.Contains(run.Ignored, "gpu") || slices.Contains(run.Ignored, "decode_replicas") {
		t.Errorf("ignored %q", run.Ignored)
	}
	for _, c := range []struct{ in, gpu string }{{`"8xH200"`, "H200"}, {`"NVIDIA_H100_80GB_HBM3"`, "NVIDIA H100 80GB HBM3"}, {`"2 x B200"`, "B200"}} {
		run, err := Import(strings.NewReader(`{"model_id": "m", "completed": 1, "mean_ttft_ms": 5, "gpu": `+c.in+`}`), "r.json", "")
		if err != nil {
			t.Fatal(err)
		}
		if run.GPU != c.gpu {
			t.Errorf("gpu %s: %q", c.in, run.GPU)
		}
	}
	if _, err := Import(strings.NewReader(`{"model_id": "m", "completed": 1, "mean_ttft_ms": 5, "gpu": {"a": 1}}`), "r.json", ""); err == nil || !strings.Contains(err.Error(), "field gpu") {
		t.Errorf("an object as gpu: %v", err)
	}
}
