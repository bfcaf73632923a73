package plan

import (
	"context"
	"fmt"
	"math"
	"strings"
	"sync"

	"github.com/headroom-sim/headroom/internal/study/scenario"
	"github.com/headroom-sim/headroom/sim"
	"github.com/headroom-sim/headroom/sim/workload"
)

// A rate profile played through the recommendation (its GPU and TP):
//
//   - capacity: the highest rate n replicas sustain within the SLA, for
//     n = 1 … the recommended count, searched on the plan's workload model
//     (the recommendation's own from its headroom search); each window
//     needs the fewest replicas whose capacity covers its rate (and its
//     rate × the headroom);
//   - an autoscaler simulated through the profile (sim's autoscaling):
//     the request rate over the last interval against a target of
//     TargetUtilization × one replica's capacity, a scale-up delay worked
//     out from the cold start, min and max replicas;
//   - static provisioning for the peak: the recommended replicas all day.
//
// Both runs are the same requests (the profile's seed); each reports
// GPU-hours and cost per day (replica time over the profile, scaled to
// 24 h), the share of requests meeting every per-request SLA bound (over
// the day, per window, and for the autoscaler while replicas start), and
// the binding bound's quantile per window.

// DefaultTargetUtilization is the autoscaler's default aim.
const DefaultTargetUtilization = 0.7

// DayPlan is a rate profile played through the recommendation.
type DayPlan struct {
	Config             Config  `json:"config"`
	GPUsPerReplica     int     `json:"gpus_per_replica"`
	PricePerGPUHourUSD float64 `json:"price_per_gpu_hour_usd"`
	DurationS          float64 `json:"duration_s"`
	WindowS            float64 `json:"window_s"`
	PeakRateRPS        float64 `json:"peak_rate_rps"`
	// RateProfile is the profile as run, one point per window.
	RateProfile []workload.RatePoint `json:"rate_profile"`
	// CapacityRPS[n-1] is the highest rate n replicas sustain within the
	// SLA.
	CapacityRPS []float64     `json:"capacity_rps"`
	Autoscaler  DayAutoscaler `json:"autoscaler"`
	Windows     []DayWindow   `json:"windows"`
	Autoscaled  DayRun        `json:"autoscaled"`
	Static      DayRun        `json:"static"`
	// ReplicaTimeline is the autoscaled run's replicas over time.
	ReplicaTimeline []sim.ReplicaCount `json:"replica_timeline"`
	// SavingsPerDayUSD is the static cost less the autoscaled one.
	SavingsPerDayUSD float64 `json:"savings_per_day_usd"`
	SavingsPct       float64 `json:"savings_pct"`
	// BindingMetric is the bound the windows' latency_ms report.
	BindingMetric string  `json:"binding_metric"`
	BindingLimit  float64 `json:"binding_limit_ms,omitempty"`
	Summary       string  `json:"summary"`
}

// DayAutoscaler is the policy the autoscaled run used.
type DayAutoscaler struct {
	Metric string `json:"metric"`
	// Target is the metric per replica the policy aims at (req/s for
	// request_rate: TargetUtilization × CapacityRPS[R-1] / R).
	Target            float64 `json:"target"`
	TargetUtilization float64 `json:"target_utilization,omitempty"`
	MinReplicas       int     `json:"min_replicas"`
	MaxReplicas       int     `json:"max_replicas"`
	InitialReplicas   int     `json:"initial_replicas"`
	IntervalS         float64 `json:"interval_s"`
	StabilizationS    float64 `json:"scale_down_stabilization_s"`
	Tolerance         float64 `json:"tolerance"`
	// ColdStart is the scale-up delay and its parts.
	ColdStart scenario.ColdStart `json:"cold_start"`
}

// DayWindow is one window of the profile.
type DayWindow struct {
	StartS    float64 `json:"start_s"`
	DurationS float64 `json:"duration_s"`
	RateRPS   float64 `json:"rate_rps"`
	// ReplicasNeeded is the fewest replicas whose capacity covers the
	// window's rate, ReplicasWithHeadroom its rate × the headroom.
	ReplicasNeeded       int           `json:"replicas_needed"`
	ReplicasWithHeadroom int           `json:"replicas_with_headroom"`
	Autoscaled           WindowOutcome `json:"autoscaled"`
	Static               WindowOutcome `json:"static"`
}

