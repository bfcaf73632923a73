package measured

import (
	"encoding/json"
	"errors"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/fstest"
)

// TestRealFormatFiles pins what the real files of the formats the
// reference data's formats/ folder holds import as, figure by figure
// against the files' own text.
func TestRealFormatFiles(t *testing.T) {
	imp := importFixture
	t.Run("genai-perf csv with thousands separators", func(t *testing.T) {
		a := imp(t, "testdata/genai-perf-csv/profile_export_genai_perf.csv").Aggregate
		if a.TTFTMS["mean"] != 1146.31 || a.TTFTMS["max"] != 3485.23 || a.E2EMS["p50"] != 5690.23 || a.TPOTMS["p99"] != 35.23 {
			t.Errorf("ttft %v e2e %v tpot %v", a.TTFTMS, a.E2EMS, a.TPOTMS)
		}
		if a.MeanInputTokens != 3000.05 || a.Completed != 40 || a.RequestsPerS != 1.5 || a.OutputTokensPerS != 261.25 {
			t.Errorf("aggregate %+v", a)
		}
	})
	t.Run("vllm model as a cache path", func(t *testing.T) {
		run := imp(t, "testdata/vllm-bench/inferencex-gpt-oss-120b-concurrency-4.json")
		if run.Model != "openai/gpt-oss-120b" || !slices.ContainsFunc(run.Engine.Extra, func(s string) bool { return strings.Contains(s, "cache path") }) {
			t.Errorf("model %q, notes %q", run.Model, run.Engine.Extra)
		}
		if a := run.Aggregate; a.TTFTMS["p999"] != 1082.7990462793985 || a.Concurrency != 4 || a.RateRPS != 0 {
			t.Errorf("aggregate %+v", a)
		}
	})
	t.Run("vllm all failed", func(t *testing.T) {
		run := imp(t, "testdata/vllm-bench/all-failed.json")
		a := run.Aggregate
		if a == nil || a.Failed != 200 || a.Completed != 0 || a.TTFTMS != nil || a.TPOTMS != nil || a.ITLMS != nil || a.E2EMS != nil || a.RequestsPerS != 0 {
			t.Errorf("aggregate %+v", a)
		}
	})
	t.Run("vllm sweep summary", func(t *testing.T) {
		run := imp(t, "testdata/vllm-sweep/SERVE--max_num_seqs-32-BENCH--max_concurrency-8/summary.json")
		if len(run.Stages) != 2 || run.Engine.MaxNumSeqs != 32 || run.Stages[1].Aggregate.TTFTMS["mean"] != 37.64 || run.Stages[1].Label != "max_num_seqs=32 run 1" {
			t.Errorf("engine %+v stages %+v", run.Engine, run.Stages)
		}
		if run.OwnServer() {
			t.Errorf("repeated runs of one server carry their own server settings")
		}
		one := imp(t, "testdata/vllm-sweep/SERVE--max_num_seqs-32-BENCH--max_concurrency-8/run=0.json")
		if one.Engine.MaxNumSeqs != 32 || one.Aggregate.TTFTMS["mean"] != 38.21 {
			t.Errorf("run=0.json: engine %+v", one.Engine)
		}
	})
	t.Run("sglang appended runs", func(t *testing.T) {
		run := imp(t, "testdata/sglang-bench/datacrunch-llama_3_3_70b_online_output.jsonl")
		if len(run.Stages) != 7 || len(run.Requests) != 0 || run.Model != "" {
			t.Fatalf("%d stages, %d requests, model %q", len(run.Stages), len(run.Requests), run.Model)
		}
		st := run.Stages[4]
		if st.RateRPS != 16 || st.Aggregate.Completed != 3200 || st.Aggregate.TTFTMS["p50"] != 614.2499720444903 || st.Aggregate.MeanOutputTokens != 1642637.0/3200 {
			t.Errorf("stage 4 %+v %+v", st, st.Aggregate)
		}
	})
	t.Run("llmperf responses", func(t *testing.T) {
		run := imp(t, "testdata/llmperf/vllm-cur1-01-ai-Yi-1-5-34B-Chat_550_150_individual_responses.json")
		s := run.Summarize()
		if len(run.Requests) != 80 || s.Failed != 0 || run.Requests[0].InputTokens != 550 || run.Requests[0].OutputTokens != 160 {
			t.Fatalf("%d requests, %+v, first %+v", len(run.Requests), s, run.Requests[0])
		}
		// One client: back to back, in the file's order.
		q0, q1 := run.Requests[0], run.Requests[1]
		if q0.SendS != 0 || !near(q1.SendS, q0.E2ES, 1e-12) || !near(q0.TTFTS, 0.6055155840003863, 1e-12) {
			t.Errorf("first requests %+v %+v", q0, q1)
		}
	})
}

