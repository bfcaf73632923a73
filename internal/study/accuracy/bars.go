package accuracy

import (
	"math"
	"slices"

	"github.com/headroom-sim/headroom/internal/study/calibrate"
	"github.com/headroom-sim/headroom/internal/study/replay"
)

// The closed-loop bars: the median absolute error of the mean TTFT and
// TPOT over every replayed run, and within each (model, GPU) group.
const (
	OverallTTFTPct = 20
	OverallTPOTPct = 10
	GroupTTFTPct   = 35
	GroupTPOTPct   = 20
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
// overall median absolute TTFT and TPOT error, the overall TTFT's signed
// median (its absolute value against SignedTTFTPct), and every (model,
// GPU) group's median absolute errors. A group in which no run replayed is a figure of +Inf.
func ClosedLoopFigures(rs []replay.MeanResult) []Figure {
	all := replay.SummarizeMeans(rs)
	figs := []Figure{
		{Key: "overall TTFT", ValuePct: value(all.TTFTMedian, all.N), BarPct: OverallTTFTPct, N: all.N},
		{Key: "overall TPOT", ValuePct: value(all.TPOTMedian, all.N), BarPct: OverallTPOTPct, N: all.N},
		{Key: "overall TTFT signed", ValuePct: value(math.Abs(all.TTFTBias), all.N), BarPct: SignedTTFTPct, N: all.N},
	}
	for _, g := range replay.GroupMeans(rs, false) {
		figs = append(figs,
			Figure{Key: g.Name() + " TTFT", ValuePct: value(g.TTFTMedian, g.N), BarPct: GroupTTFTPct, N: g.N},
			Figure{Key: g.Name() + " TPOT", ValuePct: value(g.TPOTMedian, g.N), BarPct: GroupTPOTPct, N: g.N})
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

// The closed-loop bar on the direction of the TTFT error: the signed
// median over every run within ±SignedTTFTPct.
const SignedTTFTPct = 10

// OpenLoopBars are the residency runs' bars (calibrate.FamilyOpenLoop):
// each run's TTFT and ITL P50 and mean TPOT.
var OpenLoopBars = map[string]float64{"ttft_ms.p50": 10, "itl_ms.p50": 10, "tpot_ms.mean": 5}

// SteppedBars are the stepped runs' bars (calibrate.FamilyStepped): every
// stage's throughput, and TTFT and E2E P50 at the lowest load (stage 0).
var SteppedBars = map[string]float64{"throughput.requests_per_s": 10, "ttft_ms.p50": 15, "e2e_ms.p50": 15}

// FamilyFigures are the figures of one family's case results against
// bars: one per case and barred metric it was scored on (a stepped run's
// latencies at stage 0 only), keyed "<family> <case> <metric>". A case that
// did not simulate is a figure of +Inf for each barred metric.
func FamilyFigures(family string, rs []calibrate.CaseResult, bars map[string]float64) []Figure {
	var figs []Figure
	for i := range rs {
		r := &rs[i]
		if r.Case.Family != family {
			continue
		}
		names := make([]string, 0, len(bars))
		for m := range bars {
			if _, ok := r.Case.Measured[m]; !ok {
				continue
			}
			if family == calibrate.FamilyStepped && m != "throughput.requests_per_s" && r.Case.Stage != 0 {
				continue
			}
			names = append(names, m)
		}
		slices.Sort(names)
		for _, m := range names {
			f := Figure{Key: family + " " + r.Case.Name + " " + m, BarPct: bars[m], N: 1, ValuePct: math.Inf(1)}
			if e, ok := r.Error(m); ok && r.Err == nil {
				f.ValuePct = 100 * math.Abs(e)
			}
			figs = append(figs, f)
		}
	}
	return figs
}
