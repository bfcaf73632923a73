package plot

import (
	"bytes"
	"errors"
	"fmt"
	"image/color"
	"io"
	"math"
	"strconv"
	"strings"

	gplot "gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"
)

// Chart sizes.
const (
	// Width and Height are the size of a one-panel chart.
	Width  = 8 * vg.Inch
	Height = 5 * vg.Inch
	// panelHeight is the height of each panel of a stacked chart.
	panelHeight = 2.8 * vg.Inch
)

// ErrNoData is wrapped by every error about a chart having nothing to show.
var ErrNoData = errors.New("nothing to plot")

func noData(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrNoData, fmt.Sprintf(format, args...))
}

// Colours, in the order series use them (Tableau 10).
var seriesPalette = []color.Color{
	rgb(0x1f77b4), rgb(0xff7f0e), rgb(0x2ca02c), rgb(0xd62728), rgb(0x9467bd),
	rgb(0x8c564b), rgb(0xe377c2), rgb(0x7f7f7f), rgb(0xbcbd22), rgb(0x17becf),
}

var (
	colSLA   = rgb(0xd62728)
	colKnee  = rgb(0x111111)
	colGrid  = rgb(0xdddddd)
	colMuted = rgb(0xaaaaaa)
)

func rgb(v uint32) color.Color {
	return color.RGBA{R: uint8(v >> 16), G: uint8(v >> 8), B: uint8(v), A: 0xff}
}

func seriesColor(i int) color.Color { return seriesPalette[i%len(seriesPalette)] }

func sans(size vg.Length) font.Font {
	return font.Font{Typeface: "Liberation", Variant: "Sans", Size: size}
}

// newPlot returns a plot with a title, axis labels (with their units), a
// light grid and sans-serif text.
func newPlot(title, xLabel, yLabel string) *gplot.Plot {
	p := gplot.New()
	p.Title.Text = title
	p.Title.TextStyle.Font = sans(14)
	p.Title.Padding = 8
	p.X.Label.Text = xLabel
	p.Y.Label.Text = yLabel
	for _, a := range []*gplot.Axis{&p.X, &p.Y} {
		a.Label.TextStyle.Font = sans(12)
		a.Tick.Label.Font = sans(10)
		a.Padding = 4
		a.Tick.Marker = numTicks{}
	}
	p.Legend.TextStyle.Font = sans(10)
	p.Legend.Padding = 3
	g := plotter.NewGrid()
	g.Horizontal.Color, g.Vertical.Color = colGrid, colGrid
	g.Horizontal.Width, g.Vertical.Width = 0.5, 0.5
	p.Add(g)
	return p
}

// render draws into a w×h SVG canvas and writes it to out only if drawing
// succeeded. gonum/plot reports some bad inputs by panicking; those become
// errors.
func render(out io.Writer, w, h vg.Length, drawFn func(dc draw.Canvas) error) (err error) {
	c := vgsvg.New(w, h)
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("plot: %v", r)
		}
	}()
	if err := drawFn(draw.New(c)); err != nil {
		return err
	}
	var buf bytes.Buffer
	if _, err := c.WriteTo(&buf); err != nil {
		return err
	}
	_, err = out.Write(buf.Bytes())
	return err
}

// renderPlot renders one plot at the standard size.
func renderPlot(out io.Writer, p *gplot.Plot) error {
	return render(out, Width, Height, func(dc draw.Canvas) error {
		drawPanels(dc, []*gplot.Plot{p})
		return nil
	})
}

// renderStack renders plots stacked vertically.
func renderStack(out io.Writer, ps []*gplot.Plot) error {
	return render(out, Width, panelHeight*vg.Length(len(ps)), func(dc draw.Canvas) error {
		drawPanels(dc, ps)
		return nil
	})
}

// legendGap separates the data area from a legend beside it.
const legendGap = 10

// drawPanels draws plots stacked vertically with aligned data areas: the
// first plot's title centred across the whole width as the chart's, each
// plot's legend beside its data area on the right rather than over the
// data.
func drawPanels(dc draw.Canvas, ps []*gplot.Plot) {
	dc = drawTitle(dc, ps[0])
	legends := make([]gplot.Legend, len(ps))
	var legendW vg.Length
	for i, p := range ps {
		legends[i] = p.Legend
		r := legends[i].Rectangle(dc)
		legendW = max(legendW, r.Max.X-r.Min.X)
		p.Legend = gplot.NewLegend()
	}
	area := dc
	if legendW > 0 {
		area = draw.Crop(dc, 0, -(legendW + legendGap + 4), 0, 0)
	}
	rows := make([][]*gplot.Plot, len(ps))
	for i, p := range ps {
		rows[i] = []*gplot.Plot{p}
	}
	t := draw.Tiles{Rows: len(ps), Cols: 1, PadY: 8, PadTop: 4, PadBottom: 4, PadLeft: 4, PadRight: 8}
	cs := gplot.Align(rows, t, area)
	for i, p := range ps {
		p.Draw(cs[i][0])
		data := p.DataCanvas(cs[i][0])
		l := legends[i]
		l.Top, l.Left, l.XOffs, l.YOffs = true, true, 0, 0
		strip := dc
		strip.Min.X, strip.Max.Y = area.Max.X+legendGap, data.Max.Y
		l.Draw(strip)
		p.Legend = l
	}
}

