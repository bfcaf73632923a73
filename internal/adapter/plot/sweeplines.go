package plot

import (
	"fmt"
	"io"
	"slices"
	"strings"

	gplot "gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/headroom-sim/headroom/internal/study/plan"
)

// SweepLines draws report metrics over a two-axis sweep as lines: the
// first axis (numeric) across, one line per value of the second (e.g.
// aggregated against disaggregated serving), one panel per metric,
// stacked. Failed points and points without the metric leave gaps. title
// "" names the chart after the sweep.
func SweepLines(w io.Writer, s *plan.SweepResult, title string, metrics ...string) error {
	if s == nil || len(s.Points) == 0 {
		return noData("sweep: no points")
	}
	if len(s.Axes) != 2 {
		return fmt.Errorf("sweep lines: want 2 axes (across, one line per value), this sweep has %d", len(s.Axes))
	}
	if len(metrics) == 0 {
		metrics = []string{DefaultSweepMetric}
	}
	for _, pt := range s.Points {
		if len(pt.Values) < 2 {
			return fmt.Errorf("sweep lines: a point has %d of the 2 axis values", len(pt.Values))
		}
		if _, ok := number(pt.Values[0]); !ok {
			return fmt.Errorf("sweep lines: %s value %v is not a number", s.Axes[0], pt.Values[0])
		}
	}
	series := levels(s, 1)
	if title == "" {
		title = fmt.Sprintf("Sweep: by %s, one line per %s", s.Axes[0], s.Axes[1])
	}
	var ps []*gplot.Plot
	for k, m := range metrics {
		col := slices.Index(s.Columns, m)
		if col < 0 {
			return fmt.Errorf("sweep lines: unknown metric %q (e.g. %s)", m, strings.Join(s.Columns[:min(6, len(s.Columns))], ", "))
		}
		p := newPlot("", s.Axes[0], metricLabel(m))
		if k == 0 {
			p.Title.Text = title
		}
		some := false
		for i, name := range series {
			var xys plotter.XYs
			for _, pt := range s.Points {
				if fmt.Sprint(pt.Values[1]) != name || pt.Error != "" || col >= len(pt.Metrics) || !finite(pt.Metrics[col]) {
					continue
				}
				x, _ := number(pt.Values[0])
				xys = append(xys, plotter.XY{X: x, Y: pt.Metrics[col]})
			}
			if len(xys) == 0 {
				continue
			}
			some = true
			slices.SortStableFunc(xys, func(a, b plotter.XY) int { return cmpFloat(a.X, b.X) })
			l, err := line(xys, seriesColor(i))
			if err != nil {
				return err
			}
			sc, err := points(xys, seriesColor(i), draw.CircleGlyph{}, 3)
			if err != nil {
				return err
			}
			p.Add(l, sc)
			p.Legend.Add(name, l, sc)
		}
		if !some {
			return noData("sweep lines: no point has %s", m)
		}
		p.Y.Min = 0
		p.Legend.TextStyle.Font = sans(10)
		p.Legend.ThumbnailWidth = vg.Points(18)
		if xs := levels(s, 0); len(xs) <= 12 {
			var ts gplot.ConstantTicks
			for _, v := range xs {
				x, _ := number(v)
				ts = append(ts, gplot.Tick{Value: x, Label: num(x)})
			}
			p.X.Tick.Marker = ts
		}
		if k > 0 {
			p.Legend = gplot.NewLegend() // the first panel's legend names the lines
		}
		ps = append(ps, p)
	}
	return renderStack(w, ps)
}
