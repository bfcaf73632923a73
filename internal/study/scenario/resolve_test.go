package scenario_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/headroom-sim/headroom/catalogs"
	"github.com/headroom-sim/headroom/internal/study/scenario"
	"github.com/headroom-sim/headroom/sim"
	"github.com/headroom-sim/headroom/sim/engine"
	"github.com/headroom-sim/headroom/sim/memory"
	"github.com/headroom-sim/headroom/sim/steptime"
	"github.com/headroom-sim/headroom/sim/workload"
)

func builtin(t testing.TB) *catalogs.Catalog {
	t.Helper()
	cat, err := catalogs.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	return cat
}

// opener reads scenario file references from fsys.
func opener(fsys fs.FS) func(string) (io.ReadCloser, error) {
	return func(name string) (io.ReadCloser, error) { return fsys.Open(name) }
}

// traceFS holds small trace and length files for the tests.
var traceFS = fstest.MapFS{
	"t.csv":       {Data: []byte("arrival_s,input_tokens,output_tokens\n0,100,10\n0.5,200,20\n1,300,30\n1.5,400,40\n")},
	"lengths.csv": {Data: []byte("prompt,completion\n10,5\n20,6\n30,7\n")},
}

func TestResolveDefault(t *testing.T) {
	cat := builtin(t)
	s := scenario.Default()
	res, err := s.Resolve(scenario.Env{Catalog: cat})
	if err != nil {
		t.Fatal(err)
	}
	m, _ := cat.Model("llama-3.1-8b")
	g, _ := cat.GPU("h100-sxm")
	eng, err := engine.Defaults().Resolve(m, g)
	if err != nil {
		t.Fatal(err)
	}
	mp, err := memory.Compute(memory.Setup{Model: m, GPU: g, Precision: m.ResolvePrecision("", ""), TP: 1, EP: 1, Engine: eng})
	if err != nil {
		t.Fatal(err)
	}
	c := res.Config
	switch {
	case c.Model != m || c.GPU != g || c.TP != 1 || c.Replicas != 1 || c.DP != 1 || c.MoEEP != 0 || c.Router != sim.RouterRoundRobin:
		t.Errorf("ids and parallelism: %s %s tp %d replicas %d dp %d moe_ep %d router %s", c.Model.ID, c.GPU.ID, c.TP, c.Replicas, c.DP, c.MoEEP, c.Router)
	case c.Engine != eng:
		t.Errorf("engine %+v, want %+v", c.Engine, eng)
	case res.Memory != mp || c.NumGPUBlocks != mp.NumGPUBlocks || c.BlockBytes != mp.BlockBytes:
		t.Errorf("memory %+v / %d blocks, want %+v", res.Memory, c.NumGPUBlocks, mp)
	case !reflect.DeepEqual(c.Profile, steptime.DefaultProfile(g)):
		t.Errorf("profile %+v, want the GPU's default", c.Profile)
	case c.Seed != 1 || c.Report.StallThresholdMS != 300 || c.Report.Timeseries || c.SLA != nil || c.NetworkRTTMS != 0:
		t.Errorf("seed %d report %+v sla %v rtt %v", c.Seed, c.Report, c.SLA, c.NetworkRTTMS)
	case c.BlockUnits != nil:
		t.Error("BlockUnits set for a model without sliding windows")
	case c.Workload.Requests != 1000 || c.Workload.Arrival != (workload.ArrivalSpec{Type: "poisson", RateRPS: 10}) || c.Workload.Input == nil || c.Workload.Output == nil || c.Workload.Trace != nil:
		t.Errorf("workload %+v", c.Workload)
	}
}

// TestResolveSlidingWindow: a model with sliding-window layers counts a
// sequence's blocks with memory.BlocksForTokens.
func TestResolveSlidingWindow(t *testing.T) {
	cat := builtin(t)
	for _, id := range []string{"gemma-2-9b", "mistral-7b"} {
		t.Run(id, func(t *testing.T) {
			s := scenario.Default()
			s.Model = id
			res, err := s.Resolve(scenario.Env{Catalog: cat})
			if err != nil {
				t.Fatal(err)
			}
			if res.Config.BlockUnits == nil {
				t.Fatal("BlockUnits is nil")
			}
			m, _ := cat.Model(id)
			for _, n := range []int{1, 100, 4096, 4097, 8192} {
				if got, want := res.Config.BlockUnits(n), memory.BlocksForTokens(m, 16, n); got != want {
					t.Errorf("BlockUnits(%d) = %d, want %d", n, got, want)
				}
			}
		})
	}
}

