package calibrate

import (
	"math"

	"github.com/headroom-sim/headroom/sim"
	"github.com/headroom-sim/headroom/sim/measured"
	"github.com/headroom-sim/headroom/sim/stats"
)

// Quantiles a fit matches for each latency metric.
var Quantiles = []string{"mean", "p50", "p90", "p99"}

// Metrics a fit matches.
var Metrics = []string{"ttft_ms", "tpot_ms", "e2e_ms"}

// target is one measured figure.
type target struct {
	metric, quantile string
	value            float64
}

// targets collects a run's measured quantiles (positive values only).
func targets(run *measured.Run) []target {
	s := run.Summarize()
	var out []target
	for _, m := range []struct {
		name string
		sum  stats.Summary
	}{{"ttft_ms", s.TTFTMS}, {"tpot_ms", s.TPOTMS}, {"e2e_ms", s.E2EMS}} {
		if m.sum.Count == 0 {
			continue
		}
		for _, q := range Quantiles {
			if v, _ := m.sum.At(q); v > 0 {
				out = append(out, target{m.name, q, v})
			}
		}
	}
	return out
}

// predicted reads the figure a target names from a simulation report.
func predicted(rep *sim.Report, t target) float64 {
	var s stats.Summary
	switch t.metric {
	case "ttft_ms":
		s = rep.TTFTMS
	case "tpot_ms":
		s = rep.TPOTMS
	case "e2e_ms":
		s = rep.E2EMS
	}
	v, _ := s.At(t.quantile)
	return v
}

// logLoss is the mean squared log-ratio of predicted to measured figures:
// scale-free, so a 10% error weighs the same on TTFT as on TPOT.
func logLoss(rep *sim.Report, ts []target) float64 {
	var sum float64
	for _, t := range ts {
		p := predicted(rep, t)
		if p <= 0 {
			p = 1e-3
		}
		d := math.Log(p / t.value)
		sum += d * d
	}
	return sum / float64(len(ts))
}
