package plot

import (
	"fmt"
	"io"
	"math"
	"slices"

	gplot "gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg/draw"

	"github.com/headroom-sim/headroom/internal/study/plan"
	"github.com/headroom-sim/headroom/sim"
	"github.com/headroom-sim/headroom/sim/stats"
)

// loadUnit names the unit of a load along a search or curve dimension.
func loadUnit(dim string) (axis, short string) {
	switch dim {
	case plan.DimConcurrency:
		return "concurrent users", "users"
	case plan.DimSpeedup:
		return "trace speed-up (×)", "×"
	}
	return "offered load (requests/s)", "req/s"
}

// curveMetric is one latency of a curve point, with the SLA's bounds on it.
type curveMetric struct {
	key, name string
	get       func(*plan.CurvePoint) stats.Summary
	bounds    map[string]float64
}

// Curve draws a throughput–latency curve: one panel per latency (TTFT and
// TPOT, and ITL and E2E when the SLA bounds them), x the throughput each
// load step achieved, y the step's p50 and p99 (and any quantile the SLA
// bounds) in ms. Each SLA bound is a dashed red line and the knee is
// ringed. sla may be nil.
func Curve(w io.Writer, c *plan.CurveResult, sla *sim.SLA) error {
	if c == nil {
		return noData("curve: no result")
	}
	var pts []plan.CurvePoint
	knee := -1
	for i, p := range c.Points {
		if p.Completed == 0 {
			continue
		}
		if i == c.Knee {
			knee = len(pts)
		}
		pts = append(pts, p)
	}
	if len(pts) == 0 {
		return noData("curve: no step completed a request")
	}
	if sla == nil {
		sla = &sim.SLA{}
	}
	metrics := []curveMetric{
		{"ttft_ms", "TTFT", func(p *plan.CurvePoint) stats.Summary { return p.TTFTMS }, sla.TTFTMS},
		{"tpot_ms", "TPOT", func(p *plan.CurvePoint) stats.Summary { return p.TPOTMS }, sla.TPOTMS},
		{"itl_ms", "ITL", func(p *plan.CurvePoint) stats.Summary { return p.ITLMS }, sla.ITLMS},
		{"e2e_ms", "E2E latency", func(p *plan.CurvePoint) stats.Summary { return p.E2EMS }, sla.E2EMS},
	}
	_, unit := loadUnit(c.Dimension)
	var panels []*gplot.Plot
	for mi, m := range metrics {
		if mi >= 2 && len(m.bounds) == 0 {
			continue
		}
		title := fmt.Sprintf("Throughput–latency curve: %s (ms)", m.name)
		if len(panels) > 0 {
			title = fmt.Sprintf("%s (ms)", m.name)
		}
		p := newPlot(title, "throughput (requests/s)", m.name+" (ms)")
		qs := []string{"p50", "p99"}
		for q := range m.bounds {
			if !slices.Contains(qs, q) {
				qs = append(qs, q)
			}
		}
		slices.SortFunc(qs, func(a, b string) int {
			return slices.Index(stats.QuantileNames, a) - slices.Index(stats.QuantileNames, b)
		})
		lo, hi := math.Inf(1), math.Inf(-1)
		xlo, xhi := math.Inf(1), math.Inf(-1)
		for i := range pts {
			s := m.get(&pts[i])
			for _, q := range qs {
				v, _ := s.At(q)
				lo, hi = math.Min(lo, v), math.Max(hi, v)
			}
			xlo, xhi = math.Min(xlo, pts[i].ThroughputRPS), math.Max(xhi, pts[i].ThroughputRPS)
		}
		for _, v := range m.bounds {
			lo, hi = math.Min(lo, v), math.Max(hi, v)
		}
		logY := wantLog(lo, hi)
		if logY {
			setLog(&p.Y)
		} else {
			p.Y.Min = 0
		}
		p.Legend.Top, p.Legend.Left = true, true
		for qi, q := range qs {
			var xys plotter.XYs
			var loads []string
			for i := range pts {
				v, _ := m.get(&pts[i]).At(q)
				if logY && v <= 0 {
					continue
				}
				xys = append(xys, plotter.XY{X: pts[i].ThroughputRPS, Y: v})
				loads = append(loads, num(pts[i].Load))
			}
			if len(xys) == 0 {
				continue
			}
			col := seriesColor(qi)
			l, s, err := plotter.NewLinePoints(xys)
			if err != nil {
				return err
			}
			l.Color, l.Width = col, 2
			s.Color, s.Shape, s.Radius = col, draw.CircleGlyph{}, 2.5
			p.Add(l, s)
			p.Legend.Add(q, l, s)
			if qi == 0 && len(panels) == 0 {
				lb, err := labels(xys, loads, 8, colMuted)
				if err != nil {
					return err
				}
				p.Add(lb)
				p.X.Label.Text += fmt.Sprintf("; grey numbers: offered load (%s)", unit)
			}
			if knee >= 0 {
				v, _ := m.get(&pts[knee]).At(q)
				if !logY || v > 0 {
					k, err := points(plotter.XYs{{X: pts[knee].ThroughputRPS, Y: v}}, colKnee, draw.RingGlyph{}, 7)
					if err != nil {
						return err
					}
					p.Add(k)
					if qi == len(qs)-1 {
						p.Legend.Add(fmt.Sprintf("knee: %s %s offered", num(pts[knee].Load), unit), k)
					}
				}
			}
		}
		bq := make([]string, 0, len(m.bounds))
		for q := range m.bounds {
			bq = append(bq, q)
		}
		slices.Sort(bq)
		for _, q := range bq {
			lim := m.bounds[q]
			l, err := hline(math.Min(0, xlo), xhi, lim, colSLA)
			if err != nil {
				return err
			}
			p.Add(l)
			p.Legend.Add(fmt.Sprintf("SLA: %s %s ≤ %s ms", m.key, q, num(lim)), l)
		}
		panels = append(panels, p)
	}
	return renderStack(w, panels)
}

