package replay_test

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/headroom-sim/headroom/internal/testkit/golden"
	"github.com/headroom-sim/headroom/internal/testkit/refdata"

	"github.com/headroom-sim/headroom/catalogs"
	"github.com/headroom-sim/headroom/internal/adapter/measured"
	"github.com/headroom-sim/headroom/internal/study/replay"
	"github.com/headroom-sim/headroom/internal/study/scenario"
	"github.com/headroom-sim/headroom/sim"
	"github.com/headroom-sim/headroom/sim/workload"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/golden")

// sharedData is the reference data beside the project (absent in a bare
// checkout: those tests skip).
var sharedData = refdata.Location() + "/measured"

func builtin(t *testing.T) *catalogs.Catalog {
	t.Helper()
	cat, err := catalogs.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	return cat
}

// loadRun loads a run directory of the reference data with loader,
// skipping the test when it is absent.
func loadRun(t *testing.T, dir string, loader func(fs.FS, string) (*measured.Run, error)) *measured.Run {
	t.Helper()
	if _, err := os.Stat(filepath.Join(sharedData, dir)); err != nil {
		t.Skipf("reference data not present: %s", dir)
	}
	run, err := loader(os.DirFS(sharedData), dir)
	if err != nil {
		t.Fatal(err)
	}
	return run
}

func boolp(b bool) *bool { return &b }

// TestScenario maps what a run recorded onto a scenario.
func TestScenario(t *testing.T) {
	base := func(edit func(*measured.Run)) *measured.Run {
		r := &measured.Run{Name: "r", Model: "llama-3.1-8b", GPU: "h100-sxm", TP: 1, DP: 1}
		edit(r)
		return r
	}
	for _, c := range []struct {
		name      string
		run       *measured.Run
		dp        int
		router    string
		async     bool
		ep        bool
		weights   string
		kv        string
		seqs, mbt int
	}{
		{"defaults", base(func(*measured.Run) {}), 1, sim.RouterRoundRobin, true, false, "", "auto", 0, 0},
		{"vLLM 0.11 schedules synchronously", base(func(r *measured.Run) { r.EngineVersion = "0.11.0" }), 1, sim.RouterRoundRobin, false, false, "", "auto", 0, 0},
		{"vLLM v0.10.2 too", base(func(r *measured.Run) { r.EngineVersion = "v0.10.2" }), 1, sim.RouterRoundRobin, false, false, "", "auto", 0, 0},
		{"vLLM 0.13 still schedules synchronously", base(func(r *measured.Run) { r.EngineVersion = "0.13.0" }), 1, sim.RouterRoundRobin, false, false, "", "auto", 0, 0},
		{"vLLM 0.14 schedules asynchronously", base(func(r *measured.Run) { r.EngineVersion = "0.14.0" }), 1, sim.RouterRoundRobin, true, false, "", "auto", 0, 0},
		{"vLLM 1.0", base(func(r *measured.Run) { r.EngineVersion = "1.0.0" }), 1, sim.RouterRoundRobin, true, false, "", "auto", 0, 0},
		{"an unparsable version keeps the default", base(func(r *measured.Run) { r.EngineVersion = "main" }), 1, sim.RouterRoundRobin, true, false, "", "auto", 0, 0},
		{"a recorded setting beats the version", base(func(r *measured.Run) {
			r.EngineVersion, r.Engine.AsyncScheduling = "0.11.0", boolp(true)
		}), 1, sim.RouterRoundRobin, true, false, "", "auto", 0, 0},
		{"data parallelism: ranks behind one API server and vLLM's balancer", base(func(r *measured.Run) { r.DP = 2 }), 2, sim.RouterRoundRobin, true, false, "", "auto", 0, 0},
		{"expert parallelism", base(func(r *measured.Run) { r.Model, r.DP, r.ExpertParallel = "qwen3-30b-a3b", 2, true }), 2, sim.RouterRoundRobin, true, true, "", "auto", 0, 0},
		{"expert parallelism inside TP", base(func(r *measured.Run) { r.Model, r.TP, r.MoEEP = "qwen3-30b-a3b", 2, 2 }), 1, sim.RouterRoundRobin, true, true, "", "auto", 0, 0},
		{"dtypes", base(func(r *measured.Run) { r.Engine.DType, r.Engine.KVCacheDType = "float16", "fp8" }), 1, sim.RouterRoundRobin, true, false, "fp16", "fp8", 0, 0},
		{"bfloat16", base(func(r *measured.Run) { r.Engine.DType = "bfloat16" }), 1, sim.RouterRoundRobin, true, false, "bf16", "auto", 0, 0},
		{"batch limits", base(func(r *measured.Run) { r.Engine.MaxNumSeqs, r.Engine.MaxNumBatchedTokens = 32, 64 }), 1, sim.RouterRoundRobin, true, false, "", "auto", 32, 64},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := replay.Scenario(c.run)
			if s.Model != c.run.Model || s.GPU != c.run.GPU || s.TP != c.run.TP {
				t.Errorf("model %s gpu %s tp %d", s.Model, s.GPU, s.TP)
			}
			if s.Replicas != 1 || max(s.DP, 1) != c.dp || s.Router != c.router || s.Engine.AsyncScheduling != c.async || s.ExpertParallel != c.ep {
				t.Errorf("replicas %d dp %d router %s async %v ep %v; want 1 %d %s %v %v", s.Replicas, s.DP, s.Router, s.Engine.AsyncScheduling, s.ExpertParallel, c.dp, c.router, c.async, c.ep)
			}
			if s.WeightsDType != c.weights || s.KVCacheDType != c.kv || s.Engine.MaxNumSeqs != c.seqs || s.Engine.MaxNumBatchedTokens != c.mbt {
				t.Errorf("weights %q kv %q seqs %d mbt %d", s.WeightsDType, s.KVCacheDType, s.Engine.MaxNumSeqs, s.Engine.MaxNumBatchedTokens)
			}
			if err := s.Validate(); err != nil {
				t.Errorf("invalid scenario: %v", err)
			}
		})
	}
}