// drawTitle draws p's title centred across the whole canvas and returns
// the canvas below it, leaving p without a title.
func drawTitle(dc draw.Canvas, p *gplot.Plot) draw.Canvas {
	if p.Title.Text == "" {
		return dc
	}
	sty := p.Title.TextStyle
	dc.FillText(sty, vg.Point{X: dc.Center().X, Y: dc.Max.Y - 4 + sty.FontExtents().Descent}, p.Title.Text)
	dc.Max.Y -= 4 + sty.Rectangle(p.Title.Text).Size().Y + p.Title.Padding
	p.Title.Text = ""
	return dc
}

// numTicks are gonum's default ticks labelled without trailing zeros.
type numTicks struct{}

func (numTicks) Ticks(lo, hi float64) []gplot.Tick {
	ts := gplot.DefaultTicks{}.Ticks(lo, hi)
	for i := range ts {
		if ts[i].Label != "" {
			ts[i].Label = num(ts[i].Value)
		}
	}
	return ts
}

// wantLog reports whether values spanning lo..hi read better on a log axis.
func wantLog(lo, hi float64) bool {
	return lo > 0 && hi/lo > 30
}

// setLog puts axis a on a log scale with 1-2-5 ticks.
func setLog(a *gplot.Axis) {
	a.Scale = gplot.LogScale{}
	a.Tick.Marker = logTicks{}
}

// logTicks labels 1, 2 and 5 × 10^k when the range spans less than four
// decades, only 10^k otherwise, with unlabelled minor ticks in between.
type logTicks struct{}

func (logTicks) Ticks(lo, hi float64) []gplot.Tick {
	if !(lo > 0) || !(hi > lo) {
		return nil
	}
	decades := math.Log10(hi / lo)
	var ts []gplot.Tick
	for e := math.Floor(math.Log10(lo)); e <= math.Ceil(math.Log10(hi)); e++ {
		base := math.Pow(10, e)
		for m := 1; m <= 9; m++ {
			v := base * float64(m)
			if v < lo*(1-1e-9) || v > hi*(1+1e-9) {
				continue
			}
			label := ""
			if m == 1 || (decades < 4 && (m == 2 || m == 5)) {
				label = num(v)
			}
			ts = append(ts, gplot.Tick{Value: v, Label: label})
		}
	}
	return ts
}

// num formats a value for a label: whole above 100, two decimals at most
// below, and no exponent between 0.001 and a million.
func num(v float64) string {
	a := math.Abs(v)
	switch {
	case a == 0:
		return "0"
	case a >= 1e6:
		return strconv.FormatFloat(v, 'g', 3, 64)
	case a >= 100:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case a >= 1:
		return trimZeros(strconv.FormatFloat(v, 'f', 2, 64))
	}
	return strconv.FormatFloat(v, 'g', 3, 64)
}

// thousands formats a count with thousands separators: 1,530,000.
func thousands(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	if neg {
		s = "-" + s
	}
	return s
}

func trimZeros(s string) string {
	for len(s) > 1 && s[len(s)-1] == '0' {
		s = s[:len(s)-1]
	}
	if s[len(s)-1] == '.' {
		s = s[:len(s)-1]
	}
	return s
}

// hline is a dashed horizontal line at y across x0..x1, a data range of
// its own so the axis always shows it.
func hline(x0, x1, y float64, c color.Color) (*plotter.Line, error) {
	l, err := plotter.NewLine(plotter.XYs{{X: x0, Y: y}, {X: x1, Y: y}})
	if err != nil {
		return nil, err
	}
	l.Color = c
	l.Width = 1.5
	l.Dashes = []vg.Length{6, 3}
	return l, nil
}

// vline is a dashed vertical line at x across y0..y1.
func vline(x, y0, y1 float64, c color.Color) (*plotter.Line, error) {
	l, err := plotter.NewLine(plotter.XYs{{X: x, Y: y0}, {X: x, Y: y1}})
	if err != nil {
		return nil, err
	}
	l.Color = c
	l.Width = 1.5
	l.Dashes = []vg.Length{6, 3}
	return l, nil
}

// line is a solid line through xys in colour c.
func line(xys plotter.XYs, c color.Color) (*plotter.Line, error) {
	l, err := plotter.NewLine(xys)
	if err != nil {
		return nil, err
	}
	l.Color = c
	l.Width = 2
	return l, nil
}

// points is a scatter of glyphs.
func points(xys plotter.XYs, c color.Color, shape draw.GlyphDrawer, r vg.Length) (*plotter.Scatter, error) {
	s, err := plotter.NewScatter(xys)
	if err != nil {
		return nil, err
	}
	s.Color, s.Shape, s.Radius = c, shape, r
	return s, nil
}

// labels writes text next to points, offset up and right.
func labels(xys plotter.XYs, texts []string, size vg.Length, c color.Color) (*plotter.Labels, error) {
	l, err := plotter.NewLabels(plotter.XYLabels{XYs: xys, Labels: texts})
	if err != nil {
		return nil, err
	}
	for i := range l.TextStyle {
		l.TextStyle[i].Font = sans(size)
		l.TextStyle[i].Color = c
	}
	l.Offset = vg.Point{X: 5, Y: 4}
	return l, nil
}

// finite reports whether v is a real number.
func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }
