package sim

import (
	"context"
	"testing"

	"github.com/headroom-sim/headroom/sim/workload"
)

// TestLongestRequestIsTheRunsLongest: the longest request LongestRequest
// draws is the longest the run sends (unclamped lognormal lengths, a
// shared prefix, warm-up requests included), and a trace's longest.
func TestLongestRequestIsTheRunsLongest(t *testing.T) {
	cfg := openConfig(t)
	in, _ := workload.NewLengthSampler(workload.LengthSpec{Type: workload.LengthLognormal, Mean: 300, Stddev: 400}, "in", nil)
	out, _ := workload.NewLengthSampler(workload.LengthSpec{Type: workload.LengthNormal, Mean: 100, Stddev: 60}, "out", nil)
	cfg.Engine.MaxModelLen = 131072
	cfg.NumGPUBlocks = 1 << 20
	cfg.Workload = Workload{Requests: 300, Warmup: 20, Arrival: workload.ArrivalSpec{Type: workload.ArrivalPoisson, RateRPS: 50},
		Input: in, Output: out, SharedPrefix: &workload.SharedPrefixSpec{Groups: 3, PrefixTokens: 64}}
	cfg.Seed = 7
	s, err := newSimulator(&cfg)
	if err != nil {
		t.Fatal(err)
	}
	longest := 0
	s.onIssue = func(r *request) { longest = max(longest, r.input+r.output) }
	if err := s.loop(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := LongestRequest(&cfg.Workload, cfg.Seed, 0); got != longest {
		t.Errorf("LongestRequest %d, the run's longest %d", got, longest)
	}
	if got := LongestRequest(&cfg.Workload, cfg.Seed+1, 0); got == longest {
		t.Errorf("another seed gives the same %d: the draws do not follow the seed", got)
	}
	tr := Workload{Trace: []workload.TraceRecord{{InputTokens: 10, OutputTokens: 5}, {InputTokens: 3, OutputTokens: 40}}}
	if got := LongestRequest(&tr, 1, 0); got != 43 {
		t.Errorf("trace longest %d, want 43", got)
	}
}
