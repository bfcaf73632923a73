package plan

import (
	"context"
	"math"
	"sync/atomic"

	"github.com/headroom-sim/headroom/internal/study/scenario"
)

// The search of one GPU × TP. Every probe runs the plan's own workload
// (the same requests, lengths and seed) with its arrivals compressed or
// stretched to a multiple of the target load, so the SLA verdict at the
// target and every headroom probe come from one workload model: the
// probe at 1× is the verdict run, and a candidate meets the SLA exactly
// when its headroom is at least 1.

// headroomTolerance is the relative precision of a headroom search.
const headroomTolerance = 0.05

// searcher runs the probes of a plan.
type searcher struct {
	r      *Runner
	spec   *PlanSpec
	base   scenario.Scenario // at the target load
	dim    string
	target float64
	sims   atomic.Int64
}

func (q *searcher) simulations() int { return int(q.sims.Load()) }

// shapeResult is what the search of one shape found.
type shapeResult struct {
	// candidates meet the SLA at the target: the fewest replicas that
	// also hold it at Headroom × the target (qualifying), and the fewest
	// that hold it at the target only (short of the headroom).
	candidates []Candidate
	// missed is the most replicas tried, when even they miss the SLA.
	missed *Candidate
	err    error
}

// probeKey is one probe of a shape: replicas and load multiple.
type probeKey struct {
	n    int
	load float64
}

// shapeSearch caches the probes of one shape (one goroutine).
type shapeSearch struct {
	q     *searcher
	shape Config
	cache map[probeKey]verdict
}

// load is the scenario's load at multiple m of the target (whole users
// for a closed loop).
func (q *searcher) load(m float64) float64 {
	l := q.target * m
	if q.dim == DimConcurrency {
		l = math.Max(1, math.Round(l))
	}
	return l
}

// at judges n replicas at multiple m of the target; early stops a run
// that can no longer meet the SLA. A cached full verdict serves both.
func (ss *shapeSearch) at(ctx context.Context, n int, m float64, early bool) (verdict, error) {
	k := probeKey{n, ss.q.load(m)}
	if v, ok := ss.cache[k]; ok && (early || !v.stopped) {
		return v, nil
	}
	s := withLoad(ss.q.base, ss.q.dim, k.load)
	s.GPU, s.TP, s.Replicas = ss.shape.GPU, ss.shape.TP, n
	v, err := ss.q.r.judge(ctx, s, early)
	ss.q.sims.Add(1)
	if err != nil {
		return v, err
	}
	ss.cache[k] = v
	return v, nil
}

// fewest is the fewest replicas up to hi meeting the SLA at multiple m
// (doubling, then bisecting; 0 when none does).
func (ss *shapeSearch) fewest(ctx context.Context, m float64, hi int) (int, error) {
	lo, found := 0, 0 // lo missed (0: none yet)
	for n := 1; ; n *= 2 {
		n = min(n, hi)
		v, err := ss.at(ctx, n, m, true)
		if err != nil {
			return 0, err
		}
		if v.met {
			found = n
			break
		}
		lo = n
		if n == hi {
			return 0, nil
		}
	}
	for found-lo > 1 {
		mid := (lo + found) / 2
		v, err := ss.at(ctx, mid, m, true)
		if err != nil {
			return 0, err
		}
		if v.met {
			found = mid
		} else {
			lo = mid
		}
	}
	return found, nil
}

// headroom searches the highest multiple of the target n replicas
// sustain: lo is known to meet the SLA, hi (0: none yet) to miss it.
// Doubling stops at the cap (the headroom is then at least the cap).
func (ss *shapeSearch) headroom(ctx context.Context, n int, lo, hi, cap float64) (h float64, limiting string, capped bool, err error) {
	v, err := ss.at(ctx, n, lo, true)
	if err != nil {
		return 0, "", false, err
	}
	limiting = v.limiting
	for hi == 0 {
		next := math.Min(lo*2, cap)
		if next <= lo || ss.q.load(next) == ss.q.load(lo) {
			return lo, limiting, true, nil
		}
		v, err := ss.at(ctx, n, next, true)
		if err != nil {
			return 0, "", false, err
		}
		if v.met {
			lo, limiting = next, v.limiting
			if next >= cap {
				return lo, limiting, true, nil
			}
			continue
		}
		hi = next
	}
	for (hi-lo)/lo > headroomTolerance {
		mid := (lo + hi) / 2
		if l := ss.q.load(mid); l == ss.q.load(lo) || l == ss.q.load(hi) {
			break
		}
		v, err := ss.at(ctx, n, mid, true)
		if err != nil {
			return 0, "", false, err
		}
		if v.met {
			lo = mid
		} else {
			hi = mid
		}
	}
	if v, ok := ss.cache[probeKey{n, ss.q.load(hi)}]; ok {
		limiting = v.limiting
	}
	return lo, limiting, false, nil
}

