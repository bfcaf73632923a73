package calibrate

import (
	"bytes"
	"context"
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/headroom-sim/headroom/catalogs"
	"github.com/headroom-sim/headroom/internal/adapter/measured"
	"github.com/headroom-sim/headroom/internal/study/replay"
	"github.com/headroom-sim/headroom/internal/study/scenario"
	"github.com/headroom-sim/headroom/sim"
	"github.com/headroom-sim/headroom/sim/steptime"
)

// syntheticRun simulates a scenario with a known profile and records it
// as a measured run, so a fit has a ground truth to recover.
func syntheticRun(t *testing.T, truth steptime.Profile, requests int) *measured.Run {
	t.Helper()
	cat, _ := catalogs.Builtin()
	s := scenario.Default()
	s.Workload.Requests = requests
	s.Workload.Arrival.RateRPS = 8
	res, err := s.Resolve(scenario.Env{Catalog: cat})
	if err != nil {
		t.Fatal(err)
	}
	res.Config.Profile = truth
	run := &measured.Run{Name: "synthetic", Model: "llama-3.1-8b", GPU: "h100-sxm", TP: 1, DP: 1, ServerSide: true}
	_, err = sim.Run(context.Background(), res.Config, sim.WithRequestSink(func(q sim.RequestSample) {
		run.Requests = append(run.Requests, measured.Request{
			SendS: q.SentS, InputTokens: q.InputTokens, OutputTokens: q.OutputTokens,
			TTFTS: q.TTFTMS / 1e3, E2ES: q.E2EMS / 1e3,
		})
	}))
	if err != nil {
		t.Fatal(err)
	}
	return run
}

func TestFitRecoversASlowerGPU(t *testing.T) {
	cat, _ := catalogs.Builtin()
	g, _ := cat.GPU("h100-sxm")
	truth := steptime.DefaultProfile(g)
	truth.Scale.Memory = 0.8   // the "real" GPU streams weights 20% slower
	truth.Scale.Overhead = 1.5 // and its host is slower
	run := syntheticRun(t, truth, 150)
	res, err := Fit(context.Background(), run, cat, Options{MaxEvaluations: 120})
	if err != nil {
		t.Fatal(err)
	}
	if !(res.After.Loss < res.Before.Loss/4) {
		t.Fatalf("loss %.5f → %.5f: the fit did not explain the slower GPU", res.Before.Loss, res.After.Loss)
	}
	if m := res.After.MedianAPE["tpot_ms"]; m > 3 {
		t.Errorf("TPOT median APE after the fit %.1f%%", m)
	}
	if m := res.Profile.Scale.Memory; !(m > 0 && m < 0.95) {
		t.Errorf("memory speed ×%.3f did not move down towards 0.8", m)
	}
	if err := res.Profile.Validate(); err != nil {
		t.Fatal(err)
	}
}

func TestFitRefusesTinyRuns(t *testing.T) {
	cat, _ := catalogs.Builtin()
	g, _ := cat.GPU("h100-sxm")
	run := syntheticRun(t, steptime.DefaultProfile(g), 10)
	if _, err := Fit(context.Background(), run, cat, Options{}); !errors.Is(err, ErrTooFewRequests) {
		t.Fatalf("err %v, want ErrTooFewRequests", err)
	}
}

// TestEvaluateOnAStage: a run measured 25% slower than the default
// profile predicts in its second half (and 2× slower in its first) must
// come out 20% off on every figure of stage 1: |p − 1.25 p| / 1.25 p.
func TestEvaluateOnAStage(t *testing.T) {
	cat, _ := catalogs.Builtin()
	g, _ := cat.GPU("h100-sxm")
	run := syntheticRun(t, steptime.DefaultProfile(g), 100)
	run.SplitByTime(2)
	for i := range run.Requests {
		q := &run.Requests[i]
		f := map[int]float64{0: 2, 1: 1.25}[q.Stage]
		q.TTFTS, q.E2ES = q.TTFTS*f, q.E2ES*f
	}
	e, err := Evaluate(context.Background(), run, cat, nil, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(e.Figures) != 3*len(Quantiles) {
		t.Fatalf("%d figures, want TTFT, TPOT and E2E at %v", len(e.Figures), Quantiles)
	}
	// The replay reproduces the synthetic run to within 1% (the default
	// profile produced it), so each APE is 20% ± 0.8 points.
	for _, f := range e.Figures {
		if f.APE < 19.2 || f.APE > 20.8 || f.Measured <= f.Predicted {
			t.Errorf("%s %s: measured %v, predicted %v, APE %.2f%%; want 20%% ± 0.8", f.Metric, f.Quantile, f.Measured, f.Predicted, f.APE)
		}
	}
	// Loss: the mean squared log-ratio, ln(1/1.25)² = 0.0498 per figure.
	if want := math.Pow(math.Log(0.8), 2); math.Abs(e.Loss-want) > 0.003 {
		t.Errorf("loss %.4f, want %.4f", e.Loss, want)
	}
	if e.MedianAPE["ttft_ms"] < 19.2 || e.MedianAPE["ttft_ms"] > 20.8 {
		t.Errorf("median TTFT APE %.2f%%", e.MedianAPE["ttft_ms"])
	}
	if !strings.Contains(e.Run, "stage 1") {
		t.Errorf("run name %q", e.Run)
	}
}

func TestFileRoundTripAndErrors(t *testing.T) {
	cat, _ := catalogs.Builtin()
	g, _ := cat.GPU("a100-80gb")
	f := &File{SchemaVersion: FileSchemaVersion, Kind: FileKind, GPU: g.ID, Model: "llama-3.1-8b", TP: 1, Profile: steptime.DefaultProfile(g)}
	var b bytes.Buffer
	if err := f.Write(&b); err != nil {
		t.Fatal(err)
	}
	got, err := Read(&b, "p.json")
	if err != nil {
		t.Fatal(err)
	}
	if got.GPU != f.GPU || !reflect.DeepEqual(got.Profile, f.Profile) {
		t.Fatalf("round trip changed the file: %+v", got)
	}
	for _, c := range []struct{ name, body, want string }{
		{"not json", "nope", "not a headroom calibration file"},
		{"bad coefficient", `{"kind":"headroom.calibration","schema_version":1,"profile":{"schema_version":3,"gemm":{"bf16":{"efficiency":3}}}}`, "gemm.bf16.efficiency"},
		{"old profile", `{"kind":"headroom.calibration","schema_version":1,"profile":{"schema_version":1,"gemm_efficiency":0.5}}`, "run headroom calibrate again"},
		{"newer schema", `{"kind":"headroom.calibration","schema_version":99,"profile":{"gemm_efficiency":0.5}}`, "newer"},
	} {
		if _, err := Read(strings.NewReader(c.body), "x.json"); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err %v, want it to mention %q", c.name, err, c.want)
		}
	}
}