func TestClosedLoopSends(t *testing.T) {
	reqs := []Request{{E2ES: 4}, {E2ES: 1}, {E2ES: 2}, {E2ES: 1}, {E2ES: math.NaN()}, {E2ES: 1}}
	closedLoopSends(reqs, 2)
	// Lanes: 0→[0,4), 1→[0,1); next to lane 1 at 1 → [1,3); lane 1 at 3 →
	// [3,4); lane 0 at 4 (failed, no time); lane 0 at 4.
	want := []float64{0, 0, 1, 3, 4, 4}
	for i, q := range reqs {
		if q.SendS != want[i] {
			t.Errorf("request %d sent at %v, want %v", i, q.SendS, want[i])
		}
	}
}

func TestServeParams(t *testing.T) {
	// Two servers in one list: each stage keeps its own settings, and
	// Stage applies them.
	data := `[{"model_id": "m", "request_rate": 4, "completed": 30, "mean_ttft_ms": 20, "run_number": 0, "max_num_seqs": 32, "enable-prefix-caching": false, "tensor_parallel_size": 2},
	          {"model_id": "m", "request_rate": 4, "completed": 30, "mean_ttft_ms": 15, "run_number": 0, "max_num_seqs": 64, "no_enable_prefix_caching": true, "tensor_parallel_size": 2}]`
	run, err := Import(strings.NewReader(data), "summary.json", "")
	if err != nil {
		t.Fatal(err)
	}
	if run.Format != "vllm-bench" || !run.OwnServer() || run.Engine.MaxNumSeqs != 0 || run.TP != 0 {
		t.Fatalf("format %s, engine %+v, tp %d", run.Format, run.Engine, run.TP)
	}
	for i, want := range []int{32, 64} {
		st := run.Stage(i)
		if st.Engine.MaxNumSeqs != want || st.TP != 2 || st.Engine.EnablePrefixCaching == nil || *st.Engine.EnablePrefixCaching || st.Aggregate == nil {
			t.Errorf("stage %d: engine %+v tp %d", i, st.Engine, st.TP)
		}
	}
	for _, tc := range []struct{ data, want string }{
		{`{"model_id": "m", "mean_ttft_ms": 1, "max_num_seqs": 2.5}`, "field max_num_seqs: 2.5 is not a"},
		{`{"model_id": "m", "mean_ttft_ms": 1, "gpu_memory_utilization": 1.5}`, "field gpu_memory_utilization: 1.5 is not a fraction in (0, 1]"},
		{`{"model_id": "m", "mean_ttft_ms": 1, "enable_prefix_caching": "yes"}`, "field enable_prefix_caching: "},
		{`[]`, "empty list of runs"},
	} {
		if _, err := Import(strings.NewReader(tc.data), "r.json", "vllm-bench"); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.data, err, tc.want)
		}
	}
}

