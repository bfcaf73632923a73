package accuracy

import (
	"math"
	"slices"

	"github.com/headroom-sim/headroom/internal/study/replay"
)

// The closed-loop bars: the median absolute error of the mean TTFT and
// TPOT over every replayed run, and within each (model, GPU) group; and
// the signed median TPOT error of each (model, GPU, layout) group of at
// least LayoutMinRuns runs (a whole layout predicted fast or slow is a
// mechanism the step model lacks, whatever the other layouts average).
const (
	OverallTTFTPct = 20
	OverallTPOTPct = 8
	GroupTTFTPct   = 35
	GroupTPOTPct   = 20
	LayoutTPOTPct  = 15
	LayoutMinRuns  = 5
)

// RunBars are the bars of a run compared quantile by quantile: the worst
// absolute error over its mean, p50, p90 and p99 of each metric.
var RunBars = map[string]float64{"ttft_ms": 30, "tpot_ms": 15, "e2e_ms": 15}

// RunMetrics are the metrics RunBars judge, in the order reports list them.
var RunMetrics = []string{"ttft_ms", "tpot_ms", "e2e_ms"}

// Figure is one judged error figure (%) and its bar.
type Figure struct {
	// Key names what the figure is: "overall TTFT", "gpt-oss-120b on
	// h200-sxm TPOT", "run RTX4090_Llama-3.1-8B ttft_ms".
	Key      string
	ValuePct float64
	BarPct   float64
	// N is how many runs (or, for a run, quantiles) it summarises.
	N int
}

// Meets reports whether the figure is within its bar.
func (f Figure) Meets() bool { return f.ValuePct <= f.BarPct }

// ClosedLoopFigures are the figures the closed-loop bars judge: the
// overall median absolute TTFT and TPOT error, every (model, GPU) group's,
// and the absolute signed median TPOT error of every (model, GPU, layout)
// group of at least LayoutMinRuns runs (keyed "<group>, <layout> TPOT
// signed"). A group in which no run replayed is a figure of +Inf.
func ClosedLoopFigures(rs []replay.MeanResult) []Figure {
	all := replay.SummarizeMeans(rs)
	figs := []Figure{
		{Key: "overall TTFT", ValuePct: value(all.TTFTMedian, all.N), BarPct: OverallTTFTPct, N: all.N},
		{Key: "overall TPOT", ValuePct: value(all.TPOTMedian, all.N), BarPct: OverallTPOTPct, N: all.N},
	}
	for _, g := range replay.GroupMeans(rs, false) {
		figs = append(figs,
			Figure{Key: g.Name() + " TTFT", ValuePct: value(g.TTFTMedian, g.N), BarPct: GroupTTFTPct, N: g.N},
			Figure{Key: g.Name() + " TPOT", ValuePct: value(g.TPOTMedian, g.N), BarPct: GroupTPOTPct, N: g.N})
	}
	for _, g := range replay.GroupMeans(rs, true) {
		if g.N+g.Failed < LayoutMinRuns {
			continue
		}
		figs = append(figs, Figure{Key: g.Name() + " TPOT signed", ValuePct: value(math.Abs(g.TPOTBias), g.N), BarPct: LayoutTPOTPct, N: g.N})
	}
	return figs
}

func value(v float64, n int) float64 {
	if n == 0 || math.IsNaN(v) {
		return math.Inf(1)
	}
	return v
}

// RunWorst is a comparison's worst absolute error (%) over the quantiles
// compared of metric, and how many were compared (0: none).
func RunWorst(c *replay.Comparison, metric string) (worst float64, n int) {
	for _, q := range replay.Quantiles {
		if m, ok := c.Get(metric + "." + q); ok {
			worst, n = math.Max(worst, math.Abs(m.ErrorPct)), n+1
		}
	}
	return worst, n
}

// RunFigures are the figures RunBars judge for each comparison: per
// metric compared, its worst quantile error.
func RunFigures(cs []replay.Comparison) []Figure {
	var figs []Figure
	for i := range cs {
		for _, m := range RunMetrics {
			if w, n := RunWorst(&cs[i], m); n > 0 {
				figs = append(figs, Figure{Key: "run " + cs[i].Run + " " + m, ValuePct: w, BarPct: RunBars[m], N: n})
			}
		}
	}
	return figs
}

// MeetsRunBars reports whether every metric of c compared is within its bar.
func MeetsRunBars(c *replay.Comparison) bool {
	return !slices.ContainsFunc(RunFigures([]replay.Comparison{*c}), func(f Figure) bool { return !f.Meets() })
}
