package plan

import (
	"context"
	"testing"

	"github.com/headroom-sim/headroom/sim"
)

// BenchmarkPlan50 is the speed case: a plan over 50 candidate
// configurations of a 10,000-request workload (with the headroom search of
// every candidate that meets the SLA). Target: under 30 s on 2 cores.
func BenchmarkPlan50(b *testing.B) {
	r := runner(b)
	s := small(10_000)
	s.Model = "llama-3.1-8b"
	s.Workload.Arrival.RateRPS = 20
	s.SLA = &sim.SLA{TTFTMS: map[string]float64{"p99": 1000}, TPOTMS: map[string]float64{"p99": 60}}
	var configs []Config
	for _, g := range []string{"h100-sxm", "h200", "a100-80gb", "l40s", "l4", "b200", "rtx-4090", "rtx-pro-6000", "mi300x", "a10g"} {
		for _, c := range []struct{ tp, replicas int }{{1, 1}, {1, 2}, {2, 1}, {2, 2}, {4, 1}} {
			configs = append(configs, Config{GPU: g, TP: c.tp, Replicas: c.replicas})
		}
	}
	var res *PlanResult
	for b.Loop() {
		var err error
		res, err = r.Plan(context.Background(), PlanSpec{Scenario: s, Configs: configs}, nil)
		if err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(configs)), "candidates")
	b.ReportMetric(float64(res.Simulations), "simulations")
	b.ReportMetric(b.Elapsed().Seconds()/float64(b.N), "s/plan")
}