func TestScenarioFromRunDirectories(t *testing.T) {
	t.Run("inference-sim, vLLM 0.11", func(t *testing.T) {
		run := loadRun(t, "inference-sim-eval-ground-truth/jan20-codellama-prefill-1", loadInferenceSim)
		s := replay.Scenario(run)
		e := s.Engine
		if e.AsyncScheduling || e.MaxNumSeqs != 32 || e.MaxNumBatchedTokens != 64 || e.MaxModelLen != 8192 || !e.EnablePrefixCaching || !e.EnableChunkedPrefill || s.WeightsDType != "bf16" {
			t.Errorf("scenario engine %+v weights %q", e, s.WeightsDType)
		}
	})
	t.Run("llmservingsim, expert parallel over 2 replicas", func(t *testing.T) {
		run := loadRun(t, "llmservingsim/RTXPRO6000_Qwen3-30B-A3B-Instruct-2507", loadLLMServingSim)
		s := replay.Scenario(run)
		if !s.ExpertParallel || s.Replicas != 1 || s.DP != 2 || !s.Engine.AsyncScheduling {
			t.Errorf("ep %v replicas %d dp %d async %v", s.ExpertParallel, s.Replicas, s.DP, s.Engine.AsyncScheduling)
		}
		res, err := replay.Config(run, builtin(t), replay.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if c := res.Config; c.MoEEP != 2 || c.MoETP != 1 || c.DP != 2 || c.Replicas != 1 {
			t.Errorf("config moe %d×%d dp %d replicas %d", c.MoETP, c.MoEEP, c.DP, c.Replicas)
		}
	})
	t.Run("llmservingsim, logged engine settings", func(t *testing.T) {
		run := loadRun(t, "llmservingsim/RTX4090_Llama-3.1-8B", loadLLMServingSim)
		res, err := replay.Config(run, builtin(t), replay.Options{UseLoggedBlocks: true, Seed: 3})
		if err != nil {
			t.Fatal(err)
		}
		c := res.Config
		if c.GPU.ID != "rtx-4090" || c.Engine.MaxNumSeqs != 256 || c.Engine.MaxNumBatchedTokens != 2048 || c.Engine.MaxModelLen != 32768 || c.Engine.BlockSize != 16 {
			t.Errorf("gpu %s engine %+v", c.GPU.ID, c.Engine)
		}
		if c.NumGPUBlocks != 2588 || c.Seed != 3 || len(c.Workload.Trace) != 300 || c.Workload.TraceHashTokens != 16 {
			t.Errorf("%d blocks, seed %d, %d trace records, %d hash tokens", c.NumGPUBlocks, c.Seed, len(c.Workload.Trace), c.Workload.TraceHashTokens)
		}
	})
}

var (
	loadLLMServingSim = measured.LoadLLMServingSim
	loadInferenceSim  = measured.LoadInferenceSim
)

// TestConfigWorkload: the trace is the run's completed requests, with
// their send times, lengths, prefix ids and stages.
func TestConfigWorkload(t *testing.T) {
	cat := builtin(t)
	run := &measured.Run{Name: "r", Model: "llama-3.1-8b", GPU: "h100-sxm", TP: 1, DP: 1, HashTokens: 64, LoggedBlocks: 5000,
		Requests: []measured.Request{
			{SendS: 0, InputTokens: 100, OutputTokens: 10, TTFTS: 0.1, E2ES: 0.5, HashIDs: []int64{1}, Stage: 0},
			{SendS: 0.5, InputTokens: 100, OutputTokens: 10, Error: "timeout"},
			{SendS: 0.7, InputTokens: 0, OutputTokens: 10},
			{SendS: 1, InputTokens: 200, OutputTokens: 20, TTFTS: 0.1, E2ES: 0.9, Stage: 1},
		}}
	res, err := replay.Config(run, cat, replay.Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := []workload.TraceRecord{
		{ArrivalS: 0, InputTokens: 100, OutputTokens: 10, HashIDs: []int64{1}, Stage: 0},
		{ArrivalS: 1, InputTokens: 200, OutputTokens: 20, Stage: 1},
	}
	w := res.Config.Workload
	if len(w.Trace) != len(want) || w.TraceHashTokens != 64 || res.Config.Seed != 1 {
		t.Fatalf("workload %+v, seed %d", w, res.Config.Seed)
	}
	for i := range want {
		g := w.Trace[i]
		if g.ArrivalS != want[i].ArrivalS || g.InputTokens != want[i].InputTokens || g.OutputTokens != want[i].OutputTokens || !slices.Equal(g.HashIDs, want[i].HashIDs) || g.Stage != want[i].Stage {
			t.Errorf("record %d: %+v, want %+v", i, g, want[i])
		}
	}
	if res.Config.NumGPUBlocks == 5000 {
		t.Error("the logged block count was used without UseLoggedBlocks")
	}

	t.Run("a summary alone", func(t *testing.T) {
		agg := &measured.Run{Name: "agg", Model: "llama-3.1-8b", GPU: "h100-sxm", TP: 1, DP: 1,
			Aggregate: &measured.Aggregate{Completed: 50, RateRPS: 4, MeanInputTokens: 300.4, MeanOutputTokens: 99.5}}
		res, err := replay.Config(agg, cat, replay.Options{})
		if err != nil {
			t.Fatal(err)
		}
		w := res.Config.Workload
		if w.Trace != nil || w.Requests != 50 || w.Arrival != (workload.ArrivalSpec{Type: workload.ArrivalPoisson, RateRPS: 4}) || w.Input == nil || w.Output == nil {
			t.Errorf("workload %+v", w)
		}
		agg.Aggregate.RateRPS, agg.Aggregate.Concurrency = 0, 8
		res, _ = replay.Config(agg, cat, replay.Options{})
		if a := res.Config.Workload.Arrival; a != (workload.ArrivalSpec{Type: workload.ArrivalClosedLoop, Concurrency: 8}) {
			t.Errorf("arrival %+v, want a closed loop of 8", a)
		}
		agg.Aggregate.Concurrency = 0
		res, _ = replay.Config(agg, cat, replay.Options{})
		if a := res.Config.Workload.Arrival; a != (workload.ArrivalSpec{Type: workload.ArrivalClosedLoop, Concurrency: 50}) {
			t.Errorf("arrival %+v, want one user per request", a)
		}
	})
	for _, c := range []struct {
		name  string
		run   *measured.Run
		inErr string
	}{
		{"nothing to replay", &measured.Run{Name: "empty", Model: "llama-3.1-8b", GPU: "h100-sxm", TP: 1, DP: 1}, "empty: no completed requests"},
		{"a summary without lengths", &measured.Run{Name: "nolen", Model: "llama-3.1-8b", GPU: "h100-sxm", TP: 1, DP: 1, Aggregate: &measured.Aggregate{Completed: 5}}, "no mean input and output lengths"},
		{"an unknown model", &measured.Run{Name: "x", Model: "gpt-9", GPU: "h100-sxm", TP: 1, DP: 1}, "x: model: unknown model"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if _, err := replay.Config(c.run, cat, replay.Options{}); err == nil || !strings.Contains(err.Error(), c.inErr) {
				t.Errorf("error %v, want %q", err, c.inErr)
			}
		})
	}
}

// replayed simulates a run and compares it with the measurement.
func replayed(t *testing.T, run *measured.Run) replay.Comparison {
	t.Helper()
	res, err := replay.Config(run, builtin(t), replay.Options{})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := sim.Run(context.Background(), res.Config)
	if err != nil {
		t.Fatal(err)
	}
	return replay.Compare(run, res, rep)
}

// TestCompareMetrics: every latency quantile and both throughputs of a
// real run, and the simulator within 20% of the measurement on each (the
// replay of this RTX 4090 run is 9-15% off today).
func TestCompareMetrics(t *testing.T) {
	run := loadRun(t, "llmservingsim/RTX4090_Llama-3.1-8B", loadLLMServingSim)
	c := replayed(t, run)
	var want []string
	for _, m := range []string{"ttft_ms", "tpot_ms", "e2e_ms"} {
		for _, q := range []string{"mean", "p50", "p90", "p99"} {
			want = append(want, m+"."+q)
		}
	}
	want = append(want, "throughput.requests_per_s", "throughput.output_tokens_per_s")
	var names []string
	for _, m := range c.Metrics {
		names = append(names, m.Name)
		if !(m.Measured > 0 && m.Predicted > 0) || math.Abs(m.ErrorPct) > 20 {
			t.Errorf("%s: measured %v, predicted %v (%+.1f%%): not within 20%%", m.Name, m.Measured, m.Predicted, m.ErrorPct)
		}
		if got, ok := c.Get(m.Name); !ok || got != m {
			t.Errorf("Get(%s) = %+v, %v", m.Name, got, ok)
		}
	}
	if !slices.Equal(names, want) {
		t.Errorf("metrics %v, want %v", names, want)
	}
	if _, ok := c.Get("itl_ms.p50"); ok {
		t.Error("Get found a metric that is not compared")
	}
	// The measured mean TTFT, straight from the requests.
	sum, n := 0.0, 0
	for _, q := range run.Requests {
		if q.OK() {
			sum, n = sum+q.TTFTS*1e3, n+1
		}
	}
	if m, _ := c.Get("ttft_ms.mean"); math.Abs(m.Measured-sum/float64(n)) > 1e-9*m.Measured {
		t.Errorf("measured mean TTFT %v, the requests' mean %v", m.Measured, sum/float64(n))
	}
	if c.Requests != 300 || c.LoggedBlocks != 2588 || c.PredictedBlocks < 1 || c.Model != "llama-3.1-8b" || c.GPU != "rtx-4090" || c.EngineVersion != "0.19.0" {
		t.Errorf("comparison header %+v", c)
	}
}

// TestCompareArithmetic: figures worked out by hand. Four requests sent at
// 0-3 s with TTFTs of 100-400 ms and E2Es of 1.1-1.4 s, 11 output tokens
// each (TPOT 100 ms), so the run lasts 4.4 s: 0.909 req/s, 10 tokens/s.
func TestCompareArithmetic(t *testing.T) {
	run := &measured.Run{Name: "hand", LoggedBlocks: 7}
	for i := range 4 {
		f := float64(i)
		run.Requests = append(run.Requests, measured.Request{SendS: f, InputTokens: 5, OutputTokens: 11, TTFTS: 0.1 * (f + 1), E2ES: 1.1 + 0.1*f})
	}
	rep := &sim.Report{Model: "m", GPU: "g"}
	rep.TTFTMS.Mean, rep.E2EMS.Mean, rep.TPOTMS.Mean = 300, 1000, 100
	rep.Throughput.RequestsPerS, rep.Throughput.OutputTokensPerS = 1, 12
	c := replay.Compare(run, &scenario.Resolved{}, rep)
	for _, w := range []struct {
		name           string
		measured, errP float64
	}{
		{"ttft_ms.mean", 250, 20},
		{"e2e_ms.mean", 1250, -20},
		{"tpot_ms.mean", 100, 0},
		{"throughput.requests_per_s", 4 / 4.4, 10},
		{"throughput.output_tokens_per_s", 10, 20},
	} {
		m, ok := c.Get(w.name)
		if !ok || math.Abs(m.Measured-w.measured) > 1e-9 || math.Abs(m.ErrorPct-w.errP) > 1e-9 {
			t.Errorf("%s: %+v, want measured %v and error %+v%%", w.name, m, w.measured, w.errP)
		}
	}
	if c.Requests != 4 || c.LoggedBlocks != 7 {
		t.Errorf("header %+v", c)
	}
}

// TestComparisonGolden pins the measured-versus-predicted comparison of
// two reference runs, so that accuracy changes show up in review as a
// diff of testdata/golden/*.json.
//
// The golden files change whenever the simulator's predictions do — a new
// step-time default, a memory-model constant, a scheduler fix. That is
// intended: rerun with -update and review the error_pct columns in the
// diff (better or worse, and by how much) before committing.
func TestComparisonGolden(t *testing.T) {
	for _, c := range []struct {
		golden string
		dir    string
		loader func(fs.FS, string) (*measured.Run, error)
	}{
		{"rtx4090-llama-3.1-8b.json", "llmservingsim/RTX4090_Llama-3.1-8B", loadLLMServingSim},
		{"jan20-codellama-prefill-1.json", "inference-sim-eval-ground-truth/jan20-codellama-prefill-1", loadInferenceSim},
	} {
		t.Run(c.golden, func(t *testing.T) {
			got, err := json.MarshalIndent(replayed(t, loadRun(t, c.dir, c.loader)), "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, '\n')
			golden.Check(t, filepath.Join("testdata", "golden", c.golden), got, *update)
		})
	}
}

func TestResolveModel(t *testing.T) {
	cat := builtin(t)
	for id, want := range map[string]string{
		"llama-3.1-8b": "llama-3.1-8b",
		"/models/models--openai--gpt-oss-120b/snapshots/b5c939de8f754692c1647ca79fbf85e8c1e70f8a/": "gpt-oss-120b",
		"/data/hf/meta-llama/Llama-3.1-8B": "llama-3.1-8b",
		"Llama-3.3-70B-Instruct":           "llama-3.1-70b", // a served model name
		"meta-llama/Llama-2-7b-chat-hf":    "llama-2-7b",
	} {
		if got, err := replay.ResolveModel(cat, id); err != nil || got != want {
			t.Errorf("ResolveModel(%q) = %q, %v; want %q", id, got, err, want)
		}
	}
	for _, id := range []string{"my-llama", "", "/models/unknown"} {
		if _, err := replay.ResolveModel(cat, id); !errors.Is(err, catalogs.ErrUnknownModel) {
			t.Errorf("ResolveModel(%q): %v, want ErrUnknownModel", id, err)
		}
	}
}

// TestPartsOfSummaries replays files that hold only the tools' summaries:
// each benchmark from the load its summary states.
func TestPartsOfSummaries(t *testing.T) {
	cat := builtin(t)
	t.Run("inference-perf stepped run", func(t *testing.T) {
		run, err := measured.LoadDir(os.DirFS("../../../testdata/inference-perf"), "vllm+v0_engine/results")
		if err != nil {
			t.Fatal(err)
		}
		// The model, GPU and server flags are manifests.yaml's.
		parts, err := replay.Parts(run, cat, replay.Options{}, -1)
		if err != nil {
			t.Fatal(err)
		}
		if len(parts) != 7 {
			t.Fatalf("%d parts", len(parts))
		}
		for i, p := range parts {
			w := p.Resolved.Config.Workload
			a := run.Stages[i].Aggregate
			if p.Basis != replay.BasisAggregate || p.Stage != i || p.Filter != -1 || w.Arrival.Type != workload.ArrivalConstant || w.Arrival.RateRPS != a.RateRPS ||
				w.MaxConcurrency != 440 || w.Requests != a.Completed+a.Failed || w.SharedPrefix == nil || w.SharedPrefix.PrefixTokens != 192 || w.SharedPrefix.Groups != 100 {
				t.Errorf("part %d (%s): %s, arrival %+v, cap %d, %d requests, prefix %+v", i, p.Name, p.Basis, w.Arrival, w.MaxConcurrency, w.Requests, w.SharedPrefix)
			}
			if v, ok := p.Measured.Get("ttft_ms", "p99"); !ok || v != a.TTFTMS["p99"] {
				t.Errorf("part %d: measured ttft p99 %v", i, v)
			}
			if _, ok := p.Measured.Get("tpot_ms", "mean"); ok {
				t.Errorf("part %d: a TPOT inference-perf did not measure", i)
			}
			if e := p.Resolved.Config.Engine; e.MaxNumSeqs != 128 || e.MaxModelLen != 512 || e.EnableChunkedPrefill || e.EnablePrefixCaching || e.Scheduler != "v0" || p.Resolved.Config.Model.ID != "llama-3.1-8b" {
				t.Errorf("part %d: engine %+v", i, p.Resolved.Config.Engine)
			}
		}
		one, err := replay.Parts(run, cat, replay.Options{}, 3)
		if err != nil || len(one) != 1 || one[0].Stage != 3 || !strings.Contains(one[0].Name, "stage 3 (constant)") {
			t.Errorf("stage 3: %+v, %v", one, err)
		}
		if _, err := replay.Parts(run, cat, replay.Options{}, 9); err == nil {
			t.Errorf("stage 9 of 7: no error")
		}
	})
	t.Run("sglang appended runs", func(t *testing.T) {
		f, err := os.Open("../../adapter/measured/testdata/sglang-bench/datacrunch-llama_3_3_70b_online_output.jsonl")
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		run, err := measured.Import(f, "out.jsonl", "")
		if err != nil {
			t.Fatal(err)
		}
		measured.Overrides{Model: "Llama-3.3-70B-Instruct", GPU: "h200", TP: 4}.Apply(run)
		parts, err := replay.Parts(run, cat, replay.Options{}, -1)
		if err != nil {
			t.Fatal(err)
		}
		if len(parts) != 7 || parts[0].Resolved.Config.Model.ID != "llama-3.1-70b" {
			t.Fatalf("%d parts, model %s", len(parts), parts[0].Resolved.Config.Model.ID)
		}
		for i, p := range parts {
			w := p.Resolved.Config.Workload
			if w.Arrival.Type != workload.ArrivalPoisson || w.Arrival.RateRPS != run.Stages[i].RateRPS || w.MaxConcurrency != 0 || len(p.Notes) == 0 {
				t.Errorf("part %d: %+v cap %d notes %q", i, w.Arrival, w.MaxConcurrency, p.Notes)
			}
		}
		rep, err := sim.Run(context.Background(), parts[0].Resolved.Config)
		if err != nil {
			t.Fatal(err)
		}
		c := replay.ComparePart(run, &parts[0], rep)
		var names []string
		for _, m := range c.Metrics {
			names = append(names, m.Name)
		}
		// SGLang's summary without --output-details: median TTFT, mean and
		// median E2E, output throughput.
		if want := []string{"ttft_ms.p50", "e2e_ms.mean", "e2e_ms.p50", "throughput.output_tokens_per_s"}; !slices.Equal(names, want) || c.Basis != replay.BasisAggregate || c.Stage == nil || *c.Stage != 0 {
			t.Errorf("compared %q (basis %s), want %q", names, c.Basis, want)
		}
	})
}

// TestTraceRecords: a run's completed requests as a trace, at their sends
// or their scheduled arrivals (the send less the client's delay).
func TestTraceRecords(t *testing.T) {
	run := &measured.Run{Requests: []measured.Request{
		{SendS: 0.2, DelayS: 0.2, InputTokens: 10, OutputTokens: 5, TTFTS: 0.1, E2ES: 0.5, Stage: 1},
		{SendS: 1, DelayS: 0.5, InputTokens: 20, OutputTokens: 5, TTFTS: 0.1, E2ES: 0.5},
		{SendS: 1.5, InputTokens: 20, OutputTokens: 5, Error: "503"},
	}}
	for _, c := range []struct {
		scheduled bool
		want      []float64
	}{{false, []float64{0, 0.8}}, {true, []float64{0, 0.5}}} {
		recs := replay.TraceRecords(run, c.scheduled)
		if len(recs) != 2 || recs[0].ArrivalS != c.want[0] || recs[1].ArrivalS != c.want[1] || recs[0].Stage != 1 || recs[1].InputTokens != 20 {
			t.Errorf("scheduled %v: %+v", c.scheduled, recs)
		}
	}
}

// TestKVCacheDTypeOverride: --kv-cache-dtype replays a run with the
// server's KV-cache type where the run does not record it: an fp8 cache
// holds twice the blocks of a bf16 one on the same GPU.
func TestKVCacheDTypeOverride(t *testing.T) {
	cat := builtin(t)
	config := func(kv string) *sim.Config {
		run := &measured.Run{Name: "r", Model: "llama-3.1-8b", GPU: "h100-sxm", TP: 1, DP: 1,
			Requests: []measured.Request{{SendS: 0, InputTokens: 100, OutputTokens: 10, TTFTS: 0.1, E2ES: 0.5}}}
		measured.Overrides{KVCacheDType: kv}.Apply(run)
		res, err := replay.Config(run, cat, replay.Options{})
		if err != nil {
			t.Fatalf("%q: %v", kv, err)
		}
		return &res.Config
	}
	bf16, fp8 := config(""), config("fp8")
	if bf16.Precision.KV != "bf16" || fp8.Precision.KV != "fp8" || fp8.NumGPUBlocks < 19*bf16.NumGPUBlocks/10 {
		t.Errorf("kv %s %d blocks, with fp8 %s %d blocks", bf16.Precision.KV, bf16.NumGPUBlocks, fp8.Precision.KV, fp8.NumGPUBlocks)
	}
	run := &measured.Run{Name: "r", Model: "llama-3.1-8b", GPU: "h100-sxm", TP: 1, DP: 1,
		Requests: []measured.Request{{SendS: 0, InputTokens: 100, OutputTokens: 10, TTFTS: 0.1, E2ES: 0.5}}}
	measured.Overrides{KVCacheDType: "fp7"}.Apply(run)
	if _, err := replay.Config(run, cat, replay.Options{}); err == nil || !strings.Contains(err.Error(), "kv_cache_dtype") {
		t.Errorf("an unknown KV-cache type: %v", err)
	}
}

// TestPromptPoolOverride: --prompt-pool replays a summary's load from a
// pool of prompts shared whole but for the last token; a run that lists
// its requests keeps them, saying so.
func TestPromptPoolOverride(t *testing.T) {
	cat := builtin(t)
	agg := func() *measured.Run {
		return &measured.Run{Name: "r", Model: "llama-3.1-8b", GPU: "h100-sxm", TP: 1, DP: 1,
			Aggregate: &measured.Aggregate{Concurrency: 8, Completed: 80, MeanInputTokens: 1000, MeanOutputTokens: 100, TTFTMS: map[string]float64{"mean": 50}}}
	}
	run := agg()
	measured.Overrides{PromptPool: 300}.Apply(run)
	res, err := replay.Config(run, cat, replay.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if p := res.Config.Workload.SharedPrefix; p == nil || p.Groups != 300 || p.PrefixTokens != 999 || !slices.ContainsFunc(run.Engine.Extra, func(n string) bool { return strings.Contains(n, "pool of 300") }) {
		t.Errorf("shared prefix %+v, notes %q", p, run.Engine.Extra)
	}
	plain, err := replay.Config(agg(), cat, replay.Options{})
	if err != nil || plain.Config.Workload.SharedPrefix != nil {
		t.Errorf("without the flag: %+v, %v", plain.Config.Workload.SharedPrefix, err)
	}
	for _, r := range []*measured.Run{
		{Name: "q", Model: "llama-3.1-8b", GPU: "h100-sxm", TP: 1, DP: 1, Requests: []measured.Request{{SendS: 0, InputTokens: 100, OutputTokens: 10, TTFTS: 0.1, E2ES: 0.5}}},
		agg(),
	} {
		pool := 7
		if r.Aggregate != nil {
			pool = measured.MaxPromptPool + 1
		}
		measured.Overrides{PromptPool: pool}.Apply(r)
		if r.PrefixGroups != 0 || !slices.ContainsFunc(r.Engine.Extra, func(n string) bool { return strings.Contains(n, "not applied") }) {
			t.Errorf("%s: prefix groups %d, notes %q", r.Name, r.PrefixGroups, r.Engine.Extra)
		}
	}
}
