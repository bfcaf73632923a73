package plan

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/headroom-sim/headroom/internal/study/scenario"
	"github.com/headroom-sim/headroom/sim"
	"github.com/headroom-sim/headroom/sim/workload"
)

// stepProfile is 3 req/s for 5 minutes, 40 req/s for 5, 3 again for 5.
func stepProfile() scenario.Scenario {
	s := scenario.Default()
	s.Workload.Requests = 0
	s.Workload.Arrival = workload.ArrivalSpec{Type: workload.ArrivalPoisson}
	s.Workload.RateProfile = []workload.RatePoint{{AtS: 0, RateRPS: 3}, {AtS: 300, RateRPS: 40}, {AtS: 600, RateRPS: 3}}
	s.Workload.RateProfileEndS = 900
	s.SLA = &sim.SLA{TTFTMS: map[string]float64{"p99": 1000}, TPOTMS: map[string]float64{"p99": 40}}
	return s
}

// TestPlanDay plays a step in load through the recommendation: the
// recommendation is sized for the peak; each window needs more replicas
// the higher its rate; the autoscaler starts replicas for the step (which
// serve after the cold start) and holds fewer GPU-hours than the static
// peak count; both runs send the same requests; GPU-hours integrate the
// replica timeline and cost follows the price.
func TestPlanDay(t *testing.T) {
	if testing.Short() {
		t.Skip("two runs through a profile: run without -short")
	}
	r := runner(t)
	res, err := r.Plan(context.Background(), PlanSpec{Scenario: stepProfile(), GPUs: []string{"h100-sxm"}, TPs: []int{1}, WindowS: 300}, nil)
	if err != nil {
		t.Fatal(err)
	}
	rec, d := res.Recommendation, res.Day
	if rec == nil || d == nil {
		t.Fatalf("recommendation %+v, day %+v", rec, d)
	}
	if res.TargetLoad != 40 || d.PeakRateRPS != 40 || len(d.Windows) != 3 || d.DurationS != 900 {
		t.Fatalf("target %g, peak %g, %d windows over %g s", res.TargetLoad, d.PeakRateRPS, len(d.Windows), d.DurationS)
	}
	R := rec.Replicas
	if len(d.CapacityRPS) != R || math.Abs(d.CapacityRPS[R-1]-rec.Headroom*40) > 1e-6 {
		t.Errorf("capacity %v with %d replicas at %.2f× of 40 req/s", d.CapacityRPS, R, rec.Headroom)
	}
	for n := 1; n < R; n++ {
		if d.CapacityRPS[n] < d.CapacityRPS[n-1] || d.CapacityRPS[n-1] >= 40 {
			t.Errorf("capacity %v: %d replicas would cover the peak the plan needs %d for", d.CapacityRPS, n, R)
		}
	}
	w := d.Windows
	if w[0].ReplicasNeeded != 1 || w[1].ReplicasNeeded < 2 || w[1].ReplicasNeeded > R || w[1].ReplicasWithHeadroom != R || w[2].ReplicasNeeded != 1 {
		t.Errorf("needed %d %d %d (with headroom %d at the peak), recommended %d", w[0].ReplicasNeeded, w[1].ReplicasNeeded, w[2].ReplicasNeeded, w[1].ReplicasWithHeadroom, R)
	}
	a, s := d.Autoscaled, d.Static
	if a.ScaleUps == 0 || a.DuringScaleUps == nil || a.DuringScaleUps.Seconds < d.Autoscaler.ColdStart.ScaleUpDelayS || a.DuringScaleUps.Requests == 0 {
		t.Errorf("%d scale-ups, during them %+v (delay %g s)", a.ScaleUps, a.DuringScaleUps, d.Autoscaler.ColdStart.ScaleUpDelayS)
	}
	if a.Requests != s.Requests || a.Requests < 10000 {
		t.Errorf("autoscaled run sent %d requests, static %d", a.Requests, s.Requests)
	}
	if want := float64(R) * 900 / 3600; math.Abs(s.GPUHours-want) > 1e-6 || a.GPUHours >= s.GPUHours {
		t.Errorf("GPU-hours: autoscaled %g, static %g (want %g)", a.GPUHours, s.GPUHours, want)
	}
	var sum float64
	for _, win := range w {
		sum += win.Autoscaled.Replicas * win.DurationS / 3600
	}
	if math.Abs(sum-a.GPUHours) > 1e-4 || math.Abs(a.GPUHoursPerDay-a.GPUHours*96) > 1e-4 || math.Abs(a.CostPerDayUSD-a.GPUHoursPerDay*2.5) > 1e-3 {
		t.Errorf("windows hold %g GPU-h, the run %g (%g a day, $%g)", sum, a.GPUHours, a.GPUHoursPerDay, a.CostPerDayUSD)
	}
	for _, x := range []float64{a.SLAAttainment, s.SLAAttainment, a.DuringScaleUps.SLAAttainment} {
		if x < 0 || x > 1 {
			t.Errorf("attainment %g", x)
		}
	}
	if s.SLAAttainment < a.DuringScaleUps.SLAAttainment || s.WindowsMeetingSLA != 3 {
		t.Errorf("static for the peak attains %g (%d windows), the autoscaler %g while scaling up", s.SLAAttainment, s.WindowsMeetingSLA, a.DuringScaleUps.SLAAttainment)
	}
	if !strings.Contains(d.Summary, "GPU-hours a day") || d.Autoscaler.Metric != sim.ScaleOnRequestRate || d.Autoscaler.InitialReplicas != 1 {
		t.Errorf("autoscaler %+v, summary %q", d.Autoscaler, d.Summary)
	}
}