// LoadSearch draws a max-load search: goodput and throughput at each
// probed load, each probe marked as meeting the SLA or not, the highest
// load that met it and the knee (the probe with the most goodput).
func LoadSearch(w io.Writer, r *plan.LoadResult) error {
	if r == nil || len(r.Probes) == 0 {
		return noData("load search: no probes")
	}
	xLabel, unit := loadUnit(r.Dimension)
	title := "Load search: no load met the SLA"
	if r.MaxLoad > 0 {
		title = fmt.Sprintf("Load search: max %s %s within the SLA", num(r.MaxLoad), unit)
		if r.LimitingMetric != "" {
			title += " (then " + r.LimitingMetric + " breaks)"
		}
	}
	p := newPlot(title, xLabel, "requests/s")
	p.X.Min, p.Y.Min = 0, 0
	p.Legend.Top, p.Legend.Left = true, true
	probes := slices.Clone(r.Probes)
	slices.SortStableFunc(probes, func(a, b plan.Probe) int {
		switch {
		case a.Load < b.Load:
			return -1
		case a.Load > b.Load:
			return 1
		}
		return 0
	})
	var good, thr, met, missed plotter.XYs
	maxY := 0.0
	for _, pr := range probes {
		good = append(good, plotter.XY{X: pr.Load, Y: pr.GoodputRPS})
		thr = append(thr, plotter.XY{X: pr.Load, Y: pr.ThroughputRPS})
		if pr.Met {
			met = append(met, plotter.XY{X: pr.Load, Y: pr.GoodputRPS})
		} else {
			missed = append(missed, plotter.XY{X: pr.Load, Y: pr.GoodputRPS})
		}
		maxY = math.Max(maxY, math.Max(pr.GoodputRPS, pr.ThroughputRPS))
	}
	maxX := probes[len(probes)-1].Load
	if r.Dimension == plan.DimRate {
		ideal, err := line(plotter.XYs{{X: 0, Y: 0}, {X: maxX, Y: maxX}}, colGrid)
		if err != nil {
			return err
		}
		ideal.Color, ideal.Width = colMuted, 1
		p.Add(ideal)
		p.Legend.Add("throughput = load", ideal)
	}
	lt, err := line(thr, seriesColor(0))
	if err != nil {
		return err
	}
	lt.Width = 1.5
	lg, err := line(good, seriesColor(2))
	if err != nil {
		return err
	}
	p.Add(lt, lg)
	p.Legend.Add("throughput", lt)
	p.Legend.Add("goodput (within the SLA)", lg)
	if len(met) > 0 {
		s, err := points(met, seriesColor(2), draw.CircleGlyph{}, 3.5)
		if err != nil {
			return err
		}
		p.Add(s)
		p.Legend.Add("met the SLA", s)
	}
	if len(missed) > 0 {
		s, err := points(missed, colSLA, draw.CrossGlyph{}, 4)
		if err != nil {
			return err
		}
		p.Add(s)
		p.Legend.Add("missed the SLA", s)
	}
	if r.MaxLoad > 0 {
		v, err := vline(r.MaxLoad, 0, maxY, colSLA)
		if err != nil {
			return err
		}
		p.Add(v)
		p.Legend.Add(fmt.Sprintf("max load: %s %s", num(r.MaxLoad), unit), v)
	}
	if r.Knee.Load > 0 {
		k, err := points(plotter.XYs{{X: r.Knee.Load, Y: r.Knee.GoodputRPS}}, colKnee, draw.RingGlyph{}, 7)
		if err != nil {
			return err
		}
		p.Add(k)
		p.Legend.Add(fmt.Sprintf("knee: most goodput (%s req/s)", num(r.Knee.GoodputRPS)), k)
	}
	return renderPlot(w, p)
}
