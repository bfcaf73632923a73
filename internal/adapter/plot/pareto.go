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

// ConfigLabel names a cluster shape as the plan's tables do
// (plan.Label: "h100-sxm TP2×3").
func ConfigLabel(c plan.Config) string { return plan.Label(c) }

// Pareto draws a plan's candidates by cost per hour and the latency the
// plan's front trades against it (the binding SLA bound unless the plan
// names another), with the bound's limit as a line: the qualifying
// configurations on the Pareto front joined and labelled, the other
// qualifying ones plain, those meeting the SLA only without the required
// headroom as triangles, those that missed it as grey crosses (when their
// latency is known), and the recommendation ringed. The legend says how
// the labels read.
func Pareto(w io.Writer, r *plan.PlanResult) error {
	if r == nil || len(r.Candidates)+len(r.Missed) == 0 {
		return noData("plan: no candidate was simulated")
	}
	metric := r.ParetoMetric
	if metric == "" {
		metric = "latency"
	}
	var drawn []plan.Candidate
	for _, c := range append(slices.Clone(r.Candidates), r.Missed...) {
		if !c.StoppedEarly && finite(c.ParetoLatencyMS) {
			drawn = append(drawn, c)
		}
	}
	if len(drawn) == 0 {
		return noData("plan: no candidate's %s is known", metric)
	}
	lo, hi := math.Inf(1), math.Inf(-1)
	ylo, yhi := math.Inf(1), math.Inf(-1)
	for _, c := range drawn {
		lo, hi = math.Min(lo, c.CostPerHourUSD), math.Max(hi, c.CostPerHourUSD)
		ylo, yhi = math.Min(ylo, c.ParetoLatencyMS), math.Max(yhi, c.ParetoLatencyMS)
	}
	if r.ParetoLimitMS > 0 {
		ylo, yhi = math.Min(ylo, r.ParetoLimitMS), math.Max(yhi, r.ParetoLimitMS)
	}
	qualify := 0
	for _, c := range r.Candidates {
		if c.Qualifies {
			qualify++
		}
	}
	title := fmt.Sprintf("Plan: cost vs %s, %d of %d qualify", metric, qualify, len(r.Candidates)+len(r.Missed))
	yLabel := metric + " (ms)"
	if r.ParetoLimitMS > 0 && r.ParetoMetric != "" {
		yLabel = metric + " (ms), the binding SLA bound"
	}
	p := newPlot(title, "cost (USD per hour)", yLabel)
	logX, logY := wantLog(lo, hi), wantLog(ylo, yhi)
	if logX {
		setLog(&p.X)
	}
	if logY {
		setLog(&p.Y)
	}
	p.Legend.Top, p.Legend.Left = true, false

	var front, rest, short, missed, recXY plotter.XYs
	var frontL, restL, shortL, recL []string
	for _, c := range drawn {
		xy := plotter.XY{X: c.CostPerHourUSD, Y: c.ParetoLatencyMS}
		if (logX && xy.X <= 0) || (logY && xy.Y <= 0) {
			continue // a log axis cannot show it
		}
		switch {
		case !c.MeetsSLA:
			missed = append(missed, xy)
		case !c.Qualifies:
			short, shortL = append(short, xy), append(shortL, ConfigLabel(c.Config))
		case c.Pareto:
			front, frontL = append(front, xy), append(frontL, ConfigLabel(c.Config))
		default:
			rest, restL = append(rest, xy), append(restL, ConfigLabel(c.Config))
		}
		if c.Recommended {
			recXY, recL = append(recXY, xy), append(recL, "recommended")
		}
	}
	if r.ParetoLimitMS > 0 {
		x0, x1 := lo, hi
		if x0 == x1 {
			x0, x1 = x0*0.9, x1*1.1+1e-9
		}
		l, err := hline(x0, x1, r.ParetoLimitMS, colSLA)
		if err != nil {
			return err
		}
		p.Add(l)
		p.Legend.Add(fmt.Sprintf("SLA bound %s ms", num(r.ParetoLimitMS)), l)
	}
	if len(missed) > 0 {
		s, err := points(missed, colMuted, draw.CrossGlyph{}, 4)
		if err != nil {
			return err
		}
		p.Add(s)
		p.Legend.Add("missed the SLA", s)
	}
	if len(short) > 0 {
		s, err := points(short, seriesColor(2), draw.TriangleGlyph{}, 4)
		if err != nil {
			return err
		}
		lb, err := labels(short, shortL, 8, rgb(0x555555))
		if err != nil {
			return err
		}
		p.Add(s, lb)
		p.Legend.Add(fmt.Sprintf("SLA met, < %.2g× headroom", r.RequiredHeadroom), s)
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
		p.Legend.Add(fmt.Sprintf("qualifies (%.2g× headroom)", r.RequiredHeadroom), s)
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
	if len(recXY) > 0 {
		s, err := points(recXY, colKnee, draw.RingGlyph{}, 9)
		if err != nil {
			return err
		}
		lb, err := labels(recXY, recL, 9, colKnee)
		if err != nil {
			return err
		}
		lb.Offset = vg.Point{X: 7, Y: -14}
		p.Add(s, lb)
		p.Legend.Add("recommended", s)
	}
	p.Legend.Add("label GPU TPt×r:")
	p.Legend.Add("  r replicas of TP t")
	if slices.ContainsFunc(drawn, func(c plan.Candidate) bool { return c.Disaggregation != nil }) {
		p.Legend.Add("P … + D …:")
		p.Legend.Add("  prefill and decode pools")
	}
	return renderPlot(w, p)
}