// WindowOutcome is one run's window.
type WindowOutcome struct {
	// Replicas is the mean replicas held (billed) over the window,
	// ServingMin the fewest serving in it.
	Replicas   float64 `json:"replicas"`
	ServingMin int     `json:"serving_min"`
	// Requests were sent in the window; SLAAttainment is the share of
	// them that met every per-request bound.
	Requests      int     `json:"requests"`
	SLAAttainment float64 `json:"sla_attainment"`
	// LatencyMS is the binding bound's quantile over the window's
	// requests; SLAMet the window's verdict on every bound.
	LatencyMS float64 `json:"latency_ms"`
	SLAMet    bool    `json:"sla_met"`
}

// DayRun is one run through the whole profile.
type DayRun struct {
	// Replicas is the static count, or the most the autoscaler held.
	Replicas       int     `json:"replicas"`
	GPUHours       float64 `json:"gpu_hours"`
	GPUHoursPerDay float64 `json:"gpu_hours_per_day"`
	CostUSD        float64 `json:"cost_usd"`
	CostPerDayUSD  float64 `json:"cost_per_day_usd"`
	Requests       int     `json:"requests"`
	Completed      int     `json:"completed"`
	// SLAAttainment is the share of requests that met every per-request
	// bound (rejected and unfinished ones did not).
	SLAAttainment     float64 `json:"sla_attainment"`
	WindowsMeetingSLA int     `json:"windows_meeting_sla"`
	// LatencyMS is the binding bound over the whole run.
	LatencyMS  float64 `json:"latency_ms"`
	ScaleUps   int     `json:"scale_ups,omitempty"`
	ScaleDowns int     `json:"scale_downs,omitempty"`
	// DuringScaleUps covers the requests sent while a replica was
	// starting (autoscaled run).
	DuringScaleUps *Attainment `json:"during_scale_ups,omitempty"`
}

// Attainment is the SLA attainment of some requests.
type Attainment struct {
	Seconds       float64 `json:"seconds"`
	Requests      int     `json:"requests"`
	SLAAttainment float64 `json:"sla_attainment"`
}

// sent is one finished request: when it was sent, whether it met every
// per-request bound.
type sent struct {
	t     float32
	stage int32 // the window it was sent in
	good  bool
}

// dayRun is one simulation through the profile.
type dayRun struct {
	rep  *sim.Report
	res  *scenario.Resolved
	reqs []sent
	err  error
}

