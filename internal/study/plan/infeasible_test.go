package plan

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/headroom-sim/headroom/internal/study/scenario"
	"github.com/headroom-sim/headroom/sim"
	"github.com/headroom-sim/headroom/sim/workload"
)

// unservable is a scenario whose every prompt is longer than its
// max_model_len: every request is rejected, none completes.
func unservable(requests int) scenario.Scenario {
	s := small(requests)
	s.Engine.MaxModelLen = 1024
	s.Workload.InputTokens = workload.LengthSpec{Type: workload.LengthFixed, Value: 2048}
	s.SLA = &sim.SLA{TTFTMS: map[string]float64{"p99": 1000}, TPOTMS: map[string]float64{"p99": 100}}
	return s
}

// TestPlanWithoutCompletionsRecommendsNothing (issue 23): a candidate
// whose requests are all rejected does not meet the SLA, and the plan says
// why instead of recommending the cheapest GPU at $0 per million tokens.
func TestPlanWithoutCompletionsRecommendsNothing(t *testing.T) {
	res, err := runner(t).Plan(context.Background(), PlanSpec{Scenario: unservable(50), GPUs: []string{"l4", "h100-sxm"}, TPs: []int{1}, MaxReplicas: 2}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Recommendation != nil || len(res.Candidates) != 0 {
		t.Fatalf("recommendation %+v, candidates %+v: want none", res.Recommendation, res.Candidates)
	}
	if len(res.Missed) == 0 {
		t.Fatalf("no missed candidate: %+v", res)
	}
	for _, m := range res.Missed {
		if !strings.Contains(m.WhyNot, "no request completed") {
			t.Errorf("%s: why not %q, want it to say no request completed", Label(m.Config), m.WhyNot)
		}
	}
	if !strings.Contains(res.Summary, "No configuration meets the SLA") || !strings.Contains(res.Summary, "no request completed") {
		t.Errorf("summary %q", res.Summary)
	}
}

// TestMaxLoadWithoutCompletionsIsZero (issue 23): no load meets an SLA
// nothing completes under; the search says why.
func TestMaxLoadWithoutCompletionsIsZero(t *testing.T) {
	res, err := runner(t).MaxLoad(context.Background(), LoadSpec{Scenario: unservable(50), MaxProbes: 6}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.MaxLoad != 0 || !strings.Contains(res.Reason, "no request completed") {
		t.Fatalf("max load %g, reason %q: want 0 and why", res.MaxLoad, res.Reason)
	}
	for _, p := range res.Probes {
		if p.Met {
			t.Errorf("probe at %g met the SLA", p.Load)
		}
	}
}

// TestCheckIsThePlansOwn: Check refuses what Plan refuses before it
// simulates, with the plan's own words, and passes what Plan runs.
func TestCheckIsThePlansOwn(t *testing.T) {
	r := runner(t)
	ok := PlanSpec{Scenario: small(50), GPUs: []string{"h100-sxm"}, TPs: []int{1}}
	if err := r.Check(ok); err != nil {
		t.Fatalf("Check of a plan that runs: %v", err)
	}
	big := small(50)
	big.Model = "llama-3.1-405b"
	pruned := PlanSpec{Scenario: big, GPUs: []string{"l4"}, TPs: []int{1}}
	err := r.Check(pruned)
	var nc *NoCandidatesError
	if !errors.As(err, &nc) || !errors.Is(err, ErrNoCandidates) || !strings.Contains(err.Error(), "l4 tp 1: does not fit") {
		t.Fatalf("Check of a plan with every shape pruned = %v", err)
	}
	if _, perr := r.Plan(context.Background(), pruned, nil); perr == nil || perr.Error() != err.Error() {
		t.Errorf("Plan says %v, Check says %v", perr, err)
	}
	staged := small(50)
	staged.Workload.Stages = []workload.StageSpec{{DurationS: 10, RateRPS: 1}}
	var fe *scenario.FieldError
	if err := r.Check(PlanSpec{Scenario: staged, GPUs: []string{"h100-sxm"}}); !errors.As(err, &fe) || fe.Field != "scenario.workload.stages" {
		t.Errorf("Check of a staged plan = %v, want scenario.workload.stages", err)
	}
	noSLA := small(50)
	noSLA.SLA = nil
	if err := r.Check(PlanSpec{Scenario: noSLA}); !errors.Is(err, ErrNoSLA) {
		t.Errorf("Check without an SLA = %v, want ErrNoSLA", err)
	}
	bounded := runner(t)
	bounded.Env.MaxRequests = 10
	if err := bounded.Check(ok); !errors.Is(err, scenario.ErrTooLarge) {
		t.Errorf("Check past the request bound = %v, want scenario.ErrTooLarge", err)
	}
}
