package plan

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/headroom-sim/headroom/catalogs"
	"github.com/headroom-sim/headroom/internal/study/scenario"
	"github.com/headroom-sim/headroom/sim"
	"github.com/headroom-sim/headroom/sim/workload"
)

func runner(t testing.TB) *Runner {
	t.Helper()
	cat, err := catalogs.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	return &Runner{Env: scenario.Env{Catalog: cat}}
}

// small is a quick scenario with an SLA.
func small(requests int) scenario.Scenario {
	s := scenario.Default()
	s.Workload.Requests = requests
	s.Workload.Arrival.RateRPS = 5
	s.SLA = &sim.SLA{TTFTMS: map[string]float64{"p99": 500}, TPOTMS: map[string]float64{"p99": 40}}
	return s
}

func TestMaxLoadBracketsAndIsMonotone(t *testing.T) {
	if testing.Short() {
		t.Skip("a long sequential search: run without -short")
	}
	r := runner(t)
	res, err := r.MaxLoad(context.Background(), LoadSpec{Scenario: small(300)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Dimension != DimRate || res.MaxLoad <= 0 || res.LimitingMetric == "" {
		t.Fatalf("result %+v", res)
	}
	// Every probe at or below the max met the SLA, every probe above missed it.
	for _, p := range res.Probes {
		if p.Load <= res.MaxLoad && !p.Met {
			t.Errorf("probe at %.2f (<= max %.2f) missed the SLA", p.Load, res.MaxLoad)
		}
		if p.Load > res.MaxLoad && p.Met {
			t.Errorf("probe at %.2f (> max %.2f) met the SLA", p.Load, res.MaxLoad)
		}
	}
	// Reproducible.
	again, err := r.MaxLoad(context.Background(), LoadSpec{Scenario: small(300)}, nil)
	if err != nil || again.MaxLoad != res.MaxLoad {
		t.Fatalf("second search %v, %v; first %v", again.MaxLoad, err, res.MaxLoad)
	}
	t.Logf("max %.2f req/s, limited by %s, %d probes", res.MaxLoad, res.LimitingMetric, len(res.Probes))
}

// TestMaxLoadBand: the answer's band comes from the same search with the
// SLA's figures at their bands' ends: ordered, holding the point answer
// for a figure whose band holds its point value (TPOT p50 here), and left
// out when skipped.
func TestMaxLoadBand(t *testing.T) {
	if testing.Short() {
		t.Skip("five sequential searches: run without -short")
	}
	r := runner(t)
	s := small(300)
	s.SLA = &sim.SLA{TPOTMS: map[string]float64{"p50": 12}}
	res, err := r.MaxLoad(context.Background(), LoadSpec{Scenario: s}, nil)
	if err != nil {
		t.Fatal(err)
	}
	in := res.MaxLoadInterval
	if in == nil || !(in.P95[0] > 0 && in.P95[0] <= in.P80[0] && in.P80[0] < res.MaxLoad && res.MaxLoad < in.P80[1] && in.P80[1] <= in.P95[1]) || in.Runs < 1 {
		t.Fatalf("max %v, band %+v", res.MaxLoad, in)
	}
	// The probe at the band's low end holds the SLA with TPOT p50 at its
	// band's upper end; the point value alone would hold it too.
	found := false
	for _, p := range res.Probes {
		if p.Load == in.P80[0] {
			found = p.Met
		}
	}
	if !found {
		t.Errorf("no probe meeting the SLA at the band's low end %v", in.P80[0])
	}
	skip, err := r.MaxLoad(context.Background(), LoadSpec{Scenario: s, SkipBands: true}, nil)
	if err != nil || skip.MaxLoadInterval != nil || skip.MaxLoad != res.MaxLoad || len(skip.Probes) >= len(res.Probes) {
		t.Errorf("skipped bands: max %v (want %v), band %+v, %d probes (with bands %d), %v", skip.MaxLoad, res.MaxLoad, skip.MaxLoadInterval, len(skip.Probes), len(res.Probes), err)
	}
	t.Logf("max %.3g req/s, 80%% %.3g–%.3g, 95%% %.3g–%.3g, %d probes (%d without bands)", res.MaxLoad, in.P80[0], in.P80[1], in.P95[0], in.P95[1], len(res.Probes), len(skip.Probes))
}

func TestMaxLoadClosedLoop(t *testing.T) {
	r := runner(t)
	s := small(300)
	s.Workload.Arrival = workload.ArrivalSpec{Type: workload.ArrivalClosedLoop, Concurrency: 4}
	res, err := r.MaxLoad(context.Background(), LoadSpec{Scenario: s}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Dimension != DimConcurrency || res.MaxLoad < 1 || res.MaxLoad != float64(int(res.MaxLoad)) {
		t.Fatalf("concurrency search gave %+v", res)
	}
}

func TestMaxLoadNeedsSLA(t *testing.T) {
	s := small(10)
	s.SLA = nil
	if _, err := runner(t).MaxLoad(context.Background(), LoadSpec{Scenario: s}, nil); !errors.Is(err, ErrNoSLA) {
		t.Fatalf("err %v, want ErrNoSLA", err)
	}
}

func TestSweepGridAndCSV(t *testing.T) {
	r := runner(t)
	calls := 0
	res, err := r.Sweep(context.Background(), SweepSpec{Scenario: small(100), Axes: []Axis{
		{Path: "engine.max_num_seqs", Values: []any{8, 64}},
		{Path: "gpu", Values: []any{"h100-sxm", "a100-80gb", "nope-gpu"}},
	}}, func(float64) { calls++ })
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Points) != 6 || calls != 6 {
		t.Fatalf("%d points, %d progress calls", len(res.Points), calls)
	}
	errs := 0
	for _, p := range res.Points {
		if p.Error != "" {
			errs++
			if !strings.Contains(p.Error, "unknown GPU") {
				t.Errorf("error %q", p.Error)
			}
		}
	}
	if errs != 2 {
		t.Errorf("%d points failed, want the 2 with an unknown GPU", errs)
	}
	var b strings.Builder
	if err := res.WriteCSV(&b); err != nil {
		t.Fatal(err)
	}
	head := strings.SplitN(b.String(), "\n", 2)[0]
	for _, col := range []string{"engine.max_num_seqs", "gpu", "ttft_ms.p99", "throughput.output_tokens_per_s", "error"} {
		if !strings.Contains(head, col) {
			t.Errorf("CSV header lacks %s: %s", col, head)
		}
	}
}

func TestCurveMarksKnee(t *testing.T) {
	r := runner(t)
	s := small(0)
	res, err := r.Curve(context.Background(), CurveSpec{Scenario: s, RatesRPS: []float64{2, 8, 32, 128}, StepDurationS: 20}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Points) != 4 || res.Knee < 0 || res.Knee >= 3 {
		t.Fatalf("knee %d of %d points", res.Knee, len(res.Points))
	}
	if !res.Points[res.Knee].Knee {
		t.Error("knee point not marked")
	}
	// Every step carries its bands, judged at its own load: the lightest
	// step light, the 128 req/s one (far past the knee) saturated.
	for i, p := range res.Points {
		in := p.TTFTMSInterval.At("p99")
		if in == nil || p.TPOTMSInterval.At("p50") == nil || p.Uncertainty == nil || !(in.P80[0] <= in.P80[1]) || !(in.P95[0] <= in.P80[0] && in.P80[1] <= in.P95[1]) {
			t.Fatalf("point %d (%g req/s): bands %+v %+v", i, p.Load, p.TTFTMSInterval, p.Uncertainty)
		}
	}
	if first, last := res.Points[0].Uncertainty.Regime["load"], res.Points[3].Uncertainty.Regime["load"]; first != "light" || last != "saturated" {
		t.Errorf("load regimes %q … %q, want light … saturated", first, last)
	}
}

func TestCompareForcesSameWorkload(t *testing.T) {
	r := runner(t)
	a := small(200)
	b := small(200)
	b.Engine.MaxNumSeqs = 4
	b.Workload.Seed = 99 // would make the comparison unfair
	res, err := r.Compare(context.Background(), CompareSpec{A: a, B: b}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Differences) != 1 || res.Differences[0].Path != "engine.max_num_seqs" {
		t.Fatalf("differences %+v", res.Differences)
	}
	if len(res.Notes) == 0 {
		t.Error("no note about the replaced workload")
	}
	var ttft *MetricDiff
	for i := range res.Metrics {
		if res.Metrics[i].Name == "ttft_ms.p99" {
			ttft = &res.Metrics[i]
		}
	}
	if ttft == nil || ttft.B <= ttft.A {
		t.Errorf("max_num_seqs 4 should queue more than the default: %+v", ttft)
	}
}