// syntheticStages simulates a scenario at each rate with a known profile
// and keeps only what a summary-only tool writes: per stage its rate,
// counts, mean lengths and latency quantiles.
func syntheticStages(t *testing.T, truth steptime.Profile, rates []float64, requests int) *measured.Run {
	t.Helper()
	cat, _ := catalogs.Builtin()
	run := &measured.Run{Name: "stages", Model: "meta-llama/Llama-3.1-8B", GPU: "h100-sxm", Format: "sglang-bench"}
	for i, r := range rates {
		s := scenario.Default()
		s.Workload.Requests = requests
		s.Workload.Arrival.RateRPS = r
		res, err := s.Resolve(scenario.Env{Catalog: cat})
		if err != nil {
			t.Fatal(err)
		}
		res.Config.Profile = truth
		rep, err := sim.Run(context.Background(), res.Config)
		if err != nil {
			t.Fatal(err)
		}
		q := func(s interface{ At(string) (float64, bool) }) map[string]float64 {
			m := map[string]float64{}
			for _, k := range []string{"mean", "p50", "p90", "p99"} {
				m[k], _ = s.At(k)
			}
			return m
		}
		a := &measured.Aggregate{TTFTMS: q(rep.TTFTMS), TPOTMS: q(rep.TPOTMS), E2EMS: q(rep.E2EMS), Completed: rep.Requests.Completed,
			RateRPS: r, MeanInputTokens: 512, MeanOutputTokens: 256, RequestsPerS: rep.Throughput.RequestsPerS}
		run.Stages = append(run.Stages, measured.StageInfo{Index: i, Strategy: "poisson", RateRPS: r, Aggregate: a})
	}
	return run
}

// TestFitOnStageAggregates: a file with only the tool's summaries of
// several benchmarks calibrates from them, each benchmark replayed from
// the load it states, and says so.
func TestFitOnStageAggregates(t *testing.T) {
	cat, _ := catalogs.Builtin()
	g, _ := cat.GPU("h100-sxm")
	truth := steptime.DefaultProfile(g)
	truth.Scale.Memory = 0.8
	run := syntheticStages(t, truth, []float64{4, 12}, 120)
	if n := Completed(run, -1); n != 240 {
		t.Fatalf("Completed = %d, want 240 (the summaries' counts)", n)
	}
	res, err := Fit(context.Background(), run, cat, Options{MaxEvaluations: 80})
	if err != nil {
		t.Fatal(err)
	}
	if res.Basis != replay.BasisAggregate || res.After.Basis != replay.BasisAggregate || res.After.Parts != 2 {
		t.Errorf("basis %q / %q, %d parts", res.Basis, res.After.Basis, res.After.Parts)
	}
	if !(res.After.Loss < res.Before.Loss/4) || res.After.MedianAPE["tpot_ms"] > 3 {
		t.Fatalf("loss %.5f → %.5f, TPOT median APE %.1f%%", res.Before.Loss, res.After.Loss, res.After.MedianAPE["tpot_ms"])
	}
	stages := map[int]int{}
	for _, f := range res.After.Figures {
		if f.Stage == nil {
			t.Fatalf("figure %+v without its stage", f)
		}
		stages[*f.Stage]++
	}
	if len(stages) != 2 || stages[0] != 12 || stages[1] != 12 {
		t.Errorf("figures per stage %v, want 12 each (3 metrics × 4 quantiles)", stages)
	}
	// One stage: fitted on its summary alone; the other is held out.
	one := 1
	res, err = Fit(context.Background(), run, cat, Options{MaxEvaluations: 40, Stage: &one})
	if err != nil || res.After.Parts != 1 || !strings.Contains(res.After.Run, "stage 1 (poisson)") {
		t.Fatalf("stage fit: %+v, %v", res, err)
	}
	e, err := Evaluate(context.Background(), run, cat, &res.Profile, 0, nil)
	if err != nil || e.Basis != replay.BasisAggregate || len(e.Figures) != 12 {
		t.Fatalf("held-out stage: %+v, %v", e, err)
	}
	// A benchmark where nothing completed has nothing to fit.
	run.Stages[0].Aggregate = &measured.Aggregate{Failed: 100, MeanInputTokens: 512, MeanOutputTokens: 256, RateRPS: 4}
	zero := 0
	if _, err := Fit(context.Background(), run, cat, Options{Stage: &zero}); !errors.Is(err, ErrTooFewRequests) {
		t.Errorf("all-failed stage: %v, want ErrTooFewRequests", err)
	}
}
