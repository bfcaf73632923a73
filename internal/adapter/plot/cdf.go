package plot

import (
	"fmt"
	"io"
	"math"
	"slices"

	gplot "gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/headroom-sim/headroom/sim/stats"
)

// Series is one named distribution of a CDF chart: a sample (Values, any
// order) or, when Values is nil, a histogram (Hist).
type Series struct {
	Name   string
	Values []float64
	Hist   *stats.Histogram
}

// quantiler returns the series' quantile function and sample count.
func (s Series) quantiler() (func(q float64) float64, int64) {
	if s.Values != nil {
		xs := make([]float64, 0, len(s.Values))
		for _, v := range s.Values {
			if finite(v) {
				xs = append(xs, v)
			}
		}
		slices.Sort(xs)
		return func(q float64) float64 { return stats.Quantile(xs, q) }, int64(len(xs))
	}
	if s.Hist == nil || s.Hist.Count() == 0 {
		return nil, 0
	}
	return s.Hist.Quantile, s.Hist.Count()
}

// cdfQuantiles are the quantiles a CDF is drawn through: evenly to p99,
// then ever finer into the tail.
var cdfQuantiles = func() []float64 {
	var qs []float64
	for i := 0; i < 198; i++ {
		qs = append(qs, float64(i)*0.005)
	}
	for i := 0; i < 18; i++ {
		qs = append(qs, 0.99+float64(i)*0.0005)
	}
	for i := 0; i <= 10; i++ {
		qs = append(qs, 0.999+float64(i)*0.0001)
	}
	return qs
}()

// CDF draws the cumulative distributions of series on one chart: x in the
// unit xLabel names (log scale when the values span more than 30×), y the
// fraction of samples at or below x, with each series' p50 and p99 marked.
func CDF(w io.Writer, title, xLabel string, series []Series) error {
	type curve struct {
		name     string
		xys      plotter.XYs
		p50, p99 float64
	}
	var curves []curve
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, s := range series {
		q, n := s.quantiler()
		if n == 0 {
			continue
		}
		c := curve{name: s.Name, p50: q(0.5), p99: q(0.99)}
		for _, p := range cdfQuantiles {
			c.xys = append(c.xys, plotter.XY{X: q(p), Y: p})
		}
		lo, hi = math.Min(lo, q(0.01)), math.Max(hi, q(1))
		curves = append(curves, c)
	}
	if len(curves) == 0 {
		return noData("%s: no samples in any series", title)
	}
	p := newPlot(title, xLabel, "fraction at or below x")
	logX := wantLog(lo, hi)
	if logX {
		setLog(&p.X)
	}
	p.Y.Min, p.Y.Max = 0, 1
	var yt gplot.ConstantTicks
	for i := 0; i <= 10; i++ {
		t := gplot.Tick{Value: float64(i) / 10}
		if i%2 == 0 {
			t.Label = num(t.Value)
		}
		yt = append(yt, t)
	}
	p.Y.Tick.Marker = yt
	p.Legend.Left, p.Legend.Top = false, false
	p.Legend.XOffs, p.Legend.YOffs = -4, 4
	for i, c := range curves {
		xys := c.xys
		if logX {
			xys = slices.DeleteFunc(slices.Clone(xys), func(v plotter.XY) bool { return v.X <= 0 })
			if len(xys) == 0 {
				continue
			}
		}
		col := seriesColor(i)
		l, err := line(xys, col)
		if err != nil {
			return err
		}
		marks := plotter.XYs{{X: c.p50, Y: 0.5}, {X: c.p99, Y: 0.99}}
		texts := []string{"p50 " + num(c.p50), "p99 " + num(c.p99)}
		if logX {
			marks, texts = positive(marks, texts)
		}
		p.Add(l)
		if len(marks) > 0 {
			m, err := points(marks, col, draw.CircleGlyph{}, 3.5)
			if err != nil {
				return err
			}
			lb, err := labels(marks, texts, 9, col)
			if err != nil {
				return err
			}
			// Right of and below each mark is clear of the curve, which
			// rises to the right; series stack their labels downwards.
			lb.Offset = vg.Point{X: 6, Y: vg.Length(-12 - 11*i)}
			p.Add(m, lb)
		}
		if c.name != "" {
			p.Legend.Add(c.name, l)
		}
	}
	return renderPlot(w, p)
}

func positive(xys plotter.XYs, texts []string) (plotter.XYs, []string) {
	var ox plotter.XYs
	var ot []string
	for i, v := range xys {
		if v.X > 0 {
			ox, ot = append(ox, v), append(ot, texts[i])
		}
	}
	return ox, ot
}

// TTFTCDF draws the run's time-to-first-token CDF.
func TTFTCDF(w io.Writer, d *Distributions) error {
	if d == nil {
		return noData("TTFT CDF: no distributions collected")
	}
	return CDF(w, fmt.Sprintf("Time to first token (ms), CDF of %s requests", thousands(d.ttft.Count())), "TTFT (ms)",
		[]Series{{Hist: d.ttft}})
}

// TPOTCDF draws the run's per-request time-per-output-token CDF.
func TPOTCDF(w io.Writer, d *Distributions) error {
	if d == nil {
		return noData("TPOT CDF: no distributions collected")
	}
	return CDF(w, fmt.Sprintf("Time per output token (ms), CDF of %s requests", thousands(d.tpot.Count())), "TPOT (ms)",
		[]Series{{Hist: d.tpot}})
}

// ITLCDF draws the run's token-weighted inter-token latency CDF.
func ITLCDF(w io.Writer, d *Distributions) error {
	if d == nil {
		return noData("ITL CDF: no distributions collected")
	}
	return CDF(w, fmt.Sprintf("Inter-token latency (ms), CDF of %s token gaps", thousands(d.itl.Count())), "ITL (ms)",
		[]Series{{Hist: d.itl}})
}

// E2ECDF draws the run's end-to-end latency CDF.
func E2ECDF(w io.Writer, d *Distributions) error {
	if d == nil {
		return noData("E2E CDF: no distributions collected")
	}
	return CDF(w, fmt.Sprintf("End-to-end latency (ms), CDF of %s requests", thousands(d.e2e.Count())), "E2E latency (ms)",
		[]Series{{Hist: d.e2e}})
}
