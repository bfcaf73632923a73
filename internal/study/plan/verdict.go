package plan

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/headroom-sim/headroom/internal/study/scenario"
	"github.com/headroom-sim/headroom/sim"
	"github.com/headroom-sim/headroom/sim/stats"
)

// An SLA verdict often needs only part of a run: once enough requests
// have finished past a bound, the bound's quantile over the whole run
// cannot come back under it. Searches stop such runs early (a missed
// probe is most of a search's cost, its queue growing without end).
//
// For a quantile q over the n requests the run will have measured at
// most (numpy's linear interpolation between closest ranks, as
// sim/stats computes it), the sorted value at floor(q(n−1)) and every one
// above it are past the bound once n − floor(q(n−1)) finished requests
// are; fewer final samples (rejections) only lower that count. A mean is
// past the bound once the sum so far over n is; a max at the first.

// errMissed is the cause of a run stopped because its SLA can no longer
// hold.
var errMissed = errors.New("the SLA can no longer hold")

// slaWatch counts each per-request bound's finished requests past it.
type slaWatch struct {
	n      int
	bounds []watchBound
	cancel context.CancelCauseFunc
	// broken is the first bound that can no longer hold ("ttft_ms.p99").
	broken string
	// seen is the requests finished when it broke.
	seen int
}

type watchBound struct {
	name   string
	limit  float64
	need   int  // requests past the limit that break a quantile bound
	mean   bool // a mean: broken once sum / n is past the limit
	metric int  // 0 ttft, 1 tpot, 2 e2e
	over   int
	sum    float64
}

// roundingSlack covers the report's rounding of quantiles to 4 decimals.
const roundingSlack = 1e-4

// newSLAWatch watches sla's per-request bounds over a run of n measured
// requests (nil when no bound can be watched).
func newSLAWatch(sla *sim.SLA, n int, cancel context.CancelCauseFunc) *slaWatch {
	if sla == nil || n < 1 {
		return nil
	}
	w := &slaWatch{n: n, cancel: cancel}
	for i, m := range []struct {
		name string
		qs   map[string]float64
	}{{"ttft_ms", sla.TTFTMS}, {"tpot_ms", sla.TPOTMS}, {"e2e_ms", sla.E2EMS}} {
		names := make([]string, 0, len(m.qs))
		for q := range m.qs {
			names = append(names, q)
		}
		slices.Sort(names)
		for _, q := range names {
			b := watchBound{name: m.name + "." + q, limit: m.qs[q] + roundingSlack, metric: i}
			switch q {
			case "mean":
				b.mean = true
			case "max":
				b.need = 1
			default:
				f, ok := quantileFraction(q)
				if !ok {
					continue
				}
				b.need = n - int(math.Floor(f*float64(n-1)))
			}
			w.bounds = append(w.bounds, b)
		}
	}
	if len(w.bounds) == 0 {
		return nil
	}
	return w
}

// quantileFraction is the fraction of a named quantile.
func quantileFraction(q string) (float64, bool) {
	return stats.Fraction(q)
}

// sample takes one finished request.
func (w *slaWatch) sample(r sim.RequestSample) {
	if w.broken != "" {
		return
	}
	w.seen++
	for i := range w.bounds {
		b := &w.bounds[i]
		var v float64
		switch b.metric {
		case 0:
			v = r.TTFTMS
		case 1:
			if r.OutputTokens <= 1 {
				continue
			}
			v = r.TPOTMS
		default:
			v = r.E2EMS
		}
		b.sum += v
		if v > b.limit {
			b.over++
		}
		if b.mean && b.sum/float64(w.n) > b.limit || !b.mean && b.over >= b.need {
			w.broken = b.name
			w.cancel(errMissed)
			return
		}
	}
}

// measured is how many requests a resolved run measures, at most (0:
// unknown, as for stages).
func measured(cfg *sim.Config) int {
	w := &cfg.Workload
	switch {
	case len(w.Stages) > 0:
		return 0
	case w.Trace != nil:
		if w.Requests > 0 {
			return min(w.Requests, len(w.Trace))
		}
		return len(w.Trace)
	}
	return w.Requests
}

