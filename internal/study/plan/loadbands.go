package plan

import (
	"slices"

	"github.com/headroom-sim/headroom/internal/study/uncertainty"
	"github.com/headroom-sim/headroom/sim"
)

// The band of a search's answer (LoadResult.MaxLoadInterval): the highest
// load at which the SLA holds when each of its figures is read at an end
// of its error band instead of its point value. At the bands' upper ends
// (what a benchmark measures at worst, at 80% or 95%) that is the low end
// of the max load's band; at their lower ends, its high end. Each probe's
// report is judged by the built-in error model at its own load, so a
// probe past saturation is read with the saturated regime's wider bands.
// It assumes what the error model's pools show: a run's figures err the
// same way across loads of one configuration.

// checkBand is one SLA check's value at the four band ends, in the order
// of metAt's k: the 95% and 80% upper ends, the 80% and 95% lower ends.
// A figure the error model has no band for keeps its point value.
type checkBand [4]float64

// probeBands are one probe's checks at their band ends, and the fewest
// validation runs behind one of their bands.
type probeBands struct {
	checks []checkBand
	runs   int
}

// checkBands judges rep and reads every SLA check's band ends.
func checkBands(m *uncertainty.Model, cfg *sim.Config, rep *sim.Report) probeBands {
	var pb probeBands
	if rep.SLA == nil {
		return pb
	}
	m.Judge(cfg, rep)
	pb.checks = make([]checkBand, len(rep.SLA.Checks))
	for i, ch := range rep.SLA.Checks {
		v := ch.ValueMS
		pb.checks[i] = checkBand{v, v, v, v}
		if in := uncertainty.Band(rep, ch.Metric, ch.Quantile); in != nil {
			pb.checks[i] = checkBand{in.P95[1], in.P80[1], in.P80[0], in.P95[0]}
			if pb.runs == 0 || in.Runs < pb.runs {
				pb.runs = in.Runs
			}
		}
	}
	return pb
}

// highestMet is the highest probed load that met the SLA with no missed
// load below it (0: none), and the lowest missed load (0: none).
func highestMet(cache map[float64]Probe) (lo, hi float64) {
	loads := make([]float64, 0, len(cache))
	for l := range cache {
		loads = append(loads, l)
	}
	slices.Sort(loads)
	for _, l := range loads {
		if !cache[l].Met {
			return lo, l
		}
		lo = l
	}
	return lo, 0
}

// metAt says whether p's SLA holds with every check at band end k. A
// check missed whatever its value (no request completed, the unfinished
// ones past the limit) stays missed.
func metAt(p Probe, bands []checkBand, k int) bool {
	if len(bands) != len(p.Checks) {
		return p.Met
	}
	for i, ch := range p.Checks {
		if ch.Reason != "" && !ch.Met {
			return false
		}
		if bands[i][k] > ch.LimitMS {
			return false
		}
	}
	return true
}