// TestResolveErrorKinds: unknown ids wrap the catalog's sentinels, an
// infeasible setup wraps memory.ErrDoesNotFit and names the smallest tp
// that fits (when one does), a run over the limit wraps ErrTooLarge.
func TestResolveErrorKinds(t *testing.T) {
	for _, c := range []struct {
		name     string
		edit     func(*scenario.Scenario, *scenario.Env)
		sentinel error
		inMsg    string
		notInMsg string
	}{
		{name: "unknown model", edit: func(s *scenario.Scenario, _ *scenario.Env) { s.Model = "llama-9" }, sentinel: catalogs.ErrUnknownModel, inMsg: "model: "},
		{name: "unknown gpu", edit: func(s *scenario.Scenario, _ *scenario.Env) { s.GPU = "z100" }, sentinel: catalogs.ErrUnknownGPU, inMsg: "gpu: "},
		{name: "70b on one h100", edit: func(s *scenario.Scenario, _ *scenario.Env) { s.Model = "llama-3.1-70b" }, sentinel: memory.ErrDoesNotFit, inMsg: "smallest tp that fits: 4"},
		{name: "70b on two h100", edit: func(s *scenario.Scenario, _ *scenario.Env) { s.Model, s.TP = "llama-3.1-70b", 2 }, sentinel: memory.ErrDoesNotFit, inMsg: "smallest tp that fits: 4"},
		{name: "70b at 8k context on one h100", edit: func(s *scenario.Scenario, _ *scenario.Env) {
			s.Model, s.Engine.MaxModelLen = "llama-3.1-70b", 8192
		}, sentinel: memory.ErrDoesNotFit, inMsg: "smallest tp that fits: 2"},
		{name: "405b fits no h100 node", edit: func(s *scenario.Scenario, _ *scenario.Env) { s.Model, s.TP = "llama-3.1-405b", 8 }, sentinel: memory.ErrDoesNotFit, inMsg: "weights need", notInMsg: "smallest tp"},
		{name: "more requests than allowed", edit: func(s *scenario.Scenario, e *scenario.Env) { e.MaxRequests = 999 }, sentinel: scenario.ErrTooLarge, inMsg: "about 1000 requests, the limit is 999"},
		{name: "a trace longer than allowed", edit: func(s *scenario.Scenario, e *scenario.Env) {
			e.MaxRequests, e.Open = 3, opener(traceFS)
			s.Workload = workload.Spec{Trace: &workload.TraceSpec{File: "t.csv", Format: "csv"}}
		}, sentinel: scenario.ErrTooLarge, inMsg: "about 4 requests"},
		{name: "stages longer than allowed", edit: func(s *scenario.Scenario, e *scenario.Env) {
			e.MaxRequests = 100
			s.Workload.Requests, s.Workload.Arrival = 0, workload.ArrivalSpec{}
			s.Workload.Stages = []workload.StageSpec{{DurationS: 60, RateRPS: 1}, {DurationS: 10, RateRPS: 5}}
		}, sentinel: scenario.ErrTooLarge, inMsg: "about 110 requests"},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, env := scenario.Default(), scenario.Env{Catalog: builtin(t)}
			c.edit(&s, &env)
			_, err := s.Resolve(env)
			if !errors.Is(err, c.sentinel) {
				t.Fatalf("Resolve error %v, want one wrapping %v", err, c.sentinel)
			}
			if !strings.Contains(err.Error(), c.inMsg) || (c.notInMsg != "" && strings.Contains(err.Error(), c.notInMsg)) {
				t.Errorf("error %q: want %q in it and not %q", err, c.inMsg, c.notInMsg)
			}
		})
	}
}