// TestPlanDayKeepsTheScenariosPolicy: an autoscale section in the
// scenario is the policy the day runs.
func TestPlanDayKeepsTheScenariosPolicy(t *testing.T) {
	if testing.Short() {
		t.Skip("two runs through a profile: run without -short")
	}
	s := stepProfile()
	s.Workload.RateProfile = []workload.RatePoint{{AtS: 0, RateRPS: 2}, {AtS: 120, RateRPS: 20}}
	s.Workload.RateProfileEndS = 240
	zero := 0.0
	s.Autoscale = &scenario.AutoscaleSpec{Metric: sim.ScaleOnInFlight, Target: 16, MaxReplicas: 3, IntervalS: 5, ScaleUpDelayS: &zero}
	res, err := runner(t).Plan(context.Background(), PlanSpec{Scenario: s, GPUs: []string{"h100-sxm"}, TPs: []int{1}, WindowS: 60}, nil)
	if err != nil {
		t.Fatal(err)
	}
	a := res.Day.Autoscaler
	if a.Metric != sim.ScaleOnInFlight || a.Target != 16 || a.MaxReplicas != 3 || a.IntervalS != 5 || a.ColdStart.ScaleUpDelayS != 0 || a.TargetUtilization != 0 {
		t.Errorf("autoscaler %+v", a)
	}
	if len(res.Day.Windows) != 4 {
		t.Errorf("%d windows of 60 s over 240 s", len(res.Day.Windows))
	}
}

// TestProfileFromTrace: arrivals at 0, 1, 2, 3, 10, 11 s counted in 5 s
// windows: 4 in [0, 5), none in [5, 10), 2 in the last second [10, 11]
// (a last window of at least a tenth of one stands alone): 0.8, 0 and 2
// req/s. A time scale of 2 with 10 s windows reads the same 5 s windows
// of trace, at 0, 10 and 20 s, ending at 22 s.
func TestProfileFromTrace(t *testing.T) {
	var recs []workload.TraceRecord
	for i, at := range []float64{0, 1, 2, 3, 10, 11} {
		recs = append(recs, workload.TraceRecord{ArrivalS: at, InputTokens: 100 * (i + 1), OutputTokens: 10})
	}
	tp, err := ProfileFromTrace(recs, 5, 1)
	if err != nil {
		t.Fatal(err)
	}
	want := []workload.RatePoint{{AtS: 0, RateRPS: 0.8}, {AtS: 5, RateRPS: 0}, {AtS: 10, RateRPS: 2}}
	if !equalPoints(tp.Points, want) || tp.EndS != 11 {
		t.Errorf("points %v to %g s, want %v to 11 s", tp.Points, tp.EndS, want)
	}
	tp, err = ProfileFromTrace(recs, 10, 2)
	if err != nil {
		t.Fatal(err)
	}
	want = []workload.RatePoint{{AtS: 0, RateRPS: 0.8}, {AtS: 10, RateRPS: 0}, {AtS: 20, RateRPS: 2}}
	if !equalPoints(tp.Points, want) || tp.EndS != 22 || tp.TraceWindowS != 5 {
		t.Errorf("points %v to %g s (trace windows %g s)", tp.Points, tp.EndS, tp.TraceWindowS)
	}
	b := tp.InputTokens.Buckets
	if tp.InputTokens.Type != workload.LengthBuckets || len(b) != 6 || b[0].Min != 100 || b[len(b)-1].Max != 600 {
		t.Errorf("input lengths %+v", tp.InputTokens)
	}
	// A sliver of a last window joins the one before: 0 … 10.2 s in 5 s windows.
	recs[5].ArrivalS, recs[4].ArrivalS = 10.2, 10.1
	if tp, _ = ProfileFromTrace(recs, 5, 1); len(tp.Points) != 2 || math.Abs(tp.Points[1].RateRPS-2/5.2) > 1e-6 {
		t.Errorf("points %v", tp.Points)
	}
	for _, bad := range [][]workload.TraceRecord{recs[:1], {{ArrivalS: 0}, {ArrivalS: 0}}} {
		if _, err := ProfileFromTrace(bad, 5, 1); err == nil {
			t.Errorf("no error for %v", bad)
		}
	}
}

