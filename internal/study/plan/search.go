package plan

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sort"

	"github.com/headroom-sim/headroom/internal/study/scenario"
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
	// MaxProbes bounds the simulations (0 = 24).
	MaxProbes int `json:"max_probes,omitempty"`
	// MinDurationS makes each rate probe send at least rate × MinDurationS
	// requests, so a queue that grows under overload has time to show
	// (0 = 120 s; at most MaxProbeRequests).
	MinDurationS float64 `json:"min_duration_s,omitempty"`
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
	cache := map[float64]Probe{}
	eval := func(load float64) (Probe, error) {
		if dim == DimConcurrency {
			load = math.Max(1, math.Round(load))
		}
		if p, ok := cache[load]; ok {
			return p, nil
		}
		if len(cache) >= maxProbes {
			return Probe{}, errProbeBudget
		}
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
		return p, nil
	}
	lo, hi := 0.0, 0.0 // lo met (0: none yet), hi failed (0: none yet)
	p, err := eval(l0)
	if err != nil {
		return nil, err
	}
	if p.Met {
		lo = p.Load
		for l := lo * 2; l <= capLoad; l *= 2 {
			q, err := eval(l)
			if err != nil {
				break
			}
			if !q.Met {
				hi = q.Load
				break
			}
			lo = q.Load
		}
	} else {
		hi = p.Load
		for l := hi / 2; l >= minLoad; l /= 2 {
			q, err := eval(l)
			if err != nil {
				break
			}
			if q.Met {
				lo = q.Load
				break
			}
			hi = q.Load
			if dim == DimConcurrency && q.Load <= 1 {
				break
			}
		}
	}
	for lo > 0 && hi > 0 && (hi-lo)/lo > tol && !(dim == DimConcurrency && hi-lo <= 1) {
		mid := (lo + hi) / 2
		if dim == DimConcurrency {
			mid = math.Floor(mid)
		}
		q, err := eval(mid)
		if err != nil || q.Load == lo || q.Load == hi {
			break
		}
		if q.Met {
			lo = q.Load
		} else {
			hi = q.Load
		}
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
