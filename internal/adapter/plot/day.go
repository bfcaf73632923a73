package plot

import (
	"fmt"
	"io"

	gplot "gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg/draw"

	"github.com/headroom-sim/headroom/internal/study/plan"
)

// Day draws a rate profile played through a plan's recommendation in
// three stacked panels over the hours of the profile: the load (each
// window's rate), the replicas (held by the autoscaler, of which
// serving, the static count for the peak, and what each window needs
// within the SLA), and the binding SLA bound's quantile per window for
// both runs, with the bound.
func Day(w io.Writer, d *plan.DayPlan) error {
	if d == nil || len(d.Windows) == 0 {
		return noData("plan: no rate profile was played")
	}
	h := func(s float64) float64 { return s / 3600 }
	end := h(d.DurationS)
	var rate, needed plotter.XYs
	for _, win := range d.Windows {
		rate = append(rate, plotter.XY{X: h(win.StartS), Y: win.RateRPS})
		needed = append(needed, plotter.XY{X: h(win.StartS), Y: float64(win.ReplicasNeeded)})
	}
	last := d.Windows[len(d.Windows)-1]
	rate = append(rate, plotter.XY{X: end, Y: last.RateRPS})
	needed = append(needed, plotter.XY{X: end, Y: float64(last.ReplicasNeeded)})

	var held, serving plotter.XYs
	for _, p := range d.ReplicaTimeline {
		if p.TS > d.DurationS {
			break
		}
		held = append(held, plotter.XY{X: h(p.TS), Y: float64(p.Serving + p.Starting + p.Draining)})
		serving = append(serving, plotter.XY{X: h(p.TS), Y: float64(p.Serving)})
	}
	if n := len(held); n > 0 {
		held = append(held, plotter.XY{X: end, Y: held[n-1].Y})
		serving = append(serving, plotter.XY{X: end, Y: serving[n-1].Y})
	}
	var lat, latStatic plotter.XYs
	for _, win := range d.Windows {
		mid := h(win.StartS + win.DurationS/2)
		if win.Autoscaled.Requests > 0 {
			lat = append(lat, plotter.XY{X: mid, Y: win.Autoscaled.LatencyMS})
		}
		if win.Static.Requests > 0 {
			latStatic = append(latStatic, plotter.XY{X: mid, Y: win.Static.LatencyMS})
		}
	}
	cfg := plan.Label(plan.Config{GPU: d.Config.GPU, TP: d.Config.TP})
	const xLabel = "time (h)"

	pLoad := newPlot(fmt.Sprintf("%s through the rate profile", cfg), "", "req/s")
	pLoad.Y.Min = 0
	if err := addSteps(pLoad, []string{fmt.Sprintf("rate (%g s windows)", d.WindowS)}, rate); err != nil {
		return err
	}

	pRep := newPlot(fmt.Sprintf("Replicas (%s each)", gpus(d.GPUsPerReplica)), "", "replicas")
	pRep.Y.Min = 0
	if err := addSteps(pRep, []string{"autoscaled: held", "autoscaled: serving", "needed for the SLA"}, held, serving, needed); err != nil {
		return err
	}
	st, err := hline(0, end, float64(d.Config.Replicas), colMuted)
	if err != nil {
		return err
	}
	pRep.Add(st)
	pRep.Legend.Add(fmt.Sprintf("static: %d", d.Config.Replicas), st)

	pLat := newPlot(fmt.Sprintf("%s per window", d.BindingMetric), xLabel, d.BindingMetric+" (ms)")
	pLat.Y.Min = 0
	for i, s := range []struct {
		name string
		xys  plotter.XYs
	}{{fmt.Sprintf("autoscaled: %.1f%% in SLA", 100*d.Autoscaled.SLAAttainment), lat},
		{fmt.Sprintf("static: %.1f%% in SLA", 100*d.Static.SLAAttainment), latStatic}} {
		if len(s.xys) == 0 {
			continue
		}
		l, err := line(s.xys, seriesColor([]int{0, 7}[i]))
		if err != nil {
			return err
		}
		pts, err := points(s.xys, seriesColor([]int{0, 7}[i]), draw.CircleGlyph{}, 2)
		if err != nil {
			return err
		}
		pLat.Add(l, pts)
		pLat.Legend.Add(s.name, l, pts)
	}
	if d.BindingLimit > 0 {
		l, err := hline(0, end, d.BindingLimit, colSLA)
		if err != nil {
			return err
		}
		pLat.Add(l)
		pLat.Legend.Add(fmt.Sprintf("SLA bound %s ms", num(d.BindingLimit)), l)
	}
	ps := []*gplot.Plot{pLoad, pRep, pLat}
	for _, p := range ps {
		p.X.Min, p.X.Max = 0, end
		p.Legend.Top, p.Legend.Left = true, false
	}
	return renderStack(w, ps)
}

func gpus(n int) string {
	if n == 1 {
		return "1 GPU"
	}
	return fmt.Sprintf("%d GPUs", n)
}

// addSteps adds one step line (each value held until the next x) per
// series with its legend entry.
func addSteps(p *gplot.Plot, names []string, series ...plotter.XYs) error {
	for i, xys := range series {
		if len(xys) == 0 {
			continue
		}
		l, err := line(xys, seriesColor(i))
		if err != nil {
			return err
		}
		l.StepStyle = plotter.PostStep
		l.Width = 1.5
		p.Add(l)
		p.Legend.Add(names[i], l)
	}
	return nil
}
