package plan

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sort"

	"github.com/headroom-sim/headroom/internal/study/scenario"
	"github.com/headroom-sim/headroom/internal/study/uncertainty"
	"github.com/headroom-sim/headroom/sim"
	"github.com/headroom-sim/headroom/sim/workload"
)

// Load dimensions a search varies.
const (
	DimRate        = "rate_rps"    // open-loop arrival rate
	DimConcurrency = "concurrency" // closed-loop users
	DimSpeedup     = "speedup"     // trace replay speed
)

// LoadSpec asks for the highest load a scenario sustains within its SLA.
type LoadSpec struct {
	Scenario scenario.Scenario `json:"scenario"`
	// MaxLoad caps the search (0 = 1024 × the scenario's load).
	MaxLoad float64 `json:"max_load,omitempty"`
	// Tolerance is the relative width at which bisection stops (0 = 2%).
	Tolerance float64 `json:"tolerance,omitempty"`
	// MaxProbes bounds the simulations of the search (0 = 24); the
	// answer's band takes up to MaxProbes/2 (at least 4) more for each of
	// its four ends.
	MaxProbes int `json:"max_probes,omitempty"`
	// MinDurationS makes each rate probe send at least rate × MinDurationS
	// requests, so a queue that grows under overload has time to show
	// (0 = 120 s; at most MaxProbeRequests).
	MinDurationS float64 `json:"min_duration_s,omitempty"`
	// SkipBands leaves out the search of the answer's error band
	// (LoadResult.MaxLoadInterval), which costs up to MaxProbes/2 more
	// simulations for each of its four ends.
	SkipBands bool `json:"skip_bands,omitempty"`
}

// MaxProbeRequests caps the requests of one probe.
const MaxProbeRequests = 200_000

// Probe is one simulated load.
type Probe struct {
	Load          float64        `json:"load"`
	Met           bool           `json:"met"`
	GoodputRPS    float64        `json:"goodput_rps"`
	ThroughputRPS float64        `json:"throughput_rps"`
	OutputTokensS float64        `json:"output_tokens_per_s"`
	Checks        []sim.SLACheck `json:"checks"`
	// Limiting is the bound furthest over its limit ("ttft_ms.p99"), or
	// the closest to it when all are met.
	Limiting string `json:"limiting"`
	// Reason says why Limiting is missed beyond its value: no request
	// completed, or those that never did count against it.
	Reason string `json:"reason,omitempty"`
}

// LoadResult is the outcome of a search.
type LoadResult struct {
	Dimension string `json:"dimension"`
	// MaxLoad is the highest probed load that met the SLA (0: none did).
	MaxLoad float64 `json:"max_load"`
	// LimitingMetric is the bound that breaks first above MaxLoad.
	LimitingMetric string `json:"limiting_metric"`
	// Reason says why no load met the SLA (MaxLoad 0), from the lowest
	// load probed.
	Reason string `json:"reason,omitempty"`
	// MaxLoadInterval is MaxLoad's error band (loadbands.go): the highest
	// loads at which the SLA holds with its figures at the upper and lower
	// ends of their 80% and 95% bands, to the search's tolerance; Runs are
	// the fewest validation runs behind a check's band at MaxLoad. Nil
	// when no load met the SLA or the bands were skipped.
	MaxLoadInterval *sim.Interval `json:"max_load_interval,omitempty"`
	// Knee is the probe with the highest goodput.
	Knee   Probe   `json:"knee"`
	Probes []Probe `json:"probes"`
}

// ErrNoSLA is returned when a search has no SLA to hold.
var ErrNoSLA = errors.New("the scenario has no sla to search against")

// loadOf reads the scenario's load along its dimension.
func loadOf(s *scenario.Scenario) (dim string, load float64, err error) {
	w := &s.Workload
	switch {
	case w.Trace != nil:
		sp := w.Trace.Speedup
		if sp == 0 {
			sp = 1
		}
		return DimSpeedup, sp, nil
	case len(w.Stages) > 0:
		return "", 0, fmt.Errorf("a staged workload has no single load to search; use a rate or a concurrency")
	case w.Arrival.Type == workload.ArrivalClosedLoop:
		return DimConcurrency, float64(w.Arrival.Concurrency), nil
	}
	return DimRate, w.Arrival.RateRPS, nil
}

// withLoad returns s at the given load.
func withLoad(s scenario.Scenario, dim string, load float64) scenario.Scenario {
	switch dim {
	case DimSpeedup:
		t := *s.Workload.Trace
		t.Speedup = load
		s.Workload.Trace = &t
	case DimConcurrency:
		s.Workload.Arrival.Concurrency = int(math.Round(load))
	default:
		s.Workload.Arrival.RateRPS = load
	}
	return s
}

func probe(load float64, rep *sim.Report) Probe {
	p := Probe{Load: load, ThroughputRPS: rep.Throughput.RequestsPerS, OutputTokensS: rep.Throughput.OutputTokensPerS}
	if rep.SLA != nil {
		p.Met, p.Checks = rep.SLA.Met, rep.SLA.Checks
	}
	if rep.GoodputRPS != nil {
		p.GoodputRPS = *rep.GoodputRPS
	}
	p.Limiting = limitingCheck(p.Checks)
	p.Reason = checkReason(p.Checks, p.Limiting)
	return p
}

