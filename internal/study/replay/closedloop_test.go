package replay_test

import (
	"context"
	"testing"

	"github.com/headroom-sim/headroom/internal/study/replay"
	"github.com/headroom-sim/headroom/internal/study/scenario"
	"github.com/headroom-sim/headroom/sim"
	"github.com/headroom-sim/headroom/sim/steptime"
	"github.com/headroom-sim/headroom/sim/workload"
)

// closedLoop70B is the case: Llama-3.1-70B in fp8 on 4× H200, a
// closed loop of 64 users with 1,024-token prompts and outputs, two
// cycles of warm-up and twelve measured, vLLM's defaults (async
// scheduling, an 8,192-token budget). out sets the output lengths.
func closedLoop70B(t *testing.T, out workload.LengthSpec, edit func(*steptime.Profile)) *sim.Report {
	t.Helper()
	s := scenario.Default()
	s.Model, s.GPU, s.TP, s.WeightsDType = "llama-3.1-70b", "h200", 4, "fp8"
	s.StepTime.Backend = steptime.BackendFormula
	s.Workload.Requests, s.Workload.WarmupRequests = 64*12, 64*2
	s.Workload.Arrival = workload.ArrivalSpec{Type: workload.ArrivalClosedLoop, Concurrency: 64}
	s.Workload.InputTokens = workload.LengthSpec{Type: workload.LengthFixed, Value: 1024}
	s.Workload.OutputTokens = out
	res, err := s.Resolve(scenario.Env{Catalog: builtin(t)})
	if err != nil {
		t.Fatal(err)
	}
	if edit != nil {
		edit(&res.Config.Profile)
	}
	rep, err := sim.Run(context.Background(), res.Config)
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// A closed loop whose requests all decode the same number of tokens stays
// locked in cohorts: vLLM decodes every running request once a step, so
// requests prefilled together finish together, their users send again
// together, and the prefill steps of a cohort (a third of a second each
// here) take in every arrival that falls during them. It is locked with
// every delay of the request path at zero, and it stays locked with the
// path's default distributions, whose spread (a millisecond, as the
// residency traces show) is far below the steps that capture a cohort.
// What unlocks it is requests of unequal length: with outputs spread
// three tokens either way the cohorts drift apart in part, more with 1%
// (0.17 of the requests co-start with 10%); a closed loop replayed from a
// summary's mean length is given the three tokens
// (replay.ClosedLoopOutputSpreadTokens), the partial lock the measured
// runs show.
func TestClosedLoopLockAndItsSpread(t *testing.T) {
	fixed := workload.LengthSpec{Type: workload.LengthFixed, Value: 1024}
	noPath := func(p *steptime.Profile) { p.Frontend = steptime.FrontendCoeffs{} }
	if r := closedLoop70B(t, fixed, noPath).CoStartedRatio; r < 0.9 {
		t.Errorf("fixed lengths, no delays: co_started_ratio %.3f, want a lock (>= 0.9)", r)
	}
	locked := closedLoop70B(t, fixed, nil)
	if r := locked.CoStartedRatio; r < 0.9 {
		t.Errorf("fixed lengths, the default request path: co_started_ratio %.3f, want the lock to hold (>= 0.9)", r)
	}
	d := replay.ClosedLoopOutputSpreadTokens
	spread := closedLoop70B(t, workload.LengthSpec{Type: workload.LengthUniform, Min: 1024 - d, Max: 1024 + d}, nil)
	wide := closedLoop70B(t, workload.LengthSpec{Type: workload.LengthUniform, Min: 1014, Max: 1034}, nil)
	t.Logf("co_started_ratio %.3f locked, %.3f ±%d tokens, %.3f ±1%%; mean TTFT %.1f, %.1f, %.1f ms",
		locked.CoStartedRatio, spread.CoStartedRatio, d, wide.CoStartedRatio, locked.TTFTMS.Mean, spread.TTFTMS.Mean, wide.TTFTMS.Mean)
	if !(spread.CoStartedRatio < locked.CoStartedRatio && wide.CoStartedRatio < spread.CoStartedRatio) {
		t.Errorf("co_started_ratio %.3f locked, %.3f with ±%d tokens, %.3f with ±1%%: want the lock loosening as the spread grows",
			locked.CoStartedRatio, spread.CoStartedRatio, d, wide.CoStartedRatio)
	}
	if r := wide.CoStartedRatio; r > 0.8 {
		t.Errorf("outputs within 1%% of 1,024: co_started_ratio %.3f, want the cohorts breaking up (<= 0.8)", r)
	}
	if !(wide.TTFTMS.Mean < spread.TTFTMS.Mean && spread.TTFTMS.Mean < locked.TTFTMS.Mean) {
		t.Errorf("mean TTFT %.1f ms locked, %.1f ±%d tokens, %.1f ±1%%: want it falling as the lock loosens", locked.TTFTMS.Mean, spread.TTFTMS.Mean, d, wide.TTFTMS.Mean)
	}
}