// verdict is one simulated configuration and load judged by the SLA.
type verdict struct {
	met bool
	// stopped: the run was stopped once the SLA could no longer hold
	// (rep is then nil, checks empty).
	stopped bool
	// limiting is the bound furthest past its limit (or closest to it
	// when all hold; the one that broke when stopped).
	limiting string
	// seen is how many requests had finished when a stopped run stopped.
	seen, of int
	rep      *sim.Report
	res      *scenario.Resolved
}

// judge runs s and judges it by its SLA; with early, a run that can no
// longer meet the SLA is stopped.
func (r *Runner) judge(ctx context.Context, s scenario.Scenario, early bool) (verdict, error) {
	if !early {
		out := r.Run(ctx, s)
		if out.Err != nil {
			return verdict{res: out.Resolved}, out.Err
		}
		return fullVerdict(out), nil
	}
	cctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var w *slaWatch
	out := r.run(cctx, s, func(res *scenario.Resolved) []sim.Option {
		w = newSLAWatch(res.Config.SLA, measured(&res.Config), cancel)
		if w == nil {
			return nil
		}
		return []sim.Option{sim.WithRequestSink(w.sample)}
	})
	if out.Err != nil {
		if w != nil && w.broken != "" && ctx.Err() == nil && errors.Is(context.Cause(cctx), errMissed) {
			return verdict{stopped: true, limiting: w.broken, seen: w.seen, of: w.n, res: out.Resolved}, nil
		}
		return verdict{res: out.Resolved}, out.Err
	}
	return fullVerdict(out), nil
}

func fullVerdict(out Outcome) verdict {
	v := verdict{rep: out.Report, res: out.Resolved}
	if sla := out.Report.SLA; sla != nil {
		v.met = sla.Met
		v.limiting = limitingCheck(sla.Checks)
	}
	return v
}

// limitingCheck is the bound furthest over its limit, or the closest to
// it when all are met. A bound missed for a reason beyond its value (no
// request completed, or those that never did count against it) is the
// furthest over.
func limitingCheck(cs []sim.SLACheck) string {
	worst, name := -1.0, ""
	for _, c := range cs {
		r := c.ValueMS / c.LimitMS
		if !c.Met && c.Reason != "" {
			r = math.Inf(1)
		}
		if r > worst {
			worst, name = r, c.Metric+"."+c.Quantile
		}
	}
	return name
}

// checkReason is the reason a bound is missed beyond its value ("" when
// none, or the bound is not among cs).
func checkReason(cs []sim.SLACheck, name string) string {
	for _, c := range cs {
		if c.Metric+"."+c.Quantile == name && !c.Met {
			return c.Reason
		}
	}
	return ""
}

// checkValue reads a bound's value from checks ("ttft_ms.p99").
func checkValue(cs []sim.SLACheck, name string) (value, limit float64, ok bool) {
	for _, c := range cs {
		if c.Metric+"."+c.Quantile == name {
			return c.ValueMS, c.LimitMS, true
		}
	}
	return 0, 0, false
}

// describeStop says why a stopped run missed its SLA.
func (v verdict) describeStop(sla *sim.SLA) string {
	metric, q, _ := strings.Cut(v.limiting, ".")
	limit := 0.0
	if sla != nil {
		limit = map[string]map[string]float64{"ttft_ms": sla.TTFTMS, "tpot_ms": sla.TPOTMS, "e2e_ms": sla.E2EMS}[metric][q]
	}
	return fmt.Sprintf("%s above %g ms (stopped after %d of %d requests, past recovery)", v.limiting, limit, v.seen, v.of)
}

// summaryAt reads a named quantile of a summary.
func summaryAt(s stats.Summary, q string) float64 {
	v, _ := s.At(q)
	return v
}