func equalPoints(a, b []workload.RatePoint) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].AtS != b[i].AtS || math.Abs(a[i].RateRPS-b[i].RateRPS) > 1e-9 {
			return false
		}
	}
	return true
}

// TestParseRateProfile reads CSV and YAML/JSON lists and names what is
// wrong.
func TestParseRateProfile(t *testing.T) {
	for _, c := range []struct{ in, err string }{
		{"at_s,rate_rps\n0,1.5\n60,3\n", ""},
		{"rate_rps, at_s\n2,0\n0,60\n", ""},
		{"[{at_s: 0, rate_rps: 1}, {at_s: 10, rate_rps: 0}]", ""},
		{`[{"at_s": 0, "rate_rps": 1}, {"at_s": 10, "rate_rps": 2}]`, ""},
		{"- {at_s: 0, rate_rps: 1}\n- {at_s: 5, rate_rps: 2}\n", ""},
		{"t,r\n0,1\n", "p.csv:1: the header needs at_s and rate_rps"},
		{"at_s,rate_rps\n0,x\n", "p.csv:2: at_s \"0\" and rate_rps \"x\" must be numbers"},
		{"at_s,rate_rps\n0,1\n0,2\n", "p.csv: rate_profile[1].at_s: must be after"},
		{"at_s,rate_rps\n0,-1\n9,2\n", "rate_profile[0].rate_rps"},
		{"[{at_s: 0, rps: 1}]", "field rps not found"},
		{"at_s,rate_rps\n", "p.csv: no points"},
	} {
		pts, err := ParseRateProfile(strings.NewReader(c.in), "p.csv")
		switch {
		case c.err == "" && (err != nil || len(pts) != 2):
			t.Errorf("%q: %v, %v", c.in, pts, err)
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("%q: error %v, want %q", c.in, err, c.err)
		}
	}
}

// TestWorkloadsAutoscaleSection: a policy without a profile is noted as
// unused; an in_flight policy needs its target (the others follow the
// target utilization); the candidates never run the autoscaler.
func TestWorkloadsAutoscaleSection(t *testing.T) {
	r := runner(t)
	s := small(100)
	s.Autoscale = &scenario.AutoscaleSpec{MaxReplicas: 4, Target: 2}
	base, profile, notes, err := r.Workloads(PlanSpec{Scenario: s})
	if err != nil || profile != nil || base.Autoscale != nil || !strings.Contains(strings.Join(notes, "\n"), "autoscale section is not used") {
		t.Errorf("notes %q, profile %v, base autoscale %v, err %v", notes, profile, base.Autoscale, err)
	}
	p := stepProfile()
	p.Autoscale = &scenario.AutoscaleSpec{Metric: sim.ScaleOnInFlight}
	_, _, _, err = r.Workloads(PlanSpec{Scenario: p})
	var fe *scenario.FieldError
	if !errors.As(err, &fe) || fe.Field != "autoscale.target" {
		t.Errorf("in_flight without a target: %v", err)
	}
	p.Autoscale.Metric = sim.ScaleOnKVUsage
	if base, profile, _, err = r.Workloads(PlanSpec{Scenario: p}); err != nil || base.Autoscale != nil || profile.Autoscale == nil {
		t.Errorf("kv_cache_usage: %v; base %v, profile %v", err, base.Autoscale, profile)
	}
}

// TestWorkloadsBoundTheWindows: a day in 30 s windows is 2,880 windows,
// more than a run reports (each has its own histograms).
func TestWorkloadsBoundTheWindows(t *testing.T) {
	s := stepProfile()
	s.Workload.RateProfileEndS = 86400
	_, _, _, err := runner(t).Workloads(PlanSpec{Scenario: s, WindowS: 30})
	var fe *scenario.FieldError
	if !errors.As(err, &fe) || fe.Field != "window_s" || !strings.Contains(fe.Reason, "2880 windows") {
		t.Errorf("got %v", err)
	}
}
