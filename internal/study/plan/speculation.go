package plan

import (
	"context"
	"fmt"
	"math"

	"github.com/headroom-sim/headroom/internal/study/scenario"
	"github.com/headroom-sim/headroom/sim"
	"github.com/headroom-sim/headroom/sim/engine"
	"github.com/headroom-sim/headroom/sim/workload"
)

// Whether speculative decoding pays: the same scenario with and without
// it (num_speculative_tokens 0), at the assumed acceptance, and the
// acceptance at which the two are equal, found by bisection on the
// conditional rate (draft i accepted with probability rate^i; the E2E
// P50 falls as it rises). Two loads: one request in flight, where
// speculation helps most, and the scenario's own (the SLA's), where the
// batch may already fill the GPU.

// LowLoadRequests is how many requests the low-load comparison sends,
// one at a time.
const LowLoadRequests = 40

// breakEvenIterations halves the rate's interval to within 1/128.
const breakEvenIterations = 7

// Speculation is the planner's answer on speculative decoding for s
// (nil, nil when s does not speculate). rep, when given, is s already
// simulated (its run is reused).
func (r *Runner) Speculation(ctx context.Context, s scenario.Scenario, rep *sim.Report) (*sim.SpeculationVerdict, error) {
	if !s.Engine.Speculative.On() {
		return nil, nil
	}
	res, err := s.Resolve(r.env())
	if err != nil {
		return nil, err
	}
	sp := res.Config.Speculative
	v := &sim.SpeculationVerdict{AcceptanceSource: sp.AcceptanceSource,
		MeanAcceptanceLength: round4(1 + sp.ProposalRate*(engine.MeanAcceptanceLength(sp.PerPosition)-1))}
	at, err := r.speculationAt(ctx, s, rep, workloadLoadText(s.Workload))
	if err != nil {
		return nil, err
	}
	v.AtLoad = at
	if low, ok := lowLoad(s); ok {
		if v.LowLoad, err = r.speculationAt(ctx, low, nil, fmt.Sprintf("one request in flight (%d requests of the scenario's lengths, one after another)", LowLoadRequests)); err != nil {
			return nil, err
		}
	} else {
		v.Notes = append(v.Notes, "no low-load comparison: the workload is a trace or multi-turn, whose lengths come with their arrivals")
	}
	if sp.AcceptanceWarning != "" {
		v.Notes = append(v.Notes, sp.AcceptanceWarning)
	}
	return v, nil
}

// lowLoad is s with one request in flight at a time, of its lengths.
func lowLoad(s scenario.Scenario) (scenario.Scenario, bool) {
	w := s.Workload
	if w.Trace != nil || w.MultiTurn != nil {
		return s, false
	}
	w.Stages, w.RateProfile, w.RateProfileEndS, w.MaxConcurrency, w.WarmupRequests = nil, nil, 0, 0, 0
	w.Requests = LowLoadRequests
	w.Arrival = workload.ArrivalSpec{Type: workload.ArrivalClosedLoop, Concurrency: 1}
	s.Workload, s.SLA, s.Autoscale = w, nil, nil
	return s, true
}

// workloadLoadText says what the scenario's load is.
func workloadLoadText(w workload.Spec) string {
	a := w.Arrival
	switch {
	case w.Trace != nil:
		return "the scenario's trace"
	case len(w.Stages) > 0:
		return fmt.Sprintf("the scenario's %d stages", len(w.Stages))
	case len(w.RateProfile) > 0:
		return "the scenario's rate profile"
	case a.Type == workload.ArrivalClosedLoop:
		return fmt.Sprintf("the scenario's load: %d users in a closed loop", a.Concurrency)
	case a.RateRPS > 0:
		return fmt.Sprintf("the scenario's load: %g req/s (%s)", a.RateRPS, a.Type)
	}
	return "the scenario's load"
}

// withAcceptance is s speculating at conditional rate r (the n-gram
// proposal rate as s gives it).
func withAcceptance(s scenario.Scenario, r float64) scenario.Scenario {
	sp := *s.Engine.Speculative
	a := engine.Acceptance{Rate: &r}
	if sp.Acceptance != nil {
		a.ProposalRate = sp.Acceptance.ProposalRate
	}
	sp.Acceptance = &a
	s.Engine.Speculative = &sp
	return s
}

// withoutSpeculation is s with num_speculative_tokens 0.
func withoutSpeculation(s scenario.Scenario) scenario.Scenario {
	sp := *s.Engine.Speculative
	sp.NumSpeculativeTokens, sp.Acceptance = 0, nil
	s.Engine.Speculative = &sp
	return s
}

// speculationAt compares s with and without speculation and finds the
// break-even acceptance.
func (r *Runner) speculationAt(ctx context.Context, s scenario.Scenario, rep *sim.Report, load string) (*sim.SpeculationAt, error) {
	runs := []scenario.Scenario{withoutSpeculation(s), withAcceptance(s, 0), withAcceptance(s, 1)}
	if rep == nil {
		runs = append(runs, s)
	}
	outs := r.RunAll(ctx, runs, nil)
	for _, o := range outs {
		if o.Err != nil {
			return nil, o.Err
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if rep == nil {
		rep = outs[3].Report
	}
	plain, none, all := outs[0].Report, outs[1].Report, outs[2].Report
	at := &sim.SpeculationAt{Load: load,
		E2EP50MS: rep.E2EMS.P50, E2EP50PlainMS: plain.E2EMS.P50, TPOTP50MS: rep.TPOTMS.P50, TPOTP50PlainMS: plain.TPOTMS.P50,
		SpeedupRatio: ratio(plain.E2EMS.P50, rep.E2EMS.P50), TPOTSpeedupRatio: ratio(plain.TPOTMS.P50, rep.TPOTMS.P50)}
	target := plain.E2EMS.P50
	k := s.Engine.Speculative.NumSpeculativeTokens
	switch {
	case all.E2EMS.P50 >= target:
		at.BreakEven = fmt.Sprintf("slower at any acceptance: even with every draft accepted the E2E P50 is %.1f ms, against %.1f ms without speculation", all.E2EMS.P50, target)
		return at, nil
	case none.E2EMS.P50 <= target:
		at.BreakEven = fmt.Sprintf("faster even with no draft accepted (E2E P50 %.1f ms, against %.1f ms without speculation)", none.E2EMS.P50, target)
		return at, nil
	}
	lo, hi := 0.0, 1.0
	for range breakEvenIterations {
		mid := (lo + hi) / 2
		o := r.Run(ctx, withAcceptance(s, mid))
		if o.Err != nil {
			return nil, o.Err
		}
		if o.Report.E2EMS.P50 > target {
			lo = mid
		} else {
			hi = mid
		}
	}
	rate := round4((lo + hi) / 2)
	length := round4(engine.MeanAcceptanceLength(engine.Geometric(rate, k)))
	at.BreakEvenRate, at.BreakEvenMeanAcceptanceLength = &rate, &length
	at.BreakEven = fmt.Sprintf("slower below a conditional acceptance rate of %.3f (mean acceptance length %.2f, %.1f%% of drafts accepted)", rate, length, 100*(length-1)/float64(k))
	return at, nil
}

// ratio is a ÷ b, 0 when b is not positive.
func ratio(a, b float64) float64 {
	if !(b > 0) {
		return 0
	}
	return round4(a / b)
}

func round4(v float64) float64 { return math.Round(v*1e4) / 1e4 }