func TestModelCandidates(t *testing.T) {
	for _, tc := range []struct {
		id   string
		want []string
	}{
		{"", nil},
		{"llama-3.1-8b", []string{"llama-3.1-8b"}},
		{"meta-llama/Llama-3.1-8B-Instruct", []string{"meta-llama/Llama-3.1-8B-Instruct", "Llama-3.1-8B-Instruct"}},
		{"/models/meta-llama/Llama-3.1-8B-Instruct/", []string{"/models/meta-llama/Llama-3.1-8B-Instruct/", "meta-llama/Llama-3.1-8B-Instruct", "Llama-3.1-8B-Instruct"}},
		{"/models/models--openai--gpt-oss-120b/snapshots/b5c9/", []string{"/models/models--openai--gpt-oss-120b/snapshots/b5c9/", "openai/gpt-oss-120b", "gpt-oss-120b"}},
		{"meta-llama/Llama-2-7b-chat-hf", []string{"meta-llama/Llama-2-7b-chat-hf", "Llama-2-7b-chat-hf", "meta-llama/Llama-2-7b-chat", "Llama-2-7b-chat"}},
	} {
		got := ModelCandidates(tc.id)
		// Trailing slashes are trimmed from the candidates after the first.
		for i := range got {
			got[i] = strings.TrimSuffix(got[i], "/")
		}
		for i := range tc.want {
			tc.want[i] = strings.TrimSuffix(strings.TrimPrefix(tc.want[i], "/"), "/")
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("ModelCandidates(%q) = %q, want %q", tc.id, got, tc.want)
		}
	}
	for id, want := range map[string]string{
		"/models/models--openai--gpt-oss-120b/snapshots/b5c939de8f754692c1647ca79fbf85e8c1e70f8a/": "openai/gpt-oss-120b",
		"models--Qwen--Qwen3-8B":  "Qwen/Qwen3-8B",
		`C:\hf\models--org--a--b`: "org/a--b",
		"/models/llama":           "",
		"models--x":               "",
	} {
		if got := hfCacheID(id); got != want {
			t.Errorf("hfCacheID(%q) = %q, want %q", id, got, want)
		}
	}
}

// TestInferencePerfReports reads a stepped inference-perf run from its
// default output: one stage per stage_N report, the load config beside.
func TestInferencePerfReports(t *testing.T) {
	const dir = projectData + "/inference-perf/vllm+v0_engine/results"
	run, err := LoadDir(os.DirFS(filepath.Dir(filepath.Dir(dir))), "vllm+v0_engine/results")
	if err != nil {
		t.Fatal(err)
	}
	if run.Format != "inference-perf-report" || run.Name != "vllm+v0_engine" || len(run.Stages) != 7 || len(run.Requests) != 0 {
		t.Fatalf("format %s name %s, %d stages, %d requests", run.Format, run.Name, len(run.Stages), len(run.Requests))
	}
	wantRates := []float64{1, 40.19, 79.37, 118.56, 157.74, 196.93, 236.12}
	for i, st := range run.Stages {
		a := st.Aggregate
		if st.Index != i || st.RateRPS != wantRates[i] || a == nil || a.RateRPS != wantRates[i] || st.Strategy != "constant" || a.Concurrency != 440 {
			t.Errorf("stage %d: %+v %+v", i, st, a)
		}
	}
	// The config one level above: 10 system prompts of 128 tokens, each
	// with 10 users' 64-token questions: 100 recurring prompts of 192
	// tokens. The model is the server's (manifests.yaml's MODEL_ID).
	if run.PrefixGroups != 100 || run.PrefixTokens != 192 || run.Model != "meta-llama/Llama-3.1-8B-Instruct" {
		t.Errorf("prefix %d×%d, model %q", run.PrefixGroups, run.PrefixTokens, run.Model)
	}
	var raw struct {
		Successes struct {
			Latency struct {
				TTFT map[string]float64 `json:"time_to_first_token"`
			} `json:"latency"`
			OutputLen map[string]float64 `json:"output_len"`
		} `json:"successes"`
	}
	if err := json.Unmarshal(mustRead(t, dir+"/stage_0_lifecycle_metrics.json"), &raw); err != nil {
		t.Fatal(err)
	}
	a := run.Stages[0].Aggregate
	if a.Completed != 60 || a.Failed != 0 || a.TTFTMS["mean"] != 1e3*raw.Successes.Latency.TTFT["mean"] || a.TTFTMS["p999"] != 1e3*raw.Successes.Latency.TTFT["p99.9"] ||
		a.MeanOutputTokens != raw.Successes.OutputLen["mean"] || a.TPOTMS != nil {
		t.Errorf("stage 0 %+v", a)
	}
	// Without the config: the load is what the reports say.
	fsys := fstest.MapFS{"r/stage_0_lifecycle_metrics.json": {Data: mustRead(t, dir+"/stage_0_lifecycle_metrics.json")}}
	run, err = LoadInferencePerfReports(fsys, "r")
	if err != nil || run.Stages[0].Strategy != "" || run.Stages[0].Aggregate.Concurrency != 0 || run.PrefixGroups != 0 {
		t.Errorf("%+v, %v", run, err)
	}
}

