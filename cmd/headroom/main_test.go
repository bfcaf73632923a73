package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	goldenfile "github.com/headroom-sim/headroom/internal/testkit/golden"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite golden files")

// runCLI runs the command line in-process.
func runCLI(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	getenv := func(string) string { return "" }
	code = run(context.Background(), args, getenv, strings.NewReader(""), &out, &errb)
	return code, out.String(), errb.String()
}

func golden(t *testing.T, name, got string) {
	t.Helper()
	goldenfile.Check(t, filepath.Join("testdata", name), []byte(got), *update)
}

func TestExitCodes(t *testing.T) {
	for _, c := range []struct {
		name     string
		args     []string
		code     int
		inStderr string
	}{
		{"help", []string{"help"}, 0, ""},
		{"unknown command", []string{"frobnicate"}, 2, `unknown command "frobnicate"`},
		{"unknown flag", []string{"capacity", "--nope"}, 2, "unknown flag --nope"},
		{"bad int", []string{"capacity", "--tp", "x"}, 2, `--tp: invalid value "x"`},
		{"unknown model", []string{"capacity", "--model", "llama-9"}, 2, "--model: unknown model"},
		{"unknown gpu", []string{"capacity", "--gpu", "z100"}, 2, "--gpu: unknown GPU"},
		{"bad utilization", []string{"capacity", "--gpu-memory-utilization", "1.5"}, 2, "--gpu-memory-utilization: 1.5 is not in (0, 1]"},
		{"tp not dividing heads", []string{"capacity", "--tp", "3"}, 2, "--tp: 3 does not divide"},
		{"prompt beyond max len", []string{"capacity", "--max-model-len", "1000", "--prompt-tokens", "900", "--output-tokens", "200"}, 2, "--output-tokens: prompt + output = 1100 tokens exceeds max_model_len 1000"},
		{"bad kv dtype", []string{"capacity", "--kv-cache-dtype", "int4"}, 2, "--kv-cache-dtype"},
		{"does not fit", []string{"capacity", "--model", "llama-3.1-70b", "--gpu", "h100-sxm"}, 3, "smallest tp that fits: 4"},
		{"fits", []string{"capacity", "--model", "llama-3.1-70b", "--gpu", "h100-sxm", "--tp", "4"}, 0, ""},
		{"bad output format", []string{"capacity", "--output", "xml"}, 2, `--output: "xml" is not table or json`},
		{"scenario missing", []string{"simulate", "--scenario", "nope.yaml"}, 2, "--scenario"},
		{"scenario bad field", []string{"simulate", "--set", "engine.max_num_seqz=3"}, 2, "field engine.max_num_seqz: unknown key"},
		{"simulate infeasible", []string{"simulate", "--model", "llama-3.1-405b", "--requests", "10"}, 3, "does not fit"},
		{"catalog show unknown", []string{"catalog", "show", "gpus", "h900"}, 2, "unknown GPU"},
		{"sweep without axis", []string{"sweep", "--requests", "50"}, 2, "--axis: give at least one"},
		{"sweep bad output", []string{"sweep", "--output", "xml", "--axis", "tp=1"}, 2, `--output: "xml" is not table, csv, json`},
		{"sweep unknown axis", []string{"sweep", "--axis", "engine.nope=1", "--requests", "50"}, 2, "axes[0].path: the scenario has no field engine.nope"},
		{"plan without sla", []string{"plan", "--requests", "50"}, 2, "sla: the scenario needs an sla"},
		{"plan unknown gpu", []string{"plan", "--set", "sla.ttft_ms.p99=1000", "--gpus", "z9"}, 2, "--gpus: unknown GPU"},
		{"maxload without sla", []string{"maxload"}, 2, "sla: the scenario needs an sla"},
		{"curve needs loads", []string{"curve"}, 2, "--rates or --concurrencies"},
		{"curve bad rate", []string{"curve", "--rates", "1,x"}, 2, `--rates: "x" is not a positive number`},
		{"compare without b", []string{"compare"}, 2, "--b or --b-set"},
		{"calibrate without trace", []string{"calibrate"}, 2, "--trace: a measured run is required"},
		{"validate at an acceptance above 1", []string{"validate", "--run", "x", "--acceptance-rate", "2"}, 2, "--acceptance-rate: 2 is not in [0, 1]"},
		{"calibrate a profile from counters", []string{"calibrate", "--trace", "x", "--spec-decode-metrics", "m.txt"}, 2, "--spec-decode-metrics: only read with --fit acceptance"},
		{"counters before without after", []string{"calibrate", "--trace", "x", "--fit", "acceptance", "--spec-decode-metrics-before", "m.txt"}, 2, "--spec-decode-metrics-before: give --spec-decode-metrics"},
		{"calibrate an unknown fit", []string{"calibrate", "--trace", "x", "--fit", "drafts"}, 2, `--fit: "drafts" is not profile or acceptance`},
		{"calibrate a profile against a baseline", []string{"calibrate", "--trace", "x", "--baseline", "y"}, 2, "--baseline: only read with --fit acceptance"},
		{"calibrate acceptance of a run without speculation", []string{"calibrate", "--fit", "acceptance", "--trace", "../../internal/adapter/measured/testdata/vllm-bench/serve-detailed.json", "--gpu", "h100-sxm"}, 2,
			"records no speculative decoding (the server's --speculative-config) to fit the acceptance of"},
		{"validate without runs", []string{"validate"}, 2, "give --run DIR or --runs-from DIR"},
		{"tp 0", []string{"simulate", "--tp", "0"}, 2, "--tp: must be >= 1, got 0"},
		{"replicas 0", []string{"plan", "--replicas", "0"}, 2, "--replicas: must be >= 1, got 0"},
		{"rate 0", []string{"sweep", "--rate-rps", "0", "--axis", "tp=1"}, 2, "--rate-rps: must be a finite number > 0, got 0"},
		{"requests 0", []string{"simulate", "--requests", "0"}, 2, "--requests: must be >= 1, got 0"},
		{"input tokens 0", []string{"simulate", "--input-tokens", "0"}, 2, "--input-tokens: must be >= 1, got 0"},
		{"output tokens negative", []string{"maxload", "--output-tokens", "-5"}, 2, "--output-tokens: must be >= 1, got -5"},
		{"concurrency 0", []string{"curve", "--concurrency", "0", "--rates", "1"}, 2, "--concurrency: must be >= 1, got 0"},
		{"rate and concurrency", []string{"simulate", "--rate-rps", "2", "--concurrency", "4"}, 2, "give --rate-rps (open-loop arrivals) or --concurrency"},
		{"input tokens of a trace", []string{"simulate", "--scenario", "../../examples/trace-azure.yaml", "--input-tokens", "100"}, 2, "--input-tokens: the scenario replays a trace"},
		{"rate of a staircase", []string{"simulate", "--scenario", "../../examples/staircase.yaml", "--rate-rps", "3"}, 2, "--rate-rps: the scenario's load is a staircase"},
		{"input tokens of a bucket mixture", []string{"simulate", "--scenario", "../../examples/empirical-sharegpt.yaml", "--input-tokens", "100"}, 2, "workload.input_tokens has type empirical"},
		{"flag and set on one field", []string{"simulate", "--input-tokens", "100", "--set", "workload.input_tokens.value=5"}, 2, "--input-tokens: --set workload.input_tokens.value also sets it"},
		{"inspect without a file", []string{"inspect"}, 2, "give one result file or run folder"},
		{"inspect unknown file", []string{"inspect", "nope.json"}, 2, "nope.json: "},
		{"validate needs the model", []string{"validate", "--run", "../../testdata/inference-perf/vllm+v0_engine/results/stage_3_lifecycle_metrics.json", "--gpu", "h100-sxm"}, 2, "the run does not name its model: give --model"},
		{"validate needs the gpu", []string{"validate", "--run", "../../testdata/inference-perf/vllm+v0_engine/results/stage_3_lifecycle_metrics.json", "--model", "llama-3.1-8b"}, 2, "the run does not name its GPU: give --gpu"},
		{"validate unknown gpu", []string{"validate", "--run", "../../testdata/llmservingsim/RTX4090/Llama-3.1-8B", "--gpu", "z100"}, 2, `GPU "z100" (given with --gpu; the run records "NVIDIA GeForce RTX 4090") is not in the catalog`},
		{"validate unknown recorded model", []string{"validate", "--run", "../../internal/adapter/measured/testdata/aiperf-0.10/profile_export_aiperf.json", "--gpu", "h100-sxm"}, 2, `model "Qwen/Qwen3-0.6B" (as the run records it) names no catalog model`},
		{"calibrate unknown model from the flag", []string{"calibrate", "--trace", "../../internal/adapter/measured/testdata/vllm-bench/serve-detailed.json", "--model", "llama-3.2-3b", "--gpu", "h100-sxm"}, 2, `model "llama-3.2-3b" (given with --model; the run records "meta-llama/Llama-3.1-8B-Instruct") names no catalog model`},
		{"calibrate split of summaries", []string{"calibrate", "--trace", "../../internal/adapter/measured/testdata/sglang-bench/datacrunch-llama_3_3_70b_online_output.jsonl", "--model", "llama-3.1-70b", "--gpu", "h200", "--split", "2"}, 2, "--split: "},
		{"calibrate all failed", []string{"calibrate", "--trace", "../../internal/adapter/measured/testdata/vllm-bench/all-failed.json", "--gpu", "h100-sxm"}, 2, "too few completed requests to fit: 0 completed"},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, _, stderr := runCLI(t, c.args...)
			if code != c.code {
				t.Errorf("exit code %d, want %d (stderr %q)", code, c.code, stderr)
			}
			if c.inStderr != "" && !strings.Contains(stderr, c.inStderr) {
				t.Errorf("stderr %q does not contain %q", stderr, c.inStderr)
			}
			if c.code == 2 && strings.Count(strings.TrimSpace(stderr), "\n") > 0 {
				t.Errorf("usage error is more than one line: %q", stderr)
			}
		})
	}
}

