package plan

import (
	"context"
	"io"
	"math"
	"strings"
	"testing"

	"github.com/headroom-sim/headroom/internal/study/scenario"
	"github.com/headroom-sim/headroom/sim"
	"github.com/headroom-sim/headroom/sim/engine"
	"github.com/headroom-sim/headroom/sim/workload"
)

// eagleScenario is Llama-3.1-8B on an H100 with EAGLE-3 drafting 4
// tokens, as the shared vllm+eagle run served it, at rate_rps with
// acceptance rate (nil: the published default).
func eagleScenario(rateRPS float64, rate *float64) scenario.Scenario {
	s := scenario.Default()
	s.Engine.MaxNumSeqs, s.Engine.MaxModelLen, s.Engine.AsyncScheduling = 128, 512, false
	s.Engine.Speculative = &engine.Speculative{Method: engine.SpecEAGLE3, NumSpeculativeTokens: 4}
	if rate != nil {
		s.Engine.Speculative.Acceptance = &engine.Acceptance{Rate: rate}
	}
	s.Workload.Requests = 120
	s.Workload.Arrival = workload.ArrivalSpec{Type: workload.ArrivalPoisson, RateRPS: rateRPS}
	s.Workload.InputTokens = workload.LengthSpec{Type: workload.LengthFixed, Value: 200}
	s.Workload.OutputTokens = workload.LengthSpec{Type: workload.LengthFixed, Value: 64}
	return s
}

// The verdict: at the acceptance the shared run saw speculation is
// slower, at the published default faster, and at the break-even rate
// the E2E P50 with and without speculation meet (within the bisection's
// step); a scenario that does not speculate has none.
func TestSpeculationVerdict(t *testing.T) {
	r := runner(t)
	ctx := context.Background()
	low := 0.05
	v, err := r.Speculation(ctx, eagleScenario(5, &low), nil)
	if err != nil {
		t.Fatal(err)
	}
	if v.LowLoad == nil || v.AtLoad == nil || !strings.HasPrefix(v.AtLoad.Load, "the scenario's load: 5 req/s") {
		t.Fatalf("verdict %+v", v)
	}
	if math.Abs(v.MeanAcceptanceLength-(1+0.05+0.0025+0.000125+0.00000625)) > 1e-4 {
		t.Errorf("assumed mean acceptance length %g", v.MeanAcceptanceLength)
	}
	for i, at := range []*sim.SpeculationAt{v.LowLoad, v.AtLoad} {
		name := []string{"low load", "at load"}[i]
		if !(at.SpeedupRatio < 0.85) {
			t.Errorf("%s: speed-up %.3f at 5%% acceptance, want below 0.85 (the shared run was 1.6x slower)", name, at.SpeedupRatio)
		}
		be := at.BreakEvenRate
		if be == nil || !(*be > 0.1 && *be < 0.8) || at.BreakEvenMeanAcceptanceLength == nil {
			t.Fatalf("%s: break-even rate %v, want one in (0.1, 0.8)", name, be)
		}
		s := eagleScenario(5, be)
		if i == 0 {
			s, _ = lowLoad(s)
		}
		o := r.Run(ctx, s)
		if o.Err != nil {
			t.Fatal(o.Err)
		}
		if got := o.Report.E2EMS.P50; math.Abs(got-at.E2EP50PlainMS)/at.E2EP50PlainMS > 0.03 {
			t.Errorf("%s: at the break-even rate %.4f the E2E P50 is %.1f ms, without speculation %.1f ms", name, *be, got, at.E2EP50PlainMS)
		}
	}
	// The published default (0.8): faster, with the warning carried.
	v, err = r.Speculation(ctx, eagleScenario(5, nil), nil)
	if err != nil {
		t.Fatal(err)
	}
	if !(v.LowLoad.SpeedupRatio > 1.5) || len(v.Notes) != 1 || !strings.Contains(v.Notes[0], "MT-bench") {
		t.Errorf("default acceptance: speed-up %.3f, notes %q", v.LowLoad.SpeedupRatio, v.Notes)
	}
	plain := eagleScenario(5, nil)
	plain.Engine.Speculative = nil
	if v, err := r.Speculation(ctx, plain, nil); v != nil || err != nil {
		t.Errorf("no speculation: verdict %+v, %v", v, err)
	}
}

// A sweep of a speculating scenario answers for its base scenario and
// sweeps the acceptance like any field: the E2E P50 falls as it rises.
func TestSweepAcceptance(t *testing.T) {
	r := runner(t)
	half := 0.5
	base := eagleScenario(5, &half)
	res, err := r.Sweep(context.Background(), SweepSpec{Scenario: base, Axes: []Axis{{Path: "engine.speculative.acceptance.rate", Values: []any{0.0, 0.4, 0.8}}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	col := -1
	for i, c := range res.Columns {
		if c == "e2e_ms.p50" {
			col = i
		}
	}
	if col < 0 || len(res.Points) != 3 {
		t.Fatalf("columns %v, %d points", res.Columns, len(res.Points))
	}
	for i := 1; i < 3; i++ {
		if !(res.Points[i].Metrics[col] < res.Points[i-1].Metrics[col]) {
			t.Errorf("E2E P50 %.1f ms at rate %v, %.1f at %v: want it to fall", res.Points[i].Metrics[col], res.Points[i].Values[0], res.Points[i-1].Metrics[col], res.Points[i-1].Values[0])
		}
	}
	if v := res.Speculation; v == nil || v.AtLoad == nil || v.LowLoad == nil {
		t.Fatalf("speculation verdict %+v", v)
	}
	res, err = r.Sweep(context.Background(), SweepSpec{Scenario: base, SkipSpeculationVerdict: true, Axes: []Axis{{Path: "engine.speculative.acceptance.rate", Values: []any{0.5}}}}, nil)
	if err != nil || res.Speculation != nil {
		t.Errorf("skipped verdict: %+v, %v", res.Speculation, err)
	}
}

// A trace's lengths come with its arrivals: no low-load comparison, and
// a note saying why.
func TestSpeculationVerdictTrace(t *testing.T) {
	half := 0.5
	s := eagleScenario(5, &half)
	s.Workload = workload.Spec{Trace: &workload.TraceSpec{File: "t.csv", Format: "csv"}}
	r := runner(t)
	r.Env.Open = func(string) (io.ReadCloser, error) {
		return io.NopCloser(strings.NewReader("arrival_s,input_tokens,output_tokens\n0,100,20\n0.5,80,30\n")), nil
	}
	v, err := r.Speculation(context.Background(), s, nil)
	if err != nil {
		t.Fatal(err)
	}
	if v.LowLoad != nil || v.AtLoad == nil || v.AtLoad.Load != "the scenario's trace" || len(v.Notes) != 1 || !strings.Contains(v.Notes[0], "no low-load comparison") {
		t.Errorf("verdict %+v", v)
	}
}