// MaxLoad finds the highest load at which the scenario's SLA holds:
// doubling (or halving) from the scenario's own load to bracket it, then
// bisecting. Every probe uses the scenario's seed, so the arrival sequence
// only stretches with the load.
func (r *Runner) MaxLoad(ctx context.Context, spec LoadSpec, prog *Progress) (*LoadResult, error) {
	s := spec.Scenario
	if s.SLA == nil {
		return nil, ErrNoSLA
	}
	dim, l0, err := loadOf(&s)
	if err != nil {
		return nil, err
	}
	if l0 <= 0 {
		l0 = 1
	}
	tol := spec.Tolerance
	if tol <= 0 {
		tol = 0.02
	}
	maxProbes := spec.MaxProbes
	if maxProbes <= 0 {
		maxProbes = 24
	}
	capLoad := spec.MaxLoad
	if capLoad <= 0 {
		capLoad = l0 * 1024
	}
	minDur := spec.MinDurationS
	if minDur <= 0 {
		minDur = 120
	}
	minLoad := l0 / 1024
	if dim == DimConcurrency {
		minLoad = 1
	}
	res := &LoadResult{Dimension: dim}
	var model *uncertainty.Model
	if !spec.SkipBands {
		if model, err = uncertainty.Builtin(); err != nil {
			return nil, err
		}
	}
	cache := map[float64]Probe{}
	bands := map[float64]probeBands{}
	budget := maxProbes
	eval := func(load float64) (Probe, error) {
		if dim == DimConcurrency {
			load = math.Max(1, math.Round(load))
		}
		if p, ok := cache[load]; ok {
			return p, nil
		}
		if budget <= 0 {
			return Probe{}, errProbeBudget
		}
		budget--
		prog.Grow(1)
		ps := withLoad(s, dim, load)
		if dim == DimRate {
			want := int(math.Ceil(load * minDur))
			ps.Workload.Requests = min(max(ps.Workload.Requests, want), max(ps.Workload.Requests, MaxProbeRequests))
		}
		out := r.Run(ctx, ps)
		prog.Step()
		if out.Err != nil {
			return Probe{}, out.Err
		}
		p := probe(load, out.Report)
		cache[load] = p
		if model != nil {
			bands[load] = checkBands(model, &out.Resolved.Config, out.Report)
		}
		return p, nil
	}
	if _, err := eval(l0); err != nil {
		return nil, err
	}
	b := bracket{eval: eval, l0: l0, minLoad: minLoad, capLoad: capLoad, tol: tol, dim: dim}
	lo, hi := b.highest(func(p Probe) bool { return p.Met })
	if model != nil && lo > 0 && ctx.Err() == nil {
		// The bands' searches start from the probes the point search ran
		// (cached) and bisect to the same tolerance, each with a budget
		// of its own.
		var in sim.Interval
		for k, dst := range []*float64{&in.P95[0], &in.P80[0], &in.P80[1], &in.P95[1]} {
			budget = max(maxProbes/2, 4)
			*dst, _ = b.highest(func(p Probe) bool { return metAt(p, bands[p.Load].checks, k) })
		}
		in.Runs, in.Pool = bands[lo].runs, "the SLA's figures at the ends of their bands, judged at each probed load"
		res.MaxLoadInterval = &in
		// The bands' probes may have met the SLA above the point search's
		// answer (one its budget stopped short of): the answer is the
		// highest load met below every load missed.
		lo, hi = highestMet(cache)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	res.MaxLoad = lo
	for _, p := range cache {
		res.Probes = append(res.Probes, p)
	}
	sort.Slice(res.Probes, func(i, j int) bool { return res.Probes[i].Load < res.Probes[j].Load })
	for _, p := range res.Probes {
		if p.GoodputRPS > res.Knee.GoodputRPS || res.Knee.Load == 0 {
			res.Knee = p
		}
	}
	if hi > 0 {
		res.LimitingMetric = cache[hi].Limiting
	}
	if lo == 0 && len(res.Probes) > 0 {
		low := res.Probes[0]
		why := low.Reason
		if why == "" {
			why = fmt.Sprintf("%s is past its bound", low.Limiting)
			if v, lim, ok := checkValue(low.Checks, low.Limiting); ok {
				why = missText(low.Limiting, v, lim)
			}
		}
		res.Reason = fmt.Sprintf("no load probed meets the SLA: at the lowest, %s, %s", loadText(dim, low.Load), why)
	}
	return res, nil
}

var errProbeBudget = errors.New("probe budget spent")

// bracket finds the highest load a predicate holds at: doubling (or
// halving) from l0 to bracket it, then bisecting to tol; probes come from
// eval, which caches them, so a second predicate reuses the first's.
type bracket struct {
	eval                      func(float64) (Probe, error)
	l0, minLoad, capLoad, tol float64
	dim                       string
}

// highest is the highest load probed that met (0: none) and the lowest
// above it that did not (0: none).
func (b *bracket) highest(met func(Probe) bool) (lo, hi float64) {
	p, err := b.eval(b.l0)
	if err != nil {
		return 0, 0
	}
	if met(p) {
		lo = p.Load
		for l := lo * 2; l <= b.capLoad; l *= 2 {
			q, err := b.eval(l)
			if err != nil {
				break
			}
			if !met(q) {
				hi = q.Load
				break
			}
			lo = q.Load
		}
	} else {
		hi = p.Load
		for l := hi / 2; l >= b.minLoad; l /= 2 {
			q, err := b.eval(l)
			if err != nil {
				break
			}
			if met(q) {
				lo = q.Load
				break
			}
			hi = q.Load
			if b.dim == DimConcurrency && q.Load <= 1 {
				break
			}
		}
	}
	for lo > 0 && hi > 0 && (hi-lo)/lo > b.tol && !(b.dim == DimConcurrency && hi-lo <= 1) {
		mid := (lo + hi) / 2
		if b.dim == DimConcurrency {
			mid = math.Floor(mid)
		}
		q, err := b.eval(mid)
		if err != nil || q.Load == lo || q.Load == hi {
			break
		}
		if met(q) {
			lo = q.Load
		} else {
			hi = q.Load
		}
	}
	return lo, hi
}
