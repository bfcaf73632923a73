package plan

import (
	"context"
	"testing"

	"github.com/headroom-sim/headroom/internal/study/scenario"
	"github.com/headroom-sim/headroom/sim"
	"github.com/headroom-sim/headroom/sim/workload"
)

// BenchmarkPlan50 is the speed case: a plan over 50 candidate
// configurations of a 10,000-request workload, each judged at the target
// and at 1.3× it, with the headroom search of every one that qualifies,
// all on the same 10,000 requests. Target: under 15 s on 2 cores (median
// of 3: go test ./internal/study/plan -run '^$' -bench Plan50 -benchtime 1x -count 3).
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

// dayProfile is a working day in hourly steps (2 req/s at night, 22 at
// the early-afternoon peak), about 870,000 requests of lognormal lengths.
func dayProfile() scenario.Scenario {
	s := scenario.Default()
	s.Workload.Requests = 0
	s.Workload.Arrival = workload.ArrivalSpec{Type: workload.ArrivalPoisson}
	for h, rate := range []float64{3, 3, 2.5, 2, 2, 2, 3, 6, 10, 14, 18, 21, 22, 22, 20, 18, 16, 13, 11, 9, 7, 6, 5, 4} {
		s.Workload.RateProfile = append(s.Workload.RateProfile, workload.RatePoint{AtS: float64(h) * 3600, RateRPS: rate})
	}
	s.Workload.RateProfileEndS = 86400
	s.Workload.InputTokens = workload.LengthSpec{Type: workload.LengthLognormal, Mean: 1000, Stddev: 600, Max: 4096}
	s.Workload.OutputTokens = workload.LengthSpec{Type: workload.LengthLognormal, Mean: 200, Stddev: 150, Max: 1024}
	s.SLA = &sim.SLA{TTFTMS: map[string]float64{"p99": 1000}, TPOTMS: map[string]float64{"p99": 60}}
	return s
}

// BenchmarkPlanDay is the second speed case: a day-long rate
// profile in 15-minute windows, planned over three GPUs at TP 1 and 2
// (sized at the peak on 6,600 requests), then played through the
// recommendation twice, autoscaled and statically provisioned for the
// peak (about 870,000 requests each), with the capacity of each replica
// count. Target: under 60 s on 2 cores (median of 3: go test
// ./internal/study/plan -run '^$' -bench PlanDay -benchtime 1x -count 3).
func BenchmarkPlanDay(b *testing.B) {
	r := runner(b)
	spec := PlanSpec{Scenario: dayProfile(), GPUs: []string{"h100-sxm", "a100-80gb", "l40s"}, TPs: []int{1, 2}}
	var res *PlanResult
	for b.Loop() {
		var err error
		res, err = r.Plan(context.Background(), spec, nil)
		if err != nil {
			b.Fatal(err)
		}
	}
	if res.Day == nil {
		b.Fatal("no day")
	}
	b.ReportMetric(float64(len(res.Day.Windows)), "windows")
	b.ReportMetric(float64(res.Day.Autoscaled.Requests+res.Day.Static.Requests), "day-requests")
	b.ReportMetric(float64(res.Simulations), "simulations")
	b.ReportMetric(b.Elapsed().Seconds()/float64(b.N), "s/plan")
}

// BenchmarkSweep50 is the scaling case: a 50-point sweep (rates of
// 1 to 50 req/s, 2,000 requests each, Llama-3.1-8B on one H100). Its
// points are independent simulations, so the sweep should scale with the
// cores it is given: compare one core with two (median of 3:
// go test ./internal/study/plan -run '^$' -bench Sweep50 -benchtime 1x -count 3 -cpu 1,2).
func BenchmarkSweep50(b *testing.B) {
	r := runner(b)
	s := small(2_000)
	var rates []any
	for i := 1; i <= 50; i++ {
		rates = append(rates, float64(i))
	}
	spec := SweepSpec{Scenario: s, Axes: []Axis{{Path: "workload.arrival.rate_rps", Values: rates}}}
	var res *SweepResult
	for b.Loop() {
		var err error
		res, err = r.Sweep(context.Background(), spec, nil)
		if err != nil {
			b.Fatal(err)
		}
	}
	for _, p := range res.Points {
		if p.Error != "" {
			b.Fatalf("point %v: %s", p.Values, p.Error)
		}
	}
	b.ReportMetric(float64(len(res.Points)), "points")
	b.ReportMetric(b.Elapsed().Seconds()/float64(b.N), "s/sweep")
}
