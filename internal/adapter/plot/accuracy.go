package plot

import (
	"fmt"
	"image/color"
	"io"
	"math"
	"slices"

	"github.com/headroom-sim/headroom/sim/stats"
	gplot "gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// AccuracyPoint is one measured run's mean TTFT and TPOT (ms), measured
// and predicted, and the series it belongs to (its model, say).
type AccuracyPoint struct {
	Series                          string
	MeasuredTTFTMS, PredictedTTFTMS float64
	MeasuredTPOTMS, PredictedTPOTMS float64
}

// accuracyHeight is the height of the predicted-vs-measured chart: two
// near-square panels side by side under the title, the legend below.
const accuracyHeight = 4.8 * vg.Inch

// colBand fills the band around y = x.
var colBand = color.RGBA{R: 0x2c, G: 0xa0, B: 0x2c, A: 0x30}

// PredictedVsMeasured draws predicted against measured means, one panel
// for TTFT and one for TPOT, both axes logarithmic in ms: the y = x line,
// the band within ±bandPct % of it, one colour per series (in name order)
// with the series' run count in the legend below the panels. Each panel's title gives its
// median absolute error. A point whose measured or predicted value is not
// positive is left out of that panel. title "" draws "Predicted vs
// measured".
func PredictedVsMeasured(w io.Writer, title string, pts []AccuracyPoint, bandPct float64) error {
	if !(bandPct > 0 && bandPct < 100) {
		return fmt.Errorf("predicted vs measured: band %v%% is not in (0, 100)", bandPct)
	}
	if title == "" {
		title = "Predicted vs measured"
	}
	plots, legend, err := accuracyPanels(pts, bandPct)
	if err != nil {
		return err
	}
	return render(w, Width, accuracyHeight, func(dc draw.Canvas) error {
		head := newPlot(title, "", "")
		dc = drawTitle(dc, head)
		drawSideBySide(dc, plots, legend)
		return nil
	})
}

// legendEntry is one line of a legend drawn apart from its plot.
type legendEntry struct {
	label string
	thumb gplot.Thumbnailer
}

// accuracyPanels builds PredictedVsMeasured's two panels and their legend.
func accuracyPanels(pts []AccuracyPoint, bandPct float64) ([]*gplot.Plot, []legendEntry, error) {
	var series []string
	count := map[string]int{}
	for _, p := range pts {
		if count[p.Series] == 0 {
			series = append(series, p.Series)
		}
		count[p.Series]++
	}
	slices.Sort(series)
	panels := []struct {
		name       string
		meas, pred func(AccuracyPoint) float64
	}{
		{"TTFT", func(p AccuracyPoint) float64 { return p.MeasuredTTFTMS }, func(p AccuracyPoint) float64 { return p.PredictedTTFTMS }},
		{"TPOT", func(p AccuracyPoint) float64 { return p.MeasuredTPOTMS }, func(p AccuracyPoint) float64 { return p.PredictedTPOTMS }},
	}
	var plots []*gplot.Plot
	var legend []legendEntry
	for pi, pn := range panels {
		bySeries := map[string]plotter.XYs{}
		var absErr []float64
		lo, hi := math.Inf(1), math.Inf(-1)
		for _, p := range pts {
			m, q := pn.meas(p), pn.pred(p)
			if !(m > 0) || !(q > 0) || !finite(m) || !finite(q) {
				continue
			}
			bySeries[p.Series] = append(bySeries[p.Series], plotter.XY{X: math.Log10(m), Y: math.Log10(q)})
			absErr = append(absErr, 100*math.Abs(q/m-1))
			lo, hi = math.Min(lo, math.Min(m, q)), math.Max(hi, math.Max(m, q))
		}
		if len(absErr) == 0 {
			return nil, nil, noData("predicted vs measured: no run with a positive measured and predicted %s", pn.name)
		}
		if hi/lo < 2 {
			c := math.Sqrt(lo * hi)
			lo, hi = c/1.5, c*1.5
		}
		// Both axes are linear in log10(ms), labelled in ms: gonum places a
		// centred axis label at the arithmetic middle of a log axis's range,
		// which squeezes the panel.
		lo, hi = math.Log10(lo/1.3), math.Log10(hi*1.3)
		p := newPlot(fmt.Sprintf("%s: median |error| %.1f%%, n=%d", pn.name, stats.Median(absErr), len(absErr)),
			"measured mean "+pn.name+" (ms)", "predicted mean "+pn.name+" (ms)")
		p.Title.TextStyle.Font = sans(11)
		p.X.Tick.Marker, p.Y.Tick.Marker = log10Ticks{}, log10Ticks{}
		lb, hb := math.Log10(1-bandPct/100), math.Log10(1+bandPct/100)
		band, err := plotter.NewPolygon(plotter.XYs{{X: lo, Y: lo + lb}, {X: hi, Y: hi + lb}, {X: hi, Y: hi + hb}, {X: lo, Y: lo + hb}})
		if err != nil {
			return nil, nil, err
		}
		band.Color, band.LineStyle.Width = colBand, 0
		diag, err := line(plotter.XYs{{X: lo, Y: lo}, {X: hi, Y: hi}}, colKnee)
		if err != nil {
			return nil, nil, err
		}
		diag.Width = 1
		p.Add(band, diag)
		if pi == 0 {
			legend = append(legend, legendEntry{"predicted = measured", diag}, legendEntry{fmt.Sprintf("within ±%s%%", num(bandPct)), band})
		}
		for si, s := range series {
			xys := bySeries[s]
			if len(xys) == 0 {
				continue
			}
			c := translucent(seriesColor(si))
			sc, err := points(xys, c, draw.CircleGlyph{}, 2.2)
			if err != nil {
				return nil, nil, err
			}
			p.Add(sc)
		}
		// The band reaches past the range; keep both axes on it.
		p.X.Min, p.X.Max, p.Y.Min, p.Y.Max = lo, hi, lo, hi
		plots = append(plots, p)
	}
	for si, s := range series {
		// The legend's swatch: a scatter drawn nowhere else.
		sc, err := points(plotter.XYs{{X: 1, Y: 1}}, translucent(seriesColor(si)), draw.CircleGlyph{}, 2.2)
		if err != nil {
			return nil, nil, err
		}
		legend = append(legend, legendEntry{fmt.Sprintf("%s (%d)", s, count[s]), sc})
	}
	return plots, legend, nil
}

// legendColumns is how many columns the legend below the panels has.
const legendColumns = 3

// drawSideBySide draws plots in one row with aligned data areas and the
// legend below them, in legendColumns columns.
func drawSideBySide(dc draw.Canvas, ps []*gplot.Plot, entries []legendEntry) {
	rows := (len(entries) + legendColumns - 1) / legendColumns
	var cols []gplot.Legend
	var stripH vg.Length
	for c := 0; c*rows < len(entries); c++ {
		l := gplot.NewLegend()
		l.TextStyle.Font, l.Padding = sans(10), 3
		l.Top, l.Left = true, true
		for _, e := range entries[c*rows : min((c+1)*rows, len(entries))] {
			l.Add(e.label, e.thumb)
		}
		r := l.Rectangle(dc)
		stripH = max(stripH, r.Max.Y-r.Min.Y)
		cols = append(cols, l)
	}
	stripH *= 1.15 // room for a viewer's larger fallback font
	const bottom = 6
	area := draw.Crop(dc, 0, 0, bottom+stripH+legendGap, 0)
	t := draw.Tiles{Rows: 1, Cols: len(ps), PadX: 14, PadTop: 4, PadBottom: 4, PadLeft: 4, PadRight: 8}
	cs := gplot.Align([][]*gplot.Plot{ps}, t, area)
	for i, p := range ps {
		p.Draw(cs[0][i])
	}
	left := ps[0].DataCanvas(cs[0][0]).Min.X
	colW := (dc.Max.X - left) / legendColumns
	for c, l := range cols {
		strip := dc
		strip.Min.X, strip.Max.X = left+vg.Length(c)*colW, left+vg.Length(c+1)*colW
		strip.Min.Y = dc.Min.Y + bottom
		strip.Max.Y = strip.Min.Y + stripH
		l.Draw(strip)
	}
}

// log10Ticks label an axis of log10(value) with the values: 10^k, and 2
// and 5 × 10^k when it spans less than two decades, with unlabelled minor
// ticks between.
type log10Ticks struct{}

func (log10Ticks) Ticks(lo, hi float64) []gplot.Tick {
	var ts []gplot.Tick
	for e := math.Floor(lo); e <= math.Ceil(hi); e++ {
		for m := 1; m <= 9; m++ {
			v := e + math.Log10(float64(m))
			if v < lo-1e-9 || v > hi+1e-9 {
				continue
			}
			label := ""
			if m == 1 || (hi-lo < 2 && (m == 2 || m == 5)) {
				label = num(math.Pow(10, v))
			}
			ts = append(ts, gplot.Tick{Value: v, Label: label})
		}
	}
	return ts
}

// translucent is c at about 70% opacity, so that overlapping points show.
func translucent(c color.Color) color.Color {
	r, g, b, _ := c.RGBA()
	const a = 0xb4
	return color.NRGBA{R: uint8(r >> 8), G: uint8(g >> 8), B: uint8(b >> 8), A: a}
}