// TestResolveFieldErrors: bad values are *FieldError naming the field by
// its scenario path.
func TestResolveFieldErrors(t *testing.T) {
	for _, c := range []struct {
		name     string
		edit     func(*scenario.Scenario, *scenario.Env)
		field    string
		inReason string
	}{
		{"tp not dividing the heads", func(s *scenario.Scenario, _ *scenario.Env) { s.TP = 3 }, "tp", "does not divide"},
		{"tp not dividing qwen2.5-7b's KV heads", func(s *scenario.Scenario, _ *scenario.Env) { s.Model, s.TP = "qwen2.5-7b", 7 }, "tp", "does not divide"},
		{"tp beyond the node", func(s *scenario.Scenario, _ *scenario.Env) { s.TP = 16 }, "tp", "exceeds the 8 GPUs of one h100-sxm node"},
		{"tp beyond a 4-GPU node", func(s *scenario.Scenario, _ *scenario.Env) { s.GPU, s.TP = "rtx-4090", 8 }, "tp", "exceeds the 4 GPUs"},
		{"expert parallel on a dense model", func(s *scenario.Scenario, _ *scenario.Env) { s.ExpertParallel = true }, "expert_parallel", "no routed experts"},
		{"experts not splitting evenly", func(s *scenario.Scenario, _ *scenario.Env) {
			s.Model, s.Replicas, s.ExpertParallel = "qwen3-30b-a3b", 3, true
		}, "expert_parallel", "128 experts do not split evenly over tp × dp = 3"},
		{"trace without a file opener", func(s *scenario.Scenario, _ *scenario.Env) {
			s.Workload = workload.Spec{Trace: &workload.TraceSpec{File: "t.csv", Format: "csv"}}
		}, "workload.trace.file", scenario.ErrFilesNotAllowed.Error()},
		{"empirical lengths without a file opener", func(s *scenario.Scenario, _ *scenario.Env) {
			s.Workload.InputTokens = workload.LengthSpec{Type: workload.LengthEmpirical, File: "lengths.csv", Column: "prompt"}
		}, "workload.input_tokens.file", scenario.ErrFilesNotAllowed.Error()},
		{"empirical output lengths without a file opener", func(s *scenario.Scenario, _ *scenario.Env) {
			s.Workload.OutputTokens = workload.LengthSpec{Type: workload.LengthEmpirical, File: "lengths.csv", Column: "completion"}
		}, "workload.output_tokens.file", scenario.ErrFilesNotAllowed.Error()},
		{"a missing trace file", func(s *scenario.Scenario, e *scenario.Env) {
			e.Open = opener(traceFS)
			s.Workload = workload.Spec{Trace: &workload.TraceSpec{File: "missing.csv", Format: "csv"}}
		}, "workload.trace.file", "missing.csv"},
		{"calibration without a loader", func(s *scenario.Scenario, _ *scenario.Env) { s.Calibration = "p.json" }, "calibration", "cannot be loaded here"},
		{"an invalid engine setting", func(s *scenario.Scenario, _ *scenario.Env) { s.Engine.MaxNumSeqs = -1 }, "engine.max_num_seqs", "not in [1, 1048576]"},
		{"max_model_len beyond the model", func(s *scenario.Scenario, _ *scenario.Env) { s.Engine.MaxModelLen = 200000 }, "engine.max_model_len", "131072"},
		{"unknown weights dtype", func(s *scenario.Scenario, _ *scenario.Env) { s.WeightsDType = "bf17" }, "weights_dtype", ""},
		{"a KV-cache dtype that is not one", func(s *scenario.Scenario, _ *scenario.Env) { s.KVCacheDType = "int4" }, "kv_cache_dtype", "not a KV-cache type"},
		{"an invalid scenario is validated first", func(s *scenario.Scenario, _ *scenario.Env) { s.TP = 0 }, "tp", "not in [1, 1024]"},
		{"an invalid workload", func(s *scenario.Scenario, _ *scenario.Env) { s.Workload.Requests = 0 }, "workload.requests", ">= 1"},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, env := scenario.Default(), scenario.Env{Catalog: builtin(t)}
			c.edit(&s, &env)
			_, err := s.Resolve(env)
			var fe *scenario.FieldError
			if !errors.As(err, &fe) {
				t.Fatalf("Resolve error %v (%T) is not a *FieldError", err, err)
			}
			if fe.Field != c.field || !strings.Contains(fe.Reason, c.inReason) {
				t.Errorf("error %q: want field %s with %q in the reason", err, c.field, c.inReason)
			}
		})
	}
}

// TestResolveFiles: referenced files are read through Env.Open.
func TestResolveFiles(t *testing.T) {
	env := scenario.Env{Catalog: builtin(t), Open: opener(traceFS)}
	t.Run("trace", func(t *testing.T) {
		s := scenario.Default()
		s.Workload = workload.Spec{Requests: 3, Trace: &workload.TraceSpec{File: "t.csv", Format: "csv", Speedup: 2}}
		res, err := s.Resolve(env)
		if err != nil {
			t.Fatal(err)
		}
		tr := res.Config.Workload.Trace
		if len(tr) != 3 || tr[1].ArrivalS != 0.25 || tr[2].InputTokens != 300 || tr[2].OutputTokens != 30 {
			t.Errorf("trace %+v: want the first 3 records at twice the speed", tr)
		}
	})
	t.Run("llmservingsim trace keeps its prompts' shared blocks", func(t *testing.T) {
		// Three prompts: the first two share their first 32 token ids (two
		// 16-token blocks), the third shares nothing.
		line := func(at, first int) string {
			ids := make([]string, 40)
			for i := range ids {
				v := i
				if i >= 32 || first != 0 {
					v = first + 1000*at + i
				}
				ids[i] = strconv.Itoa(v)
			}
			return fmt.Sprintf(`{"arrival_time_ns": %d, "output_toks": 4, "input_tok_ids": [%s]}`, at*200_000_000, strings.Join(ids, ",")) + "\n"
		}
		fsys := fstest.MapFS{"w.jsonl": {Data: []byte(line(0, 0) + line(1, 0) + line(2, 7))}}
		s := scenario.Default()
		s.Workload = workload.Spec{Trace: &workload.TraceSpec{File: "w.jsonl", Format: "llmservingsim"}}
		res, err := s.Resolve(scenario.Env{Catalog: builtin(t), Open: opener(fsys)})
		if err != nil {
			t.Fatal(err)
		}
		w := res.Config.Workload
		tr := w.Trace
		if len(tr) != 3 || w.TraceHashTokens != 16 || len(tr[0].HashIDs) != 2 || !slices.Equal(tr[0].HashIDs, tr[1].HashIDs) || tr[2].HashIDs[0] == tr[0].HashIDs[0] {
			t.Fatalf("trace %+v, %d tokens a hash", tr, w.TraceHashTokens)
		}
		rep, err := sim.Run(context.Background(), res.Config)
		if err != nil {
			t.Fatal(err)
		}
		// The second prompt finds the first's 32 tokens cached (of 120).
		if rep.PrefixCacheHitRatio <= 0 {
			t.Errorf("prefix-cache hit ratio %v: the shared blocks were not reused", rep.PrefixCacheHitRatio)
		}
	})
	t.Run("empirical lengths", func(t *testing.T) {
		s := scenario.Default()
		s.Workload.InputTokens = workload.LengthSpec{Type: workload.LengthEmpirical, File: "lengths.csv", Column: "prompt"}
		res, err := s.Resolve(env)
		if err != nil {
			t.Fatal(err)
		}
		if res.Config.Workload.Input == nil {
			t.Error("no input sampler")
		}
	})
	t.Run("calibration", func(t *testing.T) {
		g, _ := builtin(t).GPU("h100-sxm")
		p := steptime.DefaultProfile(g)
		p.CPU.StepOverheadUS *= 2
		s := scenario.Default()
		s.Calibration = "mine"
		env := env
		env.Calibration = func(ref string) (*steptime.Profile, error) {
			if ref != "mine" {
				return nil, os.ErrNotExist
			}
			return &p, nil
		}
		res, err := s.Resolve(env)
		if err != nil || !reflect.DeepEqual(res.Config.Profile, p) {
			t.Fatalf("calibration: %v, profile %+v", err, res)
		}
		s.Calibration = "theirs"
		if _, err := s.Resolve(env); !errors.Is(err, os.ErrNotExist) || !strings.HasPrefix(err.Error(), "calibration: ") {
			t.Errorf("a failing calibration loader: %v", err)
		}
	})
}

// TestResolveValidatesTheCalibrationFirst: a calibration profile with an
// out-of-range memory adjustment is a bad calibration (a field error, 400 /
// exit 2), not an infeasible model (422 / exit 3).
//
// It fails today: Resolve computes the memory profile with the loaded
// profile's non_torch_adjust_gib before it calls prof.Validate, so NaN,
// +Inf or +100 GiB come back as memory.ErrDoesNotFit (with NaN, "only
// -9223372036854775808 blocks fit"). Fix: validate the profile right after
// loading it, before memory.Compute.
func TestResolveValidatesTheCalibrationFirst(t *testing.T) {
	g, _ := builtin(t).GPU("h100-sxm")
	for _, v := range []float64{math.NaN(), math.Inf(1), 100, -100} {
		p := steptime.DefaultProfile(g)
		p.NonTorchAdjustGiB = v
		s := scenario.Default()
		s.Calibration = "p"
		_, err := s.Resolve(scenario.Env{Catalog: builtin(t), Calibration: func(string) (*steptime.Profile, error) { return &p, nil }})
		var fe *scenario.FieldError
		if !errors.As(err, &fe) || fe.Field != "calibration.non_torch_adjust_gib" {
			t.Errorf("non_torch_adjust_gib %v: error %v, want a calibration.non_torch_adjust_gib field error", v, err)
		}
	}
}

