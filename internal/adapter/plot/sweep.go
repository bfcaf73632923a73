package plot

import (
	"encoding/json"
	"fmt"
	"image/color"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"

	gplot "gonum.org/v1/plot"
	"gonum.org/v1/plot/palette"
	"gonum.org/v1/plot/palette/brewer"
	"gonum.org/v1/plot/palette/moreland"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/headroom-sim/headroom/internal/study/plan"
)

// DefaultSweepMetric is the metric SweepHeatmap draws when given none.
const DefaultSweepMetric = "e2e_ms.p99"

// metricLabel adds the unit a report metric's name implies.
func metricLabel(name string) string {
	switch {
	case strings.Contains(name, "_ms"):
		return name + " (ms)"
	case strings.Contains(name, "tokens_per_s"):
		return name + " (tokens/s)"
	case strings.Contains(name, "requests_per_s"), strings.HasSuffix(name, "_rps"):
		return name + " (requests/s)"
	case strings.Contains(name, "usd"):
		return name + " (USD)"
	case strings.HasSuffix(name, "_s"):
		return name + " (s)"
	}
	return name
}

// number reads a sweep value as a number, if it is one.
func number(v any) (float64, bool) {
	switch x := v.(type) {
	case float64:
		return x, true
	case float32:
		return float64(x), true
	case int:
		return float64(x), true
	case int64:
		return float64(x), true
	case int32:
		return float64(x), true
	case uint64:
		return float64(x), true
	case json.Number:
		f, err := x.Float64()
		return f, err == nil
	case string:
		f, err := strconv.ParseFloat(x, 64)
		return f, err == nil
	}
	return 0, false
}

// levels lists the distinct values of axis i in the order they appear.
func levels(s *plan.SweepResult, i int) []string {
	var out []string
	for _, p := range s.Points {
		if i < len(p.Values) {
			if v := fmt.Sprint(p.Values[i]); !slices.Contains(out, v) {
				out = append(out, v)
			}
		}
	}
	return out
}

// SweepHeatmap draws one report metric (a SweepResult column such as
// "ttft_ms.p99"; "" means DefaultSweepMetric) over a sweep: a heat map
// with each cell labelled for a two-axis sweep, a line over a numeric
// axis or bars over a categorical one for a one-axis sweep. Points that
// failed are grey cells or gaps.
func SweepHeatmap(w io.Writer, s *plan.SweepResult, metric string) error {
	if s == nil || len(s.Points) == 0 {
		return noData("sweep: no points")
	}
	if metric == "" {
		metric = DefaultSweepMetric
	}
	col := slices.Index(s.Columns, metric)
	if col < 0 {
		if len(s.Columns) == 0 {
			return noData("sweep: every point failed (first error: %s)", s.Points[0].Error)
		}
		return fmt.Errorf("sweep: unknown metric %q (e.g. %s)", metric, strings.Join(s.Columns[:min(6, len(s.Columns))], ", "))
	}
	value := func(p plan.SweepPoint) float64 {
		if p.Error != "" || col >= len(p.Metrics) {
			return math.NaN()
		}
		return p.Metrics[col]
	}
	if len(s.Axes) == 1 || len(s.Axes) == 2 {
		// Keep the points that carry a value for every axis.
		pts := slices.DeleteFunc(slices.Clone(s.Points), func(p plan.SweepPoint) bool { return len(p.Values) < len(s.Axes) })
		if len(pts) == 0 {
			return noData("sweep: no point has a value for every axis")
		}
		s = &plan.SweepResult{Axes: s.Axes, Columns: s.Columns, Points: pts}
		if len(s.Axes) == 1 {
			return sweep1(w, s, metric, value)
		}
		return sweep2(w, s, metric, value)
	}
	return fmt.Errorf("sweep: a chart shows 1 or 2 axes, this sweep has %d (%s)", len(s.Axes), strings.Join(s.Axes, ", "))
}

