package plot_test

import (
	"context"
	"math"
	"sync"
	"testing"

	"github.com/headroom-sim/headroom/catalogs"
	"github.com/headroom-sim/headroom/internal/adapter/plot"
	"github.com/headroom-sim/headroom/internal/study/plan"
	"github.com/headroom-sim/headroom/internal/study/scenario"
	"github.com/headroom-sim/headroom/sim"
	"github.com/headroom-sim/headroom/sim/stats"
)

// run is one small simulation shared by the tests: Llama-3.1-8B on one
// H100 pushed past its KV cache so the time series has queueing and
// preemptions to show.
var run = sync.OnceValues(func() (*runResult, error) {
	cfg, err := smallConfig()
	if err != nil {
		return nil, err
	}
	d := plot.NewDistributions()
	rep, err := sim.Run(context.Background(), cfg, d.Options()...)
	if err != nil {
		return nil, err
	}
	return &runResult{rep: rep, dists: d}, nil
})

func smallConfig() (sim.Config, error) {
	cat, err := catalogs.Builtin()
	if err != nil {
		return sim.Config{}, err
	}
	s := scenario.Default()
	s.Workload.Requests = 400
	s.Workload.Arrival.RateRPS = 25
	s.Report.Timeseries = true
	res, err := s.Resolve(scenario.Env{Catalog: cat})
	if err != nil {
		return sim.Config{}, err
	}
	return res.Config, nil
}