// headroomCap is where a headroom search stops doubling.
func (q *searcher) headroomCap() float64 { return math.Max(2, 2*q.spec.Headroom) }

// search finds the shape's candidates.
func (q *searcher) search(ctx context.Context, shape Config) shapeResult {
	ss := &shapeSearch{q: q, shape: shape, cache: map[probeKey]verdict{}}
	h := q.spec.Headroom
	out := shapeResult{}
	add := func(n int, qualifies bool) error {
		v, err := ss.at(ctx, n, 1, false)
		if err != nil {
			return err
		}
		c, err := q.r.candidate(q.spec, v, Config{shape.GPU, shape.TP, n})
		if err != nil {
			return err
		}
		if !c.MeetsSLA {
			return q.addMissed(&out, ss, c, n)
		}
		c.Qualifies = qualifies
		switch {
		case qualifies && q.spec.SkipHeadroom:
			c.Headroom, c.HeadroomCapped, c.HeadroomLimiting = h, true, ss.cache[probeKey{n, q.load(h)}].limiting
		case qualifies:
			c.Headroom, c.HeadroomLimiting, c.HeadroomCapped, err = ss.headroom(ctx, n, h, 0, q.headroomCap())
		case q.spec.SkipHeadroom || h == 1:
			c.Headroom, c.HeadroomLimiting = 1, v.limiting
		default:
			c.Headroom, c.HeadroomLimiting, c.HeadroomCapped, err = ss.headroom(ctx, n, 1, h, h)
		}
		if err != nil {
			return err
		}
		out.candidates = append(out.candidates, c)
		return nil
	}
	if shape.Replicas > 0 { // a given configuration
		n := shape.Replicas
		v, err := ss.at(ctx, n, 1, true) // a miss needs no figures: stop it early
		if err == nil && v.stopped {
			c, cerr := q.r.candidate(q.spec, v, Config{shape.GPU, shape.TP, n})
			if cerr == nil {
				cerr = q.addMissed(&out, ss, c, n)
			}
			out.err = cerr
			return out
		}
		if err == nil && v.met && h > 1 {
			v, err = ss.at(ctx, n, h, true)
		}
		if err == nil {
			err = add(n, v.met)
		}
		out.err = err
		return out
	}
	nh, err := ss.fewest(ctx, h, q.spec.MaxReplicas)
	if err != nil {
		return shapeResult{err: err}
	}
	hi := q.spec.MaxReplicas
	if nh > 0 {
		if err := add(nh, true); err != nil {
			return shapeResult{err: err}
		}
		hi = nh - 1
	}
	if hi < 1 || h == 1 {
		return out
	}
	// Fewer replicas that meet the SLA at the target without the headroom:
	// the cheaper configuration a user would otherwise pick.
	nt, err := ss.fewest(ctx, 1, hi)
	if err != nil {
		return shapeResult{err: err}
	}
	switch {
	case nt > 0:
		err = add(nt, false)
	case nh == 0:
		v, verr := ss.at(ctx, hi, 1, true)
		if verr != nil {
			return shapeResult{err: verr}
		}
		c, cerr := q.r.candidate(q.spec, v, Config{shape.GPU, shape.TP, hi})
		if cerr != nil {
			return shapeResult{err: cerr}
		}
		err = q.addMissed(&out, ss, c, hi)
	}
	out.err = err
	return out
}

// addMissed records c (n replicas at the target) as missing the SLA.
func (q *searcher) addMissed(out *shapeResult, ss *shapeSearch, c Candidate, n int) error {
	v := ss.cache[probeKey{n, q.load(1)}]
	c.HeadroomLimiting = v.limiting
	c.LostOn = LostSLA
	if v.stopped {
		c.WhyNot = "misses the SLA at the target: " + v.describeStop(q.base.SLA)
	} else if val, lim, ok := checkValue(c.Checks, v.limiting); ok {
		c.WhyNot = missText(v.limiting, val, lim)
	}
	out.missed = &c
	return nil
}
