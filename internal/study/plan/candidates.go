package plan

import (
	"context"
	"fmt"
	"math"
	"sync/atomic"

	"github.com/headroom-sim/headroom/internal/study/scenario"
)

// The search of one GPU × TP (of one pair of pool types, disaggregated:
// searchDisagg in disagg.go, on the same probes). Every probe runs the plan's own workload
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

// probeKey is one probe of a shape: replicas (the decode pool's, with
// the prefill pool's, when disaggregated) and load.
type probeKey struct {
	n, prefill int
	load       float64
}

// shapeSearch caches the probes of one shape (one goroutine). Its replica
// count n is the shape's replicas or, for a disaggregated shape, those of
// the pool it varies (vary), the other pool holding fixed replicas; views
// along either pool share the probes (along).
type shapeSearch struct {
	q     *searcher
	shape Config
	vary  string // disaggregated: scenario.PoolPrefill or PoolDecode
	fixed int    // disaggregated: the other pool's replicas
	cache map[probeKey]verdict
}

// config is the shape with n replicas.
func (ss *shapeSearch) config(n int) Config {
	if ss.shape.Disaggregation == nil {
		return Config{GPU: ss.shape.GPU, TP: ss.shape.TP, Replicas: n}
	}
	d := *ss.shape.Disaggregation
	d.Prefill.Replicas, d.Decode.Replicas = ss.fixed, n
	if ss.vary == scenario.PoolPrefill {
		d.Prefill.Replicas, d.Decode.Replicas = n, ss.fixed
	}
	return Config{Disaggregation: &d}
}

// key is the probe of n replicas at a load.
func (ss *shapeSearch) key(n int, load float64) probeKey {
	if d := ss.config(n).Disaggregation; d != nil {
		return probeKey{d.Decode.Replicas, d.Prefill.Replicas, load}
	}
	return probeKey{n, 0, load}
}

// along is the search of a disaggregated shape varying one pool's
// replicas, the other's at fixed, with the same probes.
func (ss *shapeSearch) along(pool string, fixed int) *shapeSearch {
	v := *ss
	v.vary, v.fixed = pool, fixed
	return &v
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
	k := ss.key(n, ss.q.load(m))
	if v, ok := ss.cache[k]; ok && (early || !v.stopped) {
		return v, nil
	}
	s := ss.config(n).Scenario(withLoad(ss.q.base, ss.q.dim, k.load))
	// A run stopped early is stopped on its point values: with a
	// confidence every run goes to the end and is judged on its bands.
	conf := ss.q.spec.Confidence
	v, err := ss.q.r.judge(ctx, s, early && conf == 0)
	ss.q.sims.Add(1)
	if err == nil && conf > 0 {
		err = confident(&v, conf)
	}
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
	if v, ok := ss.cache[ss.key(n, ss.q.load(hi))]; ok {
		limiting = v.limiting
	}
	return lo, limiting, false, nil
}

// headroomCap is where a headroom search stops doubling.
func (q *searcher) headroomCap() float64 { return math.Max(2, 2*q.spec.Headroom) }

// search finds the shape's candidates (searchDisagg those of a
// disaggregated one).
func (q *searcher) search(ctx context.Context, shape Config) shapeResult {
	if shape.Disaggregation != nil {
		return q.searchDisagg(ctx, shape)
	}
	ss := &shapeSearch{q: q, shape: shape, cache: map[probeKey]verdict{}}
	if shape.Replicas > 0 { // a given configuration
		return q.given(ctx, ss, shape.Replicas)
	}
	h := q.spec.Headroom
	out := shapeResult{}
	nh, err := ss.fewest(ctx, h, q.spec.MaxReplicas)
	if err != nil {
		return shapeResult{err: err}
	}
	hi := q.spec.MaxReplicas
	if nh > 0 {
		if err := q.add(ctx, ss, &out, nh, true); err != nil {
			return shapeResult{err: err}
		}
		hi = nh - 1
		if hi < 1 || h == 1 {
			return out
		}
	}
	// Fewer replicas that meet the SLA at the target without the headroom:
	// the cheaper configuration a user would otherwise pick (with none
	// meeting it at the headroom, any that meets it at the target).
	nt, err := ss.fewest(ctx, 1, hi)
	if err != nil {
		return shapeResult{err: err}
	}
	switch {
	case nt > 0:
		err = q.add(ctx, ss, &out, nt, false)
	case nh == 0:
		err = q.missedAt(ctx, ss, &out, hi)
	}
	out.err = err
	return out
}

// given judges n replicas of ss's shape as they are.
func (q *searcher) given(ctx context.Context, ss *shapeSearch, n int) shapeResult {
	out := shapeResult{}
	v, err := ss.at(ctx, n, 1, true) // a miss needs no figures: stop it early
	if err == nil && v.stopped {
		c, cerr := q.r.candidate(q.spec, v, ss.config(n))
		if cerr == nil {
			cerr = q.addMissed(&out, ss, c, n)
		}
		out.err = cerr
		return out
	}
	if h := q.spec.Headroom; err == nil && v.met && h > 1 {
		v, err = ss.at(ctx, n, h, true)
	}
	if err == nil {
		err = q.add(ctx, ss, &out, n, v.met)
	}
	out.err = err
	return out
}

// add runs n replicas of ss's shape at the target for their figures and
// adds them to out: as a candidate (qualifying or not, with its headroom
// searched unless the plan skips it), or as missed.
func (q *searcher) add(ctx context.Context, ss *shapeSearch, out *shapeResult, n int, qualifies bool) error {
	h := q.spec.Headroom
	v, err := ss.at(ctx, n, 1, false)
	if err != nil {
		return err
	}
	c, err := q.r.candidate(q.spec, v, ss.config(n))
	if err != nil {
		return err
	}
	if !c.MeetsSLA {
		return q.addMissed(out, ss, c, n)
	}
	c.Qualifies = qualifies
	switch {
	case qualifies && q.spec.SkipHeadroom:
		c.Headroom, c.HeadroomCapped, c.HeadroomLimiting = h, true, ss.cache[ss.key(n, q.load(h))].limiting
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

// missedAt records n replicas of ss's shape, the most tried, as missing
// the SLA at the target.
func (q *searcher) missedAt(ctx context.Context, ss *shapeSearch, out *shapeResult, n int) error {
	v, err := ss.at(ctx, n, 1, true)
	if err != nil {
		return err
	}
	c, err := q.r.candidate(q.spec, v, ss.config(n))
	if err != nil {
		return err
	}
	return q.addMissed(out, ss, c, n)
}

// addMissed records c (n replicas at the target) as missing the SLA.
func (q *searcher) addMissed(out *shapeResult, ss *shapeSearch, c Candidate, n int) error {
	v := ss.cache[ss.key(n, q.load(1))]
	c.HeadroomLimiting = v.limiting
	c.LostOn = LostSLA
	if v.stopped {
		c.WhyNot = "misses the SLA at the target: " + v.describeStop(q.base.SLA)
	} else if why := checkReason(c.Checks, v.limiting); why != "" {
		c.WhyNot = fmt.Sprintf("misses %s: %s", v.limiting, why)
	} else if val, lim, ok := checkValue(c.Checks, v.limiting); ok {
		c.WhyNot = missText(v.limiting, val, lim)
	}
	out.missed = &c
	return nil
}