// TestResolveExpertParallel: EP spreads the experts over the tp × dp GPUs
// of a replica, which leaves each GPU more KV cache than two independent
// replicas holding every expert; replicas with expert_parallel and no dp
// are read as data-parallel ranks.
func TestResolveExpertParallel(t *testing.T) {
	cat := builtin(t)
	s := scenario.Default()
	s.Model, s.Replicas = "qwen3-30b-a3b", 2
	dense, err := s.Resolve(scenario.Env{Catalog: cat})
	if err != nil {
		t.Fatal(err)
	}
	s.ExpertParallel = true
	ep, err := s.Resolve(scenario.Env{Catalog: cat})
	if err != nil {
		t.Fatal(err)
	}
	if c := dense.Config; c.Replicas != 2 || c.DP != 1 || c.MoETP != 1 || c.MoEEP != 1 {
		t.Errorf("two replicas: replicas %d dp %d moe %d×%d", c.Replicas, c.DP, c.MoETP, c.MoEEP)
	}
	if c := ep.Config; c.Replicas != 1 || c.DP != 2 || c.MoETP != 1 || c.MoEEP != 2 || ep.Setup.EP != 2 {
		t.Errorf("expert parallel: replicas %d dp %d moe %d×%d (setup %d)", c.Replicas, c.DP, c.MoETP, c.MoEEP, ep.Setup.EP)
	}
	if !(ep.Memory.WeightsBytes < dense.Memory.WeightsBytes && ep.Config.NumGPUBlocks > dense.Config.NumGPUBlocks) {
		t.Errorf("weights %v → %v, blocks %d → %d", dense.Memory.WeightsBytes, ep.Memory.WeightsBytes, dense.Config.NumGPUBlocks, ep.Config.NumGPUBlocks)
	}
}

// TestResolveExamples resolves every scenario under examples/ with its
// files.
func TestResolveExamples(t *testing.T) {
	env := scenario.Env{Catalog: builtin(t), Open: opener(os.DirFS(filepath.Join("..", "..", "..", "examples")))}
	for name, doc := range examples(t) {
		t.Run(name, func(t *testing.T) {
			s, err := scenario.Decode(strings.NewReader(doc), name)
			if err != nil {
				t.Fatal(err)
			}
			res, err := s.Resolve(env)
			if err != nil {
				t.Fatal(err)
			}
			if res.Config.NumGPUBlocks < 1 || res.Config.Model == nil || res.Config.GPU == nil {
				t.Errorf("resolved config %+v", res.Config)
			}
		})
	}
}

func TestEstimatedRequests(t *testing.T) {
	trace := make([]workload.TraceRecord, 40)
	for _, c := range []struct {
		name string
		w    sim.Workload
		want int
	}{
		{"a request count", sim.Workload{Requests: 1000}, 1000},
		{"a whole trace", sim.Workload{Trace: trace}, 40},
		{"a trace cut by the request count", sim.Workload{Requests: 25, Trace: trace}, 25},
		{"a request count beyond the trace", sim.Workload{Requests: 100, Trace: trace}, 40},
		{"open-loop stages: rate × duration", sim.Workload{Stages: []workload.StageSpec{{DurationS: 60, RateRPS: 4}, {DurationS: 30, RateRPS: 10}}}, 540},
		{"closed-loop stages: one request per client per second", sim.Workload{Stages: []workload.StageSpec{{DurationS: 20, Concurrency: 8}, {DurationS: 10, RateRPS: 2}}}, 180},
		{"stages cut by the request count", sim.Workload{Requests: 100, Stages: []workload.StageSpec{{DurationS: 60, RateRPS: 4}}}, 100},
		{"a request count beyond the stages", sim.Workload{Requests: 1000, Stages: []workload.StageSpec{{DurationS: 60, RateRPS: 4}}}, 240},
		{"fractional stage totals round down", sim.Workload{Stages: []workload.StageSpec{{DurationS: 2.5, RateRPS: 1.5}}}, 3},
	} {
		t.Run(c.name, func(t *testing.T) {
			var s scenario.Scenario
			if got := s.EstimatedRequests(c.w); got != c.want {
				t.Errorf("EstimatedRequests = %d, want %d", got, c.want)
			}
		})
	}
}
