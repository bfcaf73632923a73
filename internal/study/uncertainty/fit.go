package uncertainty

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
)

// Headline are the metrics the error model gives bands for: each latency's
// mean and quantiles up to p99, and the request throughput.
var Headline = func() []string {
	var out []string
	for _, m := range []string{"ttft_ms", "tpot_ms", "itl_ms", "e2e_ms"} {
		for _, q := range []string{"mean", "p50", "p90", "p95", "p99"} {
			out = append(out, m+"."+q)
		}
	}
	return append(out, "throughput.requests_per_s")
}()

// FitOptions are a fit's thresholds.
type FitOptions struct {
	MinRuns, MinGroups int
	WidenPerOutside    float64
	Source, Checked    string
}

// DefaultFit are the thresholds of the shipped model: a pool needs 20
// residuals from 5 groups. One group's runs share the causes of their
// errors, so a band drawn from few groups says how those were off, not
// how a new one will be: held out group by group, pools of 3 or 4 groups
// covered 70-74% of the closed loops' mean TTFT and TPOT with their 80%
// bands, pools of 5 or more 77-81% (the sweep over 2-8 groups and 10-40
// runs of the pre-refit residuals; the runs mattered less). Each feature
// outside the envelope widens the bands by half (Model.WidenRatio).
var DefaultFit = FitOptions{MinRuns: 20, MinGroups: 5, WidenPerOutside: 0.5}

// Fit pools the residuals of the headline metrics (the others are left
// out) into a model.
func Fit(rs []Residual, opt FitOptions) (*Model, error) {
	m := &Model{Version: 1, Source: opt.Source, Checked: opt.Checked, MinRuns: opt.MinRuns, MinGroups: opt.MinGroups,
		WidenPerOutside: opt.WidenPerOutside}
	type acc struct {
		metric string
		where  map[string]string
		errs   []float64
		groups []string
	}
	pools := map[string]*acc{}
	values := map[string]map[string]bool{}
	gpus := map[string]bool{}
	n := 0
	for i := range rs {
		r := &rs[i]
		if !slices.Contains(Headline, r.Metric) || !(r.Predicted > 0) || !(r.Measured > 0) {
			continue
		}
		n++
		for _, f := range Features {
			if values[f] == nil {
				values[f] = map[string]bool{}
			}
			values[f][r.Regime.Value(f)] = true
		}
		gpus[r.Regime.GPU] = true
		m.Envelope.MaxPromptTokens = math.Max(m.Envelope.MaxPromptTokens, r.Regime.PromptTokens)
		m.Envelope.MaxOutputTokens = math.Max(m.Envelope.MaxOutputTokens, r.Regime.OutputTokens)
		e := r.LogError()
		for _, l := range chain(r.Metric, r.Regime) {
			k := poolKey(l.metric, l.where)
			a := pools[k]
			if a == nil {
				a = &acc{metric: l.metric, where: l.where}
				pools[k] = a
			}
			a.errs = append(a.errs, e)
			a.groups = append(a.groups, r.Group)
		}
	}
	if n == 0 {
		return nil, fmt.Errorf("error model: no residual of a headline metric")
	}
	m.Envelope.Values = map[string][]string{}
	for f, vs := range values {
		m.Envelope.Values[f] = slices.Sorted(maps.Keys(vs))
	}
	m.Envelope.GPUs = slices.Sorted(maps.Keys(gpus))
	for _, k := range slices.Sorted(maps.Keys(pools)) {
		a := pools[k]
		g := distinct(a.groups)
		if len(a.errs) < opt.MinRuns || g < opt.MinGroups {
			continue
		}
		m.Pools = append(m.Pools, Pool{Metric: a.metric, Where: a.where, Runs: len(a.errs), Groups: g,
			Quantiles: groupQuantiles(a.errs, a.groups, Levels)})
	}
	sort.SliceStable(m.Pools, func(i, j int) bool {
		pi, pj := &m.Pools[i], &m.Pools[j]
		if pi.Metric != pj.Metric {
			return pi.Metric < pj.Metric
		}
		return len(pi.Where) > len(pj.Where)
	})
	m.index()
	return m, nil
}

// groupQuantiles are the quantiles at ps of xs, each group's values
// weighing 1 in all (a group of 200 runs counts as much as one of 20):
// the band is for a new group, and the groups' errors differ more than
// the runs of one group do.
func groupQuantiles(xs []float64, groups []string, ps []float64) []float64 {
	count := map[string]int{}
	for _, g := range groups {
		count[g]++
	}
	type wx struct{ x, w float64 }
	v := make([]wx, len(xs))
	total := 0.0
	for i, x := range xs {
		v[i] = wx{x, 1 / float64(count[groups[i]])}
		total += v[i].w
	}
	sort.Slice(v, func(i, j int) bool { return v[i].x < v[j].x })
	out := make([]float64, len(ps))
	for i, p := range ps {
		// The value whose weight straddles p of the total, each value
		// at the middle of its weight (a weighted Hazen quantile).
		target, cum := p*total, 0.0
		out[i] = v[len(v)-1].x
		for j := range v {
			mid := cum + v[j].w/2
			if mid >= target {
				if j == 0 {
					out[i] = v[0].x
				} else {
					prev := cum - v[j-1].w/2
					t := (target - prev) / (mid - prev)
					out[i] = v[j-1].x + t*(v[j].x-v[j-1].x)
				}
				break
			}
			cum += v[j].w
		}
	}
	return out
}

func distinct(xs []string) int {
	seen := map[string]bool{}
	for _, x := range xs {
		seen[x] = true
	}
	return len(seen)
}