func mustRead(t testing.TB, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestInferencePerfReportTPOT(t *testing.T) {
	// One chunk per token: time_per_output_token is vLLM's TPOT and is kept.
	rep := func(tpot string) string {
		return `{"load_summary": {"count": 10, "requested_rate": 2.0}, "successes": {"count": 10,
		  "latency": {"request_latency": {"mean": 0.65}, "time_to_first_token": {"mean": 0.02, "median": 0.019},
		              "time_per_output_token": {"mean": ` + tpot + `, "p99": 0.012}, "inter_token_latency": {"mean": 0.01}},
		  "throughput": {"requests_per_sec": 1.9}, "prompt_len": {"mean": 100}, "output_len": {"mean": 64}},
		  "failures": {"count": 0, "request_latency": null}}`
	}
	run, err := Import(strings.NewReader(rep("0.0101")), "stage_0_lifecycle_metrics.json", "")
	if err != nil {
		t.Fatal(err)
	}
	a := run.Aggregate
	if run.Format != "inference-perf-report" || a.TPOTMS["mean"] != 10.1 || a.TTFTMS["p50"] != 19 || a.RateRPS != 2 || a.Completed != 10 {
		t.Errorf("aggregate %+v", a)
	}
	// Two chunks per token: left out, with a note.
	run, err = Import(strings.NewReader(rep("0.005")), "stage_0_lifecycle_metrics.json", "")
	if err != nil || run.Aggregate.TPOTMS != nil || !hasNote(run, "time_per_output_token (mean 5 ms) is per chunk") {
		t.Errorf("%+v, %v", run, err)
	}
	// No success: no latency statistic.
	run, err = Import(strings.NewReader(`{"load_summary": {"count": 5}, "successes": {"count": 0, "latency": {"request_latency": {"mean": 0}}}, "failures": {"count": 5}}`), "s.json", "")
	if err != nil || run.Aggregate.E2EMS != nil || run.Aggregate.Failed != 5 {
		t.Errorf("%+v, %v", run, err)
	}
	_, err = Import(strings.NewReader(`{"load_summary": {}, "successes": {"count": 3, "latency": {"request_latency": {"mean": -1}}}}`), "s.json", "")
	if err == nil || !strings.Contains(err.Error(), "field successes.latency.request_latency.mean: -1 s is not a valid duration") {
		t.Errorf("negative latency: %v", err)
	}
}

// TestLoadDir reads every kind of run folder, and says what it wants of
// one it does not know.
func TestLoadDir(t *testing.T) {
	root := os.DirFS(".")
	for _, tc := range []struct {
		fsys              fsysPath
		format, name      string
		requests, stages  int
		gpu, model, notes string
	}{
		{fsysPath{os.DirFS(projectData), "llmservingsim/RTX4090/Llama-3.1-8B"}, "llmservingsim", "RTX4090/Llama-3.1-8B", 300, 0, "NVIDIA GeForce RTX 4090", "meta-llama/Llama-3.1-8B", ""},
		{fsysPath{root, "testdata/llmperf"}, "llmperf", "vllm-cur1-01-ai-Yi-1-5-34B-Chat_550_150", 80, 0, "", "01-ai/Yi-1.5-34B-Chat", "on the summary's 1 concurrent clients"},
		{fsysPath{root, "testdata/vllm-sweep/SERVE--max_num_seqs-32-BENCH--max_concurrency-8"}, "vllm-bench", "SERVE--max_num_seqs-32-BENCH--max_concurrency-8", 0, 2, "", "meta-llama/Llama-3.1-8B-Instruct", ""},
	} {
		t.Run(tc.format, func(t *testing.T) {
			if !IsRunDir(tc.fsys.fs, tc.fsys.dir) {
				t.Fatalf("IsRunDir false")
			}
			run, err := LoadDir(tc.fsys.fs, tc.fsys.dir)
			if err != nil {
				t.Fatal(err)
			}
			checkRunInvariants(t, run)
			if run.Format != tc.format || run.Name != tc.name || len(run.Requests) != tc.requests || len(run.Stages) != tc.stages || run.GPU != tc.gpu || run.Model != tc.model {
				t.Errorf("format %s name %q, %d requests, %d stages, gpu %q, model %q", run.Format, run.Name, len(run.Requests), len(run.Stages), run.GPU, run.Model)
			}
			if tc.notes != "" && !slices.ContainsFunc(run.Engine.Extra, func(s string) bool { return strings.Contains(s, tc.notes) }) {
				t.Errorf("notes %q, want one with %q", run.Engine.Extra, tc.notes)
			}
		})
	}
	_, err := LoadDir(root, "testdata/csv")
	if !errors.Is(err, ErrNotRunDir) || !strings.Contains(err.Error(), "stage_N_lifecycle_metrics.json") {
		t.Errorf("unknown folder: %v", err)
	}
	found, err := FindRunDirs(os.DirFS(projectData), ".")
	if err != nil || !slices.Equal(found, []string{"inference-perf/vllm+v0_engine", "llmservingsim/RTX4090/Llama-3.1-8B", "llmservingsim/RTXPRO6000_Llama-3.1-8B"}) {
		t.Errorf("FindRunDirs = %q, %v", found, err)
	}
}

type fsysPath struct {
	fs  fs.FS
	dir string
}

// TestLLMServingSimRepoLayout reads a run as LLMServingSim's repository
// lays it out, with and without meta.json's hardware block.
func TestLLMServingSimRepoLayout(t *testing.T) {
	const dir = "RTX4090/Llama-3.1-8B"
	base := projectData + "/llmservingsim/" + dir
	var meta map[string]any
	if err := json.Unmarshal(mustRead(t, base+"/vllm/meta.json"), &meta); err != nil {
		t.Fatal(err)
	}
	delete(meta, "hardware")
	noHW, _ := json.Marshal(meta)
	fsys := fstest.MapFS{
		dir + "/config.json":            {Data: mustRead(t, base+"/config.json")},
		dir + "/vllm/meta.json":         {Data: noHW},
		dir + "/vllm/requests.jsonl":    {Data: mustRead(t, base+"/vllm/requests.jsonl")},
		dir + "/vllm/timeseries.csv":    {Data: mustRead(t, base+"/vllm/timeseries.csv")},
		"workloads/unrelated.jsonl":     {Data: []byte("{}\n")},
		dir + "/validation/summary.txt": {Data: []byte("x")},
	}
	run, err := LoadLLMServingSim(fsys, dir)
	if err != nil {
		t.Fatal(err)
	}
	if run.Name != dir || run.GPU != "RTX4090" || !strings.Contains(run.GPUNote, "config.json") || len(run.Requests) != 300 || run.LoggedBlocks != 2588 {
		t.Errorf("name %q gpu %q (%s), %d requests, %d blocks", run.Name, run.GPU, run.GPUNote, len(run.Requests), run.LoggedBlocks)
	}
	// The vllm/ folder itself reads the same, config.json one level up.
	sub, err := LoadLLMServingSim(fsys, dir+"/vllm")
	if err != nil || sub.GPU != "RTX4090" || len(sub.Requests) != 300 {
		t.Errorf("vllm/: %v, %v", sub, err)
	}
	fsys[dir+"/config.json"] = &fstest.MapFile{Data: []byte(`{"nodes": [`)}
	if _, err := LoadLLMServingSim(fsys, dir); err == nil || !strings.Contains(err.Error(), "config.json") {
		t.Errorf("broken config.json: %v", err)
	}
}

// FuzzLoadDir: the run-folder loaders never panic on what the folder's
// files hold (an inference-perf results folder with its config, an
// LLMServingSim run in its repository layout, an llmperf folder); which
// folder the input fills is the first byte.
func FuzzLoadDir(f *testing.F) {
	stage := mustRead(f, projectData+"/inference-perf/vllm+v0_engine/results/stage_2_lifecycle_metrics.json")
	cfg := mustRead(f, projectData+"/inference-perf/config.yaml")
	meta := mustRead(f, projectData+"/llmservingsim/RTX4090/Llama-3.1-8B/vllm/meta.json")
	cluster := mustRead(f, projectData+"/llmservingsim/RTX4090/Llama-3.1-8B/config.json")
	summary := mustRead(f, "testdata/llmperf/vllm-cur1-01-ai-Yi-1-5-34B-Chat_550_150_summary.json")
	f.Add(uint8(0), stage, cfg)
	f.Add(uint8(1), fuzzSeed(meta), cluster)
	f.Add(uint8(2), summary, []byte(`[{"ttft_s": 0.1, "end_to_end_latency_s": 0.5, "number_output_tokens": 5, "number_input_tokens": 9}]`))
	f.Add(uint8(0), []byte(`{"load_summary": {}, "successes": {"count": 1}}`), []byte("load: {num_workers: 70000, worker_max_concurrency: 70000}"))
	reqs := []byte(`{"request_id": "a", "input_toks": 10, "output_toks": 2, "arrival_time": 1.0, "queued_ts": 5.0, "first_token_ts": 5.1, "last_token_ts": 5.2}` + "\n")
	f.Fuzz(func(t *testing.T, which uint8, a, b []byte) {
		var fsys fstest.MapFS
		var dir string
		switch which % 3 {
		case 0:
			fsys, dir = fstest.MapFS{"ip/results/stage_0_lifecycle_metrics.json": {Data: a}, "ip/config.yaml": {Data: b}}, "ip/results"
		case 1:
			fsys, dir = fstest.MapFS{"G/m/vllm/meta.json": {Data: a}, "G/m/config.json": {Data: b}, "G/m/vllm/requests.jsonl": {Data: reqs}}, "G/m"
		default:
			fsys, dir = fstest.MapFS{"lp/x_summary.json": {Data: a}, "lp/x_individual_responses.json": {Data: b}}, "lp"
		}
		run, err := LoadDir(fsys, dir)
		if err != nil {
			return
		}
		for i, q := range run.Requests {
			if math.IsNaN(q.SendS) || q.SendS < 0 || (q.Error == "" && (math.IsNaN(q.TTFTS) || q.TTFTS < 0)) {
				t.Fatalf("%s: request %d: %+v", dir, i, q)
			}
		}
		for _, s := range run.Stages {
			if s.Concurrency < 0 || s.Concurrency > 1<<32 {
				t.Fatalf("%s: stage %+v", dir, s)
			}
		}
		Describe(run)
	})
}