// TestCapacityJSONGolden pins the public JSON contract of `headroom capacity`.
func TestCapacityJSONGolden(t *testing.T) {
	for _, c := range []struct {
		golden string
		args   []string
	}{
		{"capacity-llama8b-h100.json", []string{"capacity", "--output", "json", "--prompt-tokens", "1024", "--output-tokens", "256"}},
		{"capacity-llama70b-h100-tp4.json", []string{"capacity", "--output", "json", "--model", "meta-llama/Llama-3.1-70B-Instruct", "--tp", "4", "--max-model-len", "32768"}},
		{"capacity-deepseek-v3-h200-tp8.json", []string{"capacity", "--output", "json", "--model", "deepseek-v3", "--gpu", "h200", "--tp", "8", "--max-model-len", "32768"}},
	} {
		t.Run(c.golden, func(t *testing.T) {
			code, out, stderr := runCLI(t, c.args...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			var v map[string]any
			if err := json.Unmarshal([]byte(out), &v); err != nil {
				t.Fatal(err)
			}
			for _, k := range []string{"fits", "min_tp_that_fits", "max_concurrency", "kv_cache", "memory"} {
				if _, ok := v[k]; !ok {
					t.Errorf("missing key %q", k)
				}
			}
			kv := v["kv_cache"].(map[string]any)
			for _, k := range []string{"num_gpu_blocks", "num_tokens"} {
				if _, ok := kv[k]; !ok {
					t.Errorf("missing key kv_cache.%s", k)
				}
			}
			mem := v["memory"].(map[string]any)
			for _, k := range []string{"total_gib_per_gpu", "weights_gib_per_gpu", "activation_gib_per_gpu", "non_torch_gib_per_gpu", "kv_cache_gib_per_gpu"} {
				if _, ok := mem[k]; !ok {
					t.Errorf("missing key memory.%s", k)
				}
			}
			golden(t, c.golden, out)
		})
	}
}

// TestExamplesRun runs every scenario in examples/ (shortened) and checks
// each request is accounted for.
func TestExamplesRun(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "..", "examples", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no examples: %v", err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			code, out, stderr := runCLI(t, "simulate", "--scenario", f, "--requests", "120", "--output", "json")
			if code != 0 {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			var rep struct {
				Requests struct{ Total, Completed, Rejected int }
			}
			if err := json.Unmarshal([]byte(out), &rep); err != nil {
				t.Fatal(err)
			}
			if rep.Requests.Total == 0 || rep.Requests.Completed+rep.Requests.Rejected != rep.Requests.Total {
				t.Errorf("requests %+v", rep.Requests)
			}
		})
	}
}

