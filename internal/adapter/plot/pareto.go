package plot

import (
	"fmt"
	"io"
	"math"
	"slices"

	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/headroom-sim/headroom/internal/study/plan"
)

// paretoMetric names the latency the plan's front traded against cost:
// the candidates' figure it equals, or a generic name.
func paretoMetric(cs []plan.Candidate) string {
	names := []struct {
		name string
		get  func(*plan.Candidate) float64
	}{
		{"e2e_ms.p99", func(c *plan.Candidate) float64 { return c.E2EP99MS }},
		{"ttft_ms.p99", func(c *plan.Candidate) float64 { return c.TTFTP99MS }},
		{"tpot_ms.p99", func(c *plan.Candidate) float64 { return c.TPOTP99MS }},
	}
	for _, n := range names {
		all := true
		for i := range cs {
			if n.get(&cs[i]) != cs[i].ParetoLatencyMS {
				all = false
				break
			}
		}
		if all {
			return n.name
		}
	}
	return "Pareto latency"
}

// ConfigLabel names a cluster shape as gpu×tp×replicas (each pool of a
// disaggregated one, P for prefill and D for decode).
func ConfigLabel(c plan.Config) string {
	if d := c.Disaggregation; d != nil {
		// P: prefill pool, D: decode pool.
		return fmt.Sprintf("P %s×%d×%d + D %s×%d×%d", d.Prefill.GPU, d.Prefill.TP, d.Prefill.Replicas, d.Decode.GPU, d.Decode.TP, d.Decode.Replicas)
	}
	return fmt.Sprintf("%s×%d×%d", c.GPU, c.TP, c.Replicas)
}

// Pareto draws a plan's candidates by cost per hour and latency (the
// metric the plan's front trades, e2e_ms.p99 by default): the clusters on
// the Pareto front joined and highlighted, the other SLA-meeting ones
// plain, those that missed the SLA as grey crosses, each SLA-meeting point
// labelled gpu×tp×replicas.
func Pareto(w io.Writer, r *plan.PlanResult) error {
	if r == nil || len(r.Candidates)+len(r.Missed) == 0 {
		return noData("plan: no candidate was simulated")
	}
	all := append(slices.Clone(r.Candidates), r.Missed...)
	metric := paretoMetric(all)
	lo, hi := math.Inf(1), math.Inf(-1)
	ylo, yhi := math.Inf(1), math.Inf(-1)
	for _, c := range all {
		lo, hi = math.Min(lo, c.CostPerHourUSD), math.Max(hi, c.CostPerHourUSD)
		ylo, yhi = math.Min(ylo, c.ParetoLatencyMS), math.Max(yhi, c.ParetoLatencyMS)
	}
	title := fmt.Sprintf("Plan: cost per hour vs %s, %d meet the SLA", metric, len(r.Candidates))
	p := newPlot(title, "cost (USD per hour)", metric+" (ms)")
	logX, logY := wantLog(lo, hi), wantLog(ylo, yhi)
	if logX {
		setLog(&p.X)
	}
	if logY {
		setLog(&p.Y)
	}
	p.Legend.Top, p.Legend.Left = true, false

	var front, rest, missed plotter.XYs
	var frontL, restL []string
	for _, c := range r.Candidates {
		xy := plotter.XY{X: c.CostPerHourUSD, Y: c.ParetoLatencyMS}
		if c.Pareto {
			front, frontL = append(front, xy), append(frontL, ConfigLabel(c.Config))
		} else {
			rest, restL = append(rest, xy), append(restL, ConfigLabel(c.Config))
		}
	}
	for _, c := range r.Missed {
		missed = append(missed, plotter.XY{X: c.CostPerHourUSD, Y: c.ParetoLatencyMS})
	}
	// Drop what a log axis cannot show.
	keep := func(xys plotter.XYs, ls []string) (plotter.XYs, []string) {
		var ox plotter.XYs
		var ol []string
		for i, v := range xys {
			if (v.X > 0 || !logX) && (v.Y > 0 || !logY) {
				ox = append(ox, v)
				if ls != nil {
					ol = append(ol, ls[i])
				}
			}
		}
		return ox, ol
	}
	front, frontL = keep(front, frontL)
	rest, restL = keep(rest, restL)
	missed, _ = keep(missed, nil)

	if len(missed) > 0 {
		s, err := points(missed, colMuted, draw.CrossGlyph{}, 4)
		if err != nil {
			return err
		}
		p.Add(s)
		p.Legend.Add("missed the SLA", s)
	}
	if len(rest) > 0 {
		s, err := points(rest, seriesColor(0), draw.CircleGlyph{}, 3.5)
		if err != nil {
			return err
		}
		lb, err := labels(rest, restL, 8, rgb(0x555555))
		if err != nil {
			return err
		}
		p.Add(s, lb)
		p.Legend.Add("meets the SLA", s)
	}
	if len(front) > 0 {
		sorted := slices.Clone(front)
		slices.SortStableFunc(sorted, func(a, b plotter.XY) int { return cmpFloat(a.X, b.X) })
		l, err := line(sorted, seriesColor(1))
		if err != nil {
			return err
		}
		l.StepStyle = plotter.PostStep
		s, err := points(front, seriesColor(1), draw.CircleGlyph{}, 5)
		if err != nil {
			return err
		}
		lb, err := labels(front, frontL, 9, rgb(0x000000))
		if err != nil {
			return err
		}
		lb.Offset = vg.Point{X: 7, Y: 5}
		p.Add(l, s, lb)
		p.Legend.Add("Pareto front", l, s)
	}
	return renderPlot(w, p)
}