// planDay plays the profile through the recommendation.
func (r *Runner) planDay(ctx context.Context, q *searcher, profile *scenario.Scenario, res *PlanResult, prog *Progress) (*DayPlan, error) {
	rec := res.Candidates[0]
	spec := q.spec
	w := profile.Workload
	R := rec.Replicas
	day := &DayPlan{Config: rec.Config, GPUsPerReplica: rec.GPUs / max(rec.Replicas, 1), PricePerGPUHourUSD: rec.PricePerGPUHourUSD,
		DurationS: w.ProfileEndS(), WindowS: spec.WindowS, PeakRateRPS: w.PeakRateRPS(), RateProfile: w.RateProfile,
		CapacityRPS: make([]float64, R), BindingMetric: res.ParetoMetric, BindingLimit: res.ParetoLimitMS}

	// The policy.
	as := scenario.AutoscaleSpec{}
	if profile.Autoscale != nil {
		as = *profile.Autoscale
	}
	capR := rec.Headroom * q.target
	switch {
	case as.Target != 0:
	case as.Metric == sim.ScaleOnKVUsage:
		as.Target = spec.TargetUtilization
		day.Autoscaler.TargetUtilization = spec.TargetUtilization
	default: // request_rate (workload.go refused in_flight without a target)
		as.Metric = sim.ScaleOnRequestRate
		as.Target = spec.TargetUtilization * capR / float64(R)
		day.Autoscaler.TargetUtilization = spec.TargetUtilization
	}
	if as.MaxReplicas == 0 {
		as.MaxReplicas = max(R, int(math.Ceil(day.PeakRateRPS/as.Target-1e-9)))
		if as.Metric != "" && as.Metric != sim.ScaleOnRequestRate {
			as.MaxReplicas = R
		}
	}
	as.MaxReplicas = max(as.MaxReplicas, max(as.MinReplicas, 1))
	initial := max(as.MinReplicas, 1)
	if as.Metric == "" || as.Metric == sim.ScaleOnRequestRate {
		initial = max(initial, int(math.Ceil(w.RateProfile[0].RateRPS/as.Target-1e-9)))
	} else {
		initial = max(initial, R)
	}
	initial = min(initial, as.MaxReplicas)

	scaled := Config{GPU: rec.GPU, TP: rec.TP, Replicas: initial}.Scenario(*profile)
	scaled.Autoscale = &as
	static := Config{GPU: rec.GPU, TP: rec.TP, Replicas: R}.Scenario(*profile)
	static.Autoscale = nil

	// Run the two days and the capacity searches together, longest first.
	var runs [2]dayRun
	var mu sync.Mutex
	var firstErr error
	capErr := func(err error) {
		mu.Lock()
		defer mu.Unlock()
		if firstErr == nil {
			firstErr = err
		}
	}
	capCapped := rec.HeadroomCapped
	tasks := []func(){
		func() { runs[0] = r.runDay(ctx, scaled) },
		func() { runs[1] = r.runDay(ctx, static) },
	}
	q.sims.Add(2)
	day.CapacityRPS[R-1] = capR
	for n := 1; n <= R; n++ {
		if n == R && !capCapped {
			continue
		}
		tasks = append(tasks, func() {
			ss := &shapeSearch{q: q, shape: Config{GPU: rec.GPU, TP: rec.TP, Replicas: n}, cache: map[probeKey]verdict{}}
			c, err := ss.capacity(ctx, n, rec.Headroom*float64(n)/float64(R))
			if err != nil {
				capErr(err)
				return
			}
			day.CapacityRPS[n-1] = c * q.target
		})
	}
	prog.Grow(len(tasks) - 1)
	parallel(ctx, len(tasks), r.Workers, func(i int) {
		defer prog.Step()
		tasks[i]()
	})
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if firstErr != nil {
		return nil, firstErr
	}
	for _, d := range runs {
		if d.err != nil {
			return nil, d.err
		}
	}
	// Capacity never falls with more replicas (a search's 5% precision
	// could make it seem to).
	for n := 1; n < R; n++ {
		day.CapacityRPS[n] = math.Max(day.CapacityRPS[n], day.CapacityRPS[n-1])
	}
	cs := runs[0].res.ColdStart
	p := runs[0].res.Config.Autoscale
	day.Autoscaler = DayAutoscaler{Metric: p.Metric, Target: round6(p.Target), TargetUtilization: day.Autoscaler.TargetUtilization,
		MinReplicas: p.MinReplicas, MaxReplicas: p.MaxReplicas, InitialReplicas: initial, IntervalS: p.IntervalS,
		StabilizationS: p.ScaleDownStabilizationS, Tolerance: p.Tolerance, ColdStart: *cs}
	day.fill(runs[0], runs[1], spec.Headroom)
	return day, nil
}

// capacity searches the highest multiple of the target n replicas
// sustain, from a guess: doubling or halving to bracket it, then
// bisecting (0 when not even 1/1024 of the guess holds).
func (ss *shapeSearch) capacity(ctx context.Context, n int, guess float64) (float64, error) {
	v, err := ss.at(ctx, n, guess, true)
	if err != nil {
		return 0, err
	}
	if v.met {
		h, _, _, err := ss.headroom(ctx, n, guess, 0, guess*1024)
		return h, err
	}
	hi := guess
	for lo := guess / 2; lo >= guess/1024; lo /= 2 {
		v, err := ss.at(ctx, n, lo, true)
		if err != nil {
			return 0, err
		}
		if v.met {
			h, _, _, err := ss.headroom(ctx, n, lo, hi, hi)
			return h, err
		}
		hi = lo
	}
	return 0, nil
}

// runDay runs a profile scenario, keeping each finished request's send
// time and verdict.
func (r *Runner) runDay(ctx context.Context, s scenario.Scenario) dayRun {
	var d dayRun
	limits := perRequestLimits(s.SLA)
	out := r.run(ctx, s, func(*scenario.Resolved) []sim.Option {
		return []sim.Option{sim.WithRequestSink(func(x sim.RequestSample) {
			d.reqs = append(d.reqs, sent{t: float32(x.SentS), stage: int32(x.Stage), good: limits.good(x)})
		})}
	})
	d.rep, d.res, d.err = out.Report, out.Resolved, out.Err
	return d
}

// requestLimits are the per-request bounds of an SLA: for each metric
// the loosest bound stated (as the simulator's goodput counts them; ITL
// has none per request).
type requestLimits struct{ ttft, tpot, e2e float64 }

func perRequestLimits(sla *sim.SLA) requestLimits {
	loosest := func(m map[string]float64) float64 {
		v := 0.0
		for _, l := range m {
			v = math.Max(v, l)
		}
		return v
	}
	if sla == nil {
		return requestLimits{}
	}
	return requestLimits{loosest(sla.TTFTMS), loosest(sla.TPOTMS), loosest(sla.E2EMS)}
}