func mustConfig(t *testing.T) sim.Config {
	t.Helper()
	cfg, err := smallConfig()
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

type runResult struct {
	rep   *sim.Report
	dists *plot.Distributions
}

func simRun(t *testing.T) *runResult {
	t.Helper()
	r, err := run()
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func sum(p50, p99 float64) stats.Summary {
	return stats.Summary{Mean: p50 * 1.1, P50: p50, P90: (p50 + p99) / 2, P95: p99 * 0.9, P99: p99, P999: p99 * 1.2, Max: p99 * 1.5, Count: 100}
}

func ptr[T any](v T) *T { return &v }

func curveFixture() *plan.CurveResult {
	c := &plan.CurveResult{Dimension: plan.DimRate, Knee: 3, KneeReason: "last step within the SLA"}
	loads := []float64{2, 4, 8, 12, 16, 20}
	thr := []float64{2, 4, 7.9, 11.8, 13.1, 13.2}
	ttft := []float64{40, 45, 60, 120, 2500, 15000}
	tpot := []float64{9, 11, 16, 24, 31, 33}
	for i, l := range loads {
		c.Points = append(c.Points, plan.CurvePoint{
			Load: l, ThroughputRPS: thr[i], OutputTokensPerS: thr[i] * 256, Completed: int(thr[i] * 60),
			TTFTMS: sum(ttft[i], ttft[i]*3), TPOTMS: sum(tpot[i], tpot[i]*1.4), ITLMS: sum(tpot[i], tpot[i]*2),
			E2EMS: sum(ttft[i]+255*tpot[i], (ttft[i]+255*tpot[i])*2), SLAMet: ptr(i <= 3), Knee: i == 3,
		})
	}
	return c
}

func slaFixture() *sim.SLA {
	return &sim.SLA{TTFTMS: map[string]float64{"p99": 1000}, TPOTMS: map[string]float64{"p50": 25, "p99": 40}}
}

func sweep2Fixture() *plan.SweepResult {
	s := &plan.SweepResult{Axes: []string{"engine.max_num_seqs", "workload.arrival.rate_rps"},
		Columns: []string{"ttft_ms.p99", "e2e_ms.p99", "throughput.output_tokens_per_s"}}
	for i, seqs := range []any{32, 64, 128, 256} {
		for j, rate := range []any{5.0, 10.0, 20.0} {
			pt := plan.SweepPoint{Values: []any{seqs, rate},
				Metrics: []float64{float64(100*(j+1)) / float64(i+1), float64(3000*(j+1)) / float64(i+1), float64(1000 * (j + 1))}}
			if i == 0 && j == 2 {
				pt = plan.SweepPoint{Values: []any{seqs, rate}, Error: "model does not fit"}
			}
			s.Points = append(s.Points, pt)
		}
	}
	return s
}

func sweep1Fixture(numeric bool) *plan.SweepResult {
	s := &plan.SweepResult{Axes: []string{"gpu"}, Columns: []string{"ttft_ms.p99", "e2e_ms.p99"}}
	vals := []any{"h100-sxm", "a100-80gb", "l40s"}
	if numeric {
		s.Axes = []string{"engine.max_num_seqs"}
		vals = []any{64, 128, 256, 512}
	}
	for i, v := range vals {
		s.Points = append(s.Points, plan.SweepPoint{Values: []any{v}, Metrics: []float64{float64(200 + 150*i), float64(4000 + 900*i)}})
	}
	return s
}

func planFixture() *plan.PlanResult {
	r := &plan.PlanResult{Dimension: plan.DimRate, TargetLoad: 20, Simulations: 12, RequiredHeadroom: 1.3, ParetoMetric: "ttft_ms.p99", ParetoLimitMS: 1000}
	add := func(gpu string, tp, reps int, price, ttft float64, pareto, meets, qualifies bool) {
		c := plan.Candidate{Config: plan.Config{GPU: gpu, TP: tp, Replicas: reps}, GPUs: tp * reps, PricePerGPUHourUSD: price,
			CostPerHourUSD: price * float64(tp*reps), MeetsSLA: meets, Qualifies: qualifies, TTFTP99MS: ttft, ParetoLatencyMS: ttft,
			E2EP99MS: ttft * 10, TPOTP99MS: ttft / 30, Pareto: pareto}
		if meets {
			r.Candidates = append(r.Candidates, c)
		} else {
			r.Missed = append(r.Missed, c)
		}
	}
	add("a100-80gb", 1, 2, 1.8, 740, true, true, true)
	add("a100-80gb", 2, 1, 1.8, 790, false, true, true)
	add("h100-sxm", 1, 2, 2.5, 610, true, true, true)
	add("h100-sxm", 2, 1, 2.5, 630, false, true, true)
	add("h100-sxm", 2, 2, 2.5, 500, true, true, true)
	add("h100-sxm", 4, 1, 2.5, 560, false, true, true)
	add("l40s", 1, 2, 1.0, 980, false, true, false)
	add("l40s", 1, 1, 1.0, 3000, false, false, false)
	r.Candidates[0].Recommended = true
	return r
}

// dayFixture is a 2-hour profile in 30-minute windows on up to 3
// replicas.
func dayFixture() *plan.DayPlan {
	d := &plan.DayPlan{Config: plan.Config{GPU: "h100-sxm", TP: 1, Replicas: 3}, GPUsPerReplica: 1, DurationS: 7200, WindowS: 1800,
		PeakRateRPS: 30, BindingMetric: "ttft_ms.p99", BindingLimit: 1000, CapacityRPS: []float64{12, 25, 38}}
	for i, rate := range []float64{5, 30, 20, 8} {
		w := plan.DayWindow{StartS: float64(i) * 1800, DurationS: 1800, RateRPS: rate, ReplicasNeeded: []int{1, 3, 2, 1}[i]}
		w.Autoscaled = plan.WindowOutcome{Requests: int(rate * 1800), LatencyMS: []float64{200, 1400, 600, 250}[i], SLAAttainment: []float64{1, 0.93, 1, 1}[i]}
		w.Static = plan.WindowOutcome{Requests: int(rate * 1800), LatencyMS: []float64{150, 700, 400, 160}[i], SLAAttainment: 1}
		d.Windows = append(d.Windows, w)
	}
	d.ReplicaTimeline = []sim.ReplicaCount{{TS: 0, Serving: 1}, {TS: 1815, Serving: 1, Starting: 2}, {TS: 1900, Serving: 3}, {TS: 4200, Serving: 2, Draining: 1}, {TS: 4230, Serving: 2}, {TS: 6000, Serving: 1}}
	d.Autoscaled.SLAAttainment, d.Static.SLAAttainment = 0.981, 1
	return d
}

func loadFixture() *plan.LoadResult {
	r := &plan.LoadResult{Dimension: plan.DimRate, MaxLoad: 13.75, LimitingMetric: "ttft_ms.p99"}
	for _, p := range []struct {
		load, good, thr float64
		met             bool
	}{{10, 10, 10, true}, {20, 6, 14, false}, {15, 12.2, 13.9, false}, {12.5, 12.4, 12.5, true}, {13.75, 13.3, 13.7, true}} {
		r.Probes = append(r.Probes, plan.Probe{Load: p.load, GoodputRPS: p.good, ThroughputRPS: p.thr, Met: p.met})
	}
	r.Knee = r.Probes[4]
	return r
}

// accuracyFixture is 30 runs of three models: measured TTFT from 20 ms to
// 6 s and TPOT from 4 to 60 ms, predicted off by a factor that cycles
// through 0.6–1.5 (so some points sit outside the ±20% band), and one run
// whose prediction failed (0 ms: left out).
func accuracyFixture() []plot.AccuracyPoint {
	models := []string{"gpt-oss-120b", "minimax-m2.5", "llama-3.1-8b"}
	factors := []float64{0.6, 0.85, 1, 1.1, 1.5}
	var pts []plot.AccuracyPoint
	for i := range 30 {
		ttft := 20 * math.Pow(300, float64(i)/29)
		tpot := 4 * math.Pow(15, float64((i*7)%30)/29)
		f := factors[i%len(factors)]
		pts = append(pts, plot.AccuracyPoint{Series: models[i%3], MeasuredTTFTMS: ttft, PredictedTTFTMS: ttft * f,
			MeasuredTPOTMS: tpot, PredictedTPOTMS: tpot / f})
	}
	pts = append(pts, plot.AccuracyPoint{Series: "gpt-oss-120b", MeasuredTTFTMS: 50, MeasuredTPOTMS: 10})
	return pts
}
