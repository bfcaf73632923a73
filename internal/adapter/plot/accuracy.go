package plot

import (
	"cmp"
	"fmt"
	"image/color"
	"io"
	"math"
	"slices"

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
// near-square panels side by side under the title.
const accuracyHeight = 4.2 * vg.Inch

// colBand fills the band around y = x.
var colBand = color.RGBA{R: 0x2c, G: 0xa0, B: 0x2c, A: 0x30}

// PredictedVsMeasured draws predicted against measured means, one panel
// for TTFT and one for TPOT, both axes logarithmic in ms: the y = x line,
// the band within ±bandPct % of it, one colour per series (in name order)
// with the series' run count in the legend. Each panel's title gives its
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
	plots, err := accuracyPanels(pts, bandPct)
	if err != nil {
		return err
	}
	return render(w, Width, accuracyHeight, func(dc draw.Canvas) error {
		head := newPlot(title, "", "")
		dc = drawTitle(dc, head)
		drawSideBySide(dc, plots)
		return nil
	})
}

// accuracyPanels builds PredictedVsMeasured's two panels, the legend on
// the first.
func accuracyPanels(pts []AccuracyPoint, bandPct float64) ([]*gplot.Plot, error) {
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
			return nil, noData("predicted vs measured: no run with a positive measured and predicted %s", pn.name)
		}
		if hi/lo < 2 {
			c := math.Sqrt(lo * hi)
			lo, hi = c/1.5, c*1.5
		}
		// Both axes are linear in log10(ms), labelled in ms: gonum places a
		// centred axis label at the arithmetic middle of a log axis's range,
		// which squeezes the panel.
		lo, hi = math.Log10(lo/1.3), math.Log10(hi*1.3)
		p := newPlot(fmt.Sprintf("%s: median |error| %.1f%%, n=%d", pn.name, median(absErr), len(absErr)),
			"measured mean "+pn.name+" (ms)", "predicted mean "+pn.name+" (ms)")
		p.Title.TextStyle.Font = sans(11)
		p.X.Tick.Marker, p.Y.Tick.Marker = log10Ticks{}, log10Ticks{}
		lb, hb := math.Log10(1-bandPct/100), math.Log10(1+bandPct/100)
		band, err := plotter.NewPolygon(plotter.XYs{{X: lo, Y: lo + lb}, {X: hi, Y: hi + lb}, {X: hi, Y: hi + hb}, {X: lo, Y: lo + hb}})
		if err != nil {
			return nil, err
		}
		band.Color, band.LineStyle.Width = colBand, 0
		diag, err := line(plotter.XYs{{X: lo, Y: lo}, {X: hi, Y: hi}}, colKnee)
		if err != nil {
			return nil, err
		}
		diag.Width = 1
		p.Add(band, diag)
		if pi == 0 {
			p.Legend.Add("predicted = measured", diag)
			p.Legend.Add(fmt.Sprintf("within ±%s%%", num(bandPct)), band)
		}
		for si, s := range series {
			xys := bySeries[s]
			if len(xys) == 0 {
				continue
			}
			c := translucent(seriesColor(si))
			sc, err := points(xys, c, draw.CircleGlyph{}, 2.2)
			if err != nil {
				return nil, err
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
			return nil, err
		}
		plots[0].Legend.Add(fmt.Sprintf("%s (%d)", s, count[s]), sc)
	}
	return plots, nil
}

// drawSideBySide draws plots in one row with aligned data areas and the
// first plot's legend in a strip on the right.
func drawSideBySide(dc draw.Canvas, ps []*gplot.Plot) {
	legend := ps[0].Legend
	r := legend.Rectangle(dc)
	legendW := (r.Max.X - r.Min.X) * 1.1 // room for a viewer's wider fallback font
	for _, p := range ps {
		p.Legend = gplot.NewLegend()
	}
	area := draw.Crop(dc, 0, -(legendW + legendGap + 4), 0, 0)
	t := draw.Tiles{Rows: 1, Cols: len(ps), PadX: 14, PadTop: 4, PadBottom: 4, PadLeft: 4, PadRight: 4}
	cs := gplot.Align([][]*gplot.Plot{ps}, t, area)
	for i, p := range ps {
		p.Draw(cs[0][i])
	}
	data := ps[0].DataCanvas(cs[0][0])
	legend.Top, legend.Left, legend.XOffs, legend.YOffs = true, true, 0, 0
	strip := dc
	strip.Min.X, strip.Max.Y = area.Max.X+legendGap, data.Max.Y
	legend.Draw(strip)
	ps[0].Legend = legend
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

// median of xs (not empty), the mean of the middle two for an even count.
func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.SortFunc(s, cmp.Compare[float64])
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}