func (l requestLimits) good(x sim.RequestSample) bool {
	return !(l.ttft > 0 && x.TTFTMS > l.ttft || l.tpot > 0 && x.OutputTokens > 1 && x.TPOTMS > l.tpot || l.e2e > 0 && x.E2EMS > l.e2e)
}

// fill computes the windows and both runs' totals.
func (d *DayPlan) fill(scaled, static dayRun, headroom float64) {
	T := d.DurationS
	tl := scaled.rep.Autoscale.Timeline
	d.ReplicaTimeline = tl
	held := func(p sim.ReplicaCount) int { return p.Serving + p.Starting + p.Draining }
	// replicaSeconds integrates the autoscaled replicas held over [a, b).
	replicaSeconds := func(a, b float64) (sum float64, servingMin int) {
		servingMin = math.MaxInt
		for i, p := range tl {
			until := math.Inf(1)
			if i+1 < len(tl) {
				until = tl[i+1].TS
			}
			lo, hi := math.Max(a, p.TS), math.Min(b, until)
			if hi > lo {
				sum += float64(held(p)) * (hi - lo)
				servingMin = min(servingMin, p.Serving)
			}
		}
		if servingMin == math.MaxInt {
			servingMin = 0
		}
		return sum, servingMin
	}
	byWindow := func(run dayRun) (goodN []int) {
		goodN = make([]int, len(d.RateProfile))
		for _, x := range run.reqs {
			if x.good && int(x.stage) < len(goodN) {
				goodN[x.stage]++
			}
		}
		return goodN
	}
	gs, gt := byWindow(scaled), byWindow(static)
	var scaleUps []([2]float64)
	for i, p := range tl {
		if p.Starting == 0 {
			continue
		}
		until := T
		if i+1 < len(tl) {
			until = tl[i+1].TS
		}
		if n := len(scaleUps); n > 0 && scaleUps[n-1][1] == p.TS {
			scaleUps[n-1][1] = until
		} else {
			scaleUps = append(scaleUps, [2]float64{p.TS, until})
		}
	}
	for i, pt := range d.RateProfile {
		end := T
		if i+1 < len(d.RateProfile) {
			end = d.RateProfile[i+1].AtS
		}
		win := DayWindow{StartS: pt.AtS, DurationS: end - pt.AtS, RateRPS: pt.RateRPS}
		win.ReplicasNeeded, win.ReplicasWithHeadroom = d.needed(pt.RateRPS), d.needed(pt.RateRPS*headroom)
		rs, smin := replicaSeconds(pt.AtS, end)
		win.Autoscaled = windowOutcome(scaled.rep, i, gs[i], d.BindingMetric)
		win.Autoscaled.Replicas, win.Autoscaled.ServingMin = round6(rs/win.DurationS), smin
		win.Static = windowOutcome(static.rep, i, gt[i], d.BindingMetric)
		win.Static.Replicas, win.Static.ServingMin = float64(d.Config.Replicas), d.Config.Replicas
		d.Windows = append(d.Windows, win)
	}
	perDay := 86400 / T
	gpus := float64(d.GPUsPerReplica)
	rs, _ := replicaSeconds(0, T)
	d.Autoscaled = dayTotals(scaled, d, rs*gpus/3600, perDay)
	d.Autoscaled.Replicas = scaled.rep.Autoscale.PeakReplicas
	d.Autoscaled.ScaleUps, d.Autoscaled.ScaleDowns = scaled.rep.Autoscale.ScaleUps, scaled.rep.Autoscale.ScaleDowns
	during := &Attainment{}
	goodDuring := 0
	for _, iv := range scaleUps {
		during.Seconds += iv[1] - iv[0]
	}
	for _, x := range scaled.reqs {
		t := float64(x.t)
		for _, iv := range scaleUps {
			if t >= iv[0] && t < iv[1] {
				during.Requests++
				if x.good {
					goodDuring++
				}
				break
			}
		}
	}
	if during.Requests > 0 {
		during.SLAAttainment = round6(float64(goodDuring) / float64(during.Requests))
	}
	during.Seconds = round6(during.Seconds)
	d.Autoscaled.DuringScaleUps = during
	d.Static = dayTotals(static, d, float64(d.Config.Replicas)*T*gpus/3600, perDay)
	d.Static.Replicas = d.Config.Replicas
	d.SavingsPerDayUSD = round6(d.Static.CostPerDayUSD - d.Autoscaled.CostPerDayUSD)
	if d.Static.CostPerDayUSD > 0 {
		d.SavingsPct = round6(100 * d.SavingsPerDayUSD / d.Static.CostPerDayUSD)
	}
	d.Summary = d.summary()
}

