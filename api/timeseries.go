package api

import (
	"fmt"
	"math"

	"github.com/headroom-sim/headroom/sim"
)

// coarsen bounds rep's time series to maxPoints: a longer one (one point
// per simulated second) becomes one point per k seconds, k the smallest
// that fits, as a scrape every k seconds would see the run: the gauges
// (running, waiting, KV usage) and the totals (preemptions, completed) as
// they stand at the end of each window, the token rates averaged over it.
// It answers k (1 when the series is left as it is).
func coarsen(rep *sim.Report, maxPoints int) int {
	if rep == nil || maxPoints < 1 || len(rep.Timeseries) <= maxPoints {
		return 1
	}
	pts := rep.Timeseries
	k := (len(pts) + maxPoints - 1) / maxPoints
	out := make([]sim.TimePoint, 0, (len(pts)+k-1)/k)
	for lo := 0; lo < len(pts); lo += k {
		win := pts[lo:min(lo+k, len(pts))]
		p := win[len(win)-1]
		var out1, in1 float64
		for _, q := range win {
			out1 += q.OutputTokensPerS
			in1 += q.PromptTokensPerS
		}
		p.OutputTokensPerS = round3(out1 / float64(len(win)))
		p.PromptTokensPerS = round3(in1 / float64(len(win)))
		out = append(out, p)
	}
	rep.Timeseries = out
	return k
}

func round3(x float64) float64 { return math.Round(x*1000) / 1000 }

// coarsenNote is a job's note for a series coarsened to one point per k s.
func coarsenNote(field string, k, maxPoints int) []string {
	if k <= 1 {
		return nil
	}
	return []string{fmt.Sprintf("%s: coarsened to one point per %d s to stay within limits.timeseries_points (%d)", field, k, maxPoints)}
}
