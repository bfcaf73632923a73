package measured

import (
	"os"
	"slices"
	"strings"
	"testing"
)

func importFixture(t *testing.T, path string) *Run {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	run, err := Import(strings.NewReader(string(b)), path, "")
	if err != nil {
		t.Fatal(err)
	}
	return run
}

func hasNote(run *Run, sub string) bool {
	return slices.ContainsFunc(run.Engine.Extra, func(n string) bool { return strings.Contains(n, sub) })
}

// TestAIPerf010 reads AIPerf 0.10's exports (schema 1.3): the CSV that
// ends with an empty GPU-telemetry section, and the JSON whose
// input_config names the model under models.items and the load per phase.
func TestAIPerf010(t *testing.T) {
	t.Run("csv", func(t *testing.T) {
		run := importFixture(t, "testdata/aiperf-0.10/profile_export_aiperf.csv")
		a := run.Aggregate
		if a.TTFTMS["p50"] != 45.90 || a.TTFTMS["p10"] != 34.02 || a.E2EMS["p99"] != 1561.09 || a.TPOTMS["mean"] != 10.08 || a.ITLMS["p90"] != 11.41 {
			t.Errorf("latencies %v %v %v %v", a.TTFTMS, a.E2EMS, a.TPOTMS, a.ITLMS)
		}
		if a.Completed != 200 || a.RequestsPerS != 12.01 || a.OutputTokensPerS != 1536.72 || a.MeanInputTokens != 1024 || a.MeanOutputTokens != 128 {
			t.Errorf("aggregate %+v", a)
		}
		if !hasNote(run, "GPU-telemetry section is empty") {
			t.Errorf("notes %q", run.Engine.Extra)
		}
		for _, k := range []string{"row Time to Second Token (ms)", "row Benchmark Duration (sec)", "row Output Token Throughput Per User (tokens/sec/user)"} {
			if !slices.Contains(run.Ignored, k) {
				t.Errorf("ignored %q lacks %q", run.Ignored, k)
			}
		}
	})
	t.Run("csv with telemetry rows", func(t *testing.T) {
		b, _ := os.ReadFile("testdata/aiperf-0.10/profile_export_aiperf.csv")
		data := string(b) + "http://localhost:9401/metrics,0,NVIDIA H100 80GB HBM3,GPU-5e1c,GPU Power Usage (W),402.1,120.3,699.0,130,150,170,300,410,520,610,650,690,80.2\n"
		run, err := Import(strings.NewReader(data), "profile_export_aiperf.csv", "")
		if err != nil {
			t.Fatal(err)
		}
		if run.GPU != "NVIDIA H100 80GB HBM3" || !strings.Contains(run.GPUNote, "GPU-telemetry") || !hasNote(run, "GPU telemetry: 1 rows") {
			t.Errorf("gpu %q (%s), notes %q", run.GPU, run.GPUNote, run.Engine.Extra)
		}
	})
	t.Run("csv with an unknown table", func(t *testing.T) {
		b, _ := os.ReadFile("testdata/aiperf-0.10/profile_export_aiperf.csv")
		data := string(b) + "\nServer,Scrape,Name,Kind\nvllm,1,kv_usage,gauge\n"
		run, err := Import(strings.NewReader(data), "profile_export_aiperf.csv", "")
		if err != nil {
			t.Fatal(err)
		}
		if !hasNote(run, "is not read: header Server,Scrape,Name,Kind (1 rows)") || !slices.Contains(run.Ignored, "table Server,Scrape,Name,Kind (1 rows)") {
			t.Errorf("notes %q, ignored %q", run.Engine.Extra, run.Ignored)
		}
	})
	t.Run("json", func(t *testing.T) {
		run := importFixture(t, "testdata/aiperf-0.10/profile_export_aiperf.json")
		a := run.Aggregate
		if run.Model != "Qwen/Qwen3-0.6B" || a.Concurrency != 16 || a.RateRPS != 0 || run.Warmup != 32 {
			t.Errorf("model %q, concurrency %d, rate %v, warm-up %d", run.Model, a.Concurrency, a.RateRPS, run.Warmup)
		}
		if a.TTFTMS["p50"] != 45.90 || a.E2EMS["p99"] != 1561.09 || a.Completed != 200 || a.MeanInputTokens != 1024 {
			t.Errorf("aggregate %+v", a)
		}
		if !hasNote(run, "aiperf_version 0.10.0, schema_version 1.3") || !hasNote(run, "input_config.phases[1] (profiling)") {
			t.Errorf("notes %q", run.Engine.Extra)
		}
		for _, k := range []string{"time_to_second_token", "benchmark_duration", "output_token_throughput_per_user", "input_config.input", "input_config.cli_command", "benchmark_id", "error_summary"} {
			if !slices.Contains(run.Ignored, k) {
				t.Errorf("ignored %q lacks %q", run.Ignored, k)
			}
		}
	})
	t.Run("json time metric in a unit that is not a time", func(t *testing.T) {
		data := `{"aiperf_version": "0.10.0", "time_to_first_token": {"unit": "tokens", "avg": 3}, "request_latency": {"unit": "ms", "avg": 900}}`
		run, err := Import(strings.NewReader(data), "profile_export_aiperf.json", "")
		if err != nil {
			t.Fatal(err)
		}
		if run.Aggregate.TTFTMS != nil || !hasNote(run, `time_to_first_token: unit "tokens" is not a time`) {
			t.Errorf("ttft %v, notes %q", run.Aggregate.TTFTMS, run.Engine.Extra)
		}
	})
}