func TestSimulateDefaultTable(t *testing.T) {
	code, out, stderr := runCLI(t, "simulate", "--requests", "200")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range []string{"TTFT", "TPOT", "ITL", "E2E", "Throughput", "KV cache"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
}

// TestPlanningCommandsJSON runs each planning command on a small scenario
// and checks the JSON result's shape.
func TestPlanningCommandsJSON(t *testing.T) {
	sla := []string{"--set", "sla.ttft_ms.p99=1000", "--set", "sla.tpot_ms.p99=60"}
	for _, c := range []struct {
		name string
		args []string
		keys []string
	}{
		{"maxload", append([]string{"maxload", "--output", "json", "--requests", "200", "--max-probes", "8"}, sla...), []string{"dimension", "max_load", "limiting_metric", "probes"}},
		{"sweep", []string{"sweep", "--output", "json", "--requests", "100", "--axis", "engine.max_num_seqs=8,64"}, []string{"axes", "columns", "points"}},
		{"plan", append([]string{"plan", "--output", "json", "--requests", "200", "--gpus", "h100-sxm,l4", "--tps", "1", "--max-replicas", "2", "--no-headroom"}, sla...), []string{"candidates", "target_load", "simulations"}},
		{"curve", []string{"curve", "--output", "json", "--rates", "1,4", "--step-duration-s", "10"}, []string{"points", "knee"}},
		{"compare", []string{"compare", "--output", "json", "--requests", "100", "--b-set", "engine.max_num_seqs=8"}, []string{"differences", "metrics", "report_a", "report_b"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, out, stderr := runCLI(t, c.args...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			var v map[string]any
			if err := json.Unmarshal([]byte(out), &v); err != nil {
				t.Fatalf("%v:\n%s", err, out)
			}
			for _, k := range c.keys {
				if _, ok := v[k]; !ok {
					t.Errorf("result lacks %q", k)
				}
			}
		})
	}
}