// needed is the fewest replicas whose capacity covers rate (0 for no
// traffic; one more than measured when even the most measured fall
// short).
func (d *DayPlan) needed(rate float64) int {
	if rate <= 0 {
		return 0
	}
	for n, c := range d.CapacityRPS {
		if c >= rate {
			return n + 1
		}
	}
	last := d.CapacityRPS[len(d.CapacityRPS)-1]
	per := last / float64(len(d.CapacityRPS))
	if per <= 0 {
		return len(d.CapacityRPS) + 1
	}
	return max(len(d.CapacityRPS)+1, int(math.Ceil(rate/per-1e-9)))
}

func windowOutcome(rep *sim.Report, i, good int, metric string) WindowOutcome {
	st := rep.Stages[i]
	o := WindowOutcome{Requests: st.Requests.Total, LatencyMS: stageMetric(st, metric), SLAMet: st.Requests.Total == 0 || st.SLA != nil && st.SLA.Met}
	if o.Requests > 0 {
		o.SLAAttainment = round6(float64(good) / float64(o.Requests))
	} else {
		o.SLAAttainment = 1
	}
	return o
}

// stageMetric reads a latency quantile ("ttft_ms.p99") of a stage.
func stageMetric(st sim.StageReport, name string) float64 {
	metric, q, _ := strings.Cut(name, ".")
	switch metric {
	case "ttft_ms":
		return summaryAt(st.TTFTMS, q)
	case "tpot_ms":
		return summaryAt(st.TPOTMS, q)
	case "itl_ms":
		return summaryAt(st.ITLMS, q)
	case "e2e_ms":
		return summaryAt(st.E2EMS, q)
	case "queue_ms":
		return summaryAt(st.QueueMS, q)
	}
	return 0
}

func dayTotals(run dayRun, d *DayPlan, gpuHours, perDay float64) DayRun {
	rep := run.rep
	t := DayRun{GPUHours: round6(gpuHours), GPUHoursPerDay: round6(gpuHours * perDay),
		CostUSD: round6(gpuHours * d.PricePerGPUHourUSD), CostPerDayUSD: round6(gpuHours * perDay * d.PricePerGPUHourUSD),
		Requests: rep.Requests.Total, Completed: rep.Requests.Completed}
	goodN := 0
	for _, x := range run.reqs {
		if x.good {
			goodN++
		}
	}
	if t.Requests > 0 {
		t.SLAAttainment = round6(float64(goodN) / float64(t.Requests))
	}
	for _, st := range rep.Stages {
		if st.Requests.Total == 0 || st.SLA != nil && st.SLA.Met {
			t.WindowsMeetingSLA++
		}
	}
	if v, err := Metric(rep, d.BindingMetric); err == nil {
		t.LatencyMS = v
	}
	return t
}

func (d *DayPlan) summary() string {
	a, s := d.Autoscaled, d.Static
	span := fmt.Sprintf("%.3g h", d.DurationS/3600)
	during := ""
	if a.DuringScaleUps != nil && a.DuringScaleUps.Requests > 0 {
		during = fmt.Sprintf(", %.1f%% of those sent while replicas started", 100*a.DuringScaleUps.SLAAttainment)
	}
	return fmt.Sprintf("Over the %s profile, an autoscaler holding %d–%d replicas (aiming at %.3g %s per replica, a %.0f s scale-up delay) uses %.1f GPU-hours a day ($%.2f/day) where a static %s sized for the peak use %.1f ($%.2f/day), %.0f%% less; SLA met for %.2f%% of requests%s, against %.2f%% static",
		span, d.Autoscaler.MinReplicas, d.Autoscaler.MaxReplicas, d.Autoscaler.Target, metricUnit(d.Autoscaler.Metric), d.Autoscaler.ColdStart.ScaleUpDelayS,
		a.GPUHoursPerDay, a.CostPerDayUSD, plural(s.Replicas, "replica"), s.GPUHoursPerDay, s.CostPerDayUSD, d.SavingsPct,
		100*a.SLAAttainment, during, 100*s.SLAAttainment)
}

func metricUnit(m string) string {
	switch m {
	case sim.ScaleOnInFlight:
		return "requests in flight"
	case sim.ScaleOnKVUsage:
		return "KV-cache usage"
	}
	return "req/s"
}

func round6(x float64) float64 { return math.Round(x*1e6) / 1e6 }