func sweep1(w io.Writer, s *plan.SweepResult, metric string, value func(plan.SweepPoint) float64) error {
	title := fmt.Sprintf("Sweep: %s by %s", metricLabel(metric), s.Axes[0])
	p := newPlot(title, s.Axes[0], metricLabel(metric))
	numeric := true
	for _, pt := range s.Points {
		if _, ok := number(pt.Values[0]); !ok {
			numeric = false
		}
	}
	if numeric {
		var xys plotter.XYs
		var texts []string
		for _, pt := range s.Points {
			x, _ := number(pt.Values[0])
			if v := value(pt); finite(v) {
				xys = append(xys, plotter.XY{X: x, Y: v})
				texts = append(texts, num(v))
			}
		}
		if len(xys) == 0 {
			return noData("sweep: no point has %s (every point failed)", metric)
		}
		slices.SortStableFunc(xys, func(a, b plotter.XY) int { return cmpFloat(a.X, b.X) })
		l, sc, err := plotter.NewLinePoints(xys)
		if err != nil {
			return err
		}
		if xys[0].X > 0 && xys[len(xys)-1].X/xys[0].X >= 8 {
			p.X.Scale = gplot.LogScale{} // powers of two and the like spread evenly
		}
		if len(xys) <= 12 {
			var ts gplot.ConstantTicks
			for _, v := range xys {
				ts = append(ts, gplot.Tick{Value: v.X, Label: num(v.X)})
			}
			p.X.Tick.Marker = ts
		}
		l.Color, l.Width = seriesColor(0), 2
		sc.Color, sc.Shape, sc.Radius = seriesColor(0), draw.CircleGlyph{}, 3
		lb, err := labels(xys, texts, 9, color.Black)
		if err != nil {
			return err
		}
		p.Add(l, sc, lb)
		p.Y.Min = math.Min(0, p.Y.Min)
		return renderPlot(w, p)
	}
	names := levels(s, 0)
	vals := make(plotter.Values, len(names))
	texts := make([]string, len(names))
	some := false
	for i := range vals {
		vals[i], texts[i] = 0, "error"
	}
	for _, pt := range s.Points {
		i := slices.Index(names, fmt.Sprint(pt.Values[0]))
		if v := value(pt); finite(v) {
			vals[i], texts[i] = v, num(v)
			some = true
		}
	}
	if !some {
		return noData("sweep: no point has %s (every point failed)", metric)
	}
	bars, err := plotter.NewBarChart(vals, vg.Length(math.Min(60, 400/float64(len(vals)))))
	if err != nil {
		return err
	}
	bars.Color = seriesColor(0)
	bars.LineStyle.Width = 0
	p.Add(bars)
	xys := make(plotter.XYs, len(vals))
	for i, v := range vals {
		xys[i] = plotter.XY{X: float64(i), Y: v}
	}
	lb, err := labels(xys, texts, 9, color.Black)
	if err != nil {
		return err
	}
	for i := range lb.TextStyle {
		lb.TextStyle[i].XAlign = draw.XCenter
	}
	lb.Offset = vg.Point{Y: 3}
	p.Add(lb)
	p.NominalX(names...)
	p.X.Tick.Label.Font = sans(10)
	p.Y.Min = 0
	return renderPlot(w, p)
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// grid is a sweep's two axes as heat-map cells (column = axis 0).
type grid struct {
	cols, rows int
	z          []float64
}

func (g *grid) Dims() (int, int)        { return g.cols, g.rows }
func (g *grid) Z(c, r int) float64      { return g.z[r*g.cols+c] }
func (g *grid) X(c int) float64         { return float64(c) }
func (g *grid) Y(r int) float64         { return float64(r) }
func (g *grid) Min() float64            { return g.extreme(math.Min, math.Inf(1)) }
func (g *grid) Max() float64            { return g.extreme(math.Max, math.Inf(-1)) }
func (g *grid) set(c, r int, v float64) { g.z[r*g.cols+c] = v }

func (g *grid) extreme(f func(a, b float64) float64, start float64) float64 {
	out := start
	for _, v := range g.z {
		if finite(v) {
			out = f(out, v)
		}
	}
	return out
}

func sweep2(w io.Writer, s *plan.SweepResult, metric string, value func(plan.SweepPoint) float64) error {
	xs, ys := levels(s, 0), levels(s, 1)
	g := &grid{cols: len(xs), rows: len(ys), z: make([]float64, len(xs)*len(ys))}
	for i := range g.z {
		g.z[i] = math.NaN()
	}
	failed := make([]bool, len(g.z))
	for _, pt := range s.Points {
		c := slices.Index(xs, fmt.Sprint(pt.Values[0]))
		r := slices.Index(ys, fmt.Sprint(pt.Values[1]))
		g.set(c, r, value(pt))
		failed[r*g.cols+c] = pt.Error != ""
	}
	lo, hi := g.Min(), g.Max()
	if math.IsInf(lo, 0) {
		return noData("sweep: no point has %s (every point failed)", metric)
	}
	if lo == hi {
		lo, hi = lo-0.5, hi+0.5
	}
	pal, err := heatPalette()
	if err != nil {
		return err
	}
	hm := plotter.NewHeatMap(g, pal)
	hm.Min, hm.Max = lo, hi
	hm.NaN = colGrid

	title := fmt.Sprintf("Sweep: %s by %s × %s", metricLabel(metric), s.Axes[0], s.Axes[1])
	p := newPlot(title, s.Axes[0], s.Axes[1])
	p.Add(hm)
	var xys plotter.XYs
	var texts []string
	var light []bool
	for r := range g.rows {
		for c := range g.cols {
			v := g.Z(c, r)
			t := num(v)
			switch {
			case failed[r*g.cols+c]:
				t = "error"
			case !finite(v):
				t = "–"
			}
			xys = append(xys, plotter.XY{X: float64(c), Y: float64(r)})
			texts = append(texts, t)
			light = append(light, finite(v) && (v-lo)/(hi-lo) > 0.6)
		}
	}
	lb, err := labels(xys, texts, 10, color.Black)
	if err != nil {
		return err
	}
	for i := range lb.TextStyle {
		lb.TextStyle[i].XAlign, lb.TextStyle[i].YAlign = draw.XCenter, draw.YCenter
		if light[i] {
			// The palette darkens with the value: light text on the dark end.
			lb.TextStyle[i].Color = color.White
		}
	}
	lb.Offset = vg.Point{}
	p.Add(lb)
	p.X.Tick.Marker = nominal(xs)
	p.Y.Tick.Marker = nominal(ys)
	p.X.Min, p.X.Max = -0.5, float64(len(xs))-0.5
	p.Y.Min, p.Y.Max = -0.5, float64(len(ys))-0.5
	p.X.Padding, p.Y.Padding = 0, 0

	// The colour bar is a one-column heat map, drawn as vector cells.
	const steps = 64
	bg := &grid{cols: 1, rows: steps, z: make([]float64, steps)}
	for i := range bg.z {
		bg.z[i] = lo + (hi-lo)*(float64(i)+0.5)/steps
	}
	bhm := plotter.NewHeatMap(&barGrid{grid: bg, lo: lo, step: (hi - lo) / steps}, pal)
	bhm.Min, bhm.Max = lo, hi
	bar := gplot.New()
	bar.HideX()
	bar.Y.Label.Text = metricLabel(metric)
	bar.Y.Label.TextStyle.Font = sans(11)
	bar.Y.Tick.Label.Font = sans(10)
	bar.Y.Tick.Marker = numTicks{}
	bar.Y.Padding = 0
	bar.Add(bhm)
	bar.Y.Min, bar.Y.Max = lo, hi

	const barWidth = 1.3 * vg.Inch
	return render(w, Width, Height, func(dc draw.Canvas) error {
		dc = drawTitle(dc, p)
		left := draw.Crop(dc, 0, -barWidth, 0, 0)
		p.Draw(left)
		data := p.DataCanvas(left)
		right := draw.Crop(dc, dc.Max.X-dc.Min.X-barWidth+12, -4, 0, 0)
		right.Min.Y, right.Max.Y = data.Min.Y, data.Max.Y
		bar.Draw(right)
		return nil
	})
}

// barGrid places a colour bar's cells along y at their values.
type barGrid struct {
	*grid
	lo, step float64
}

func (b *barGrid) X(int) float64   { return 0 }
func (b *barGrid) Y(r int) float64 { return b.lo + (float64(r)+0.5)*b.step }

// heatPalette is ColorBrewer's YlOrRd: light yellow for the lowest value
// to dark red for the highest, luminance falling steadily in between.
func heatPalette() (palette.Palette, error) {
	p, err := brewer.GetPalette(brewer.TypeSequential, "YlOrRd", 9)
	if err != nil {
		return nil, err
	}
	cs := slices.Clone(p.Colors())
	slices.Reverse(cs)
	cm, err := moreland.NewLuminance(cs)
	if err != nil {
		return nil, err
	}
	return palette.Reverse(cm).Palette(64), nil
}

// nominal ticks label integer positions with names.
type nominal []string

func (n nominal) Ticks(lo, hi float64) []gplot.Tick {
	ts := make([]gplot.Tick, len(n))
	for i, s := range n {
		ts[i] = gplot.Tick{Value: float64(i), Label: s}
	}
	return ts
}
