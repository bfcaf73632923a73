package calibrate

import (
	"maps"
	"strings"

	"github.com/headroom-sim/headroom/internal/adapter/measured"
	"github.com/headroom-sim/headroom/internal/study/replay"
)

// Run is the measured run a case replays (one of its stages for a stepped
// run's case).
func (c *Case) Run() *measured.Run { return c.run }

// MeasuredFigures are every figure the case's benchmark measured, keyed as
// Measured is ("ttft_ms.p99", "throughput.requests_per_s"): the family's
// scored metrics and, where the run measured them, the other statistics
// of its latencies (a residency trace's and a request-level run's tails,
// its ITL) and its request throughput. A stepped run's latencies past its lowest loads are left out,
// as the family leaves them out: the stage's own queue, which the
// summary's load does not pin down, dominates them.
func (c *Case) MeasuredFigures() map[string]float64 {
	out := maps.Clone(c.Measured)
	if c.part == nil || (c.Family == FamilyStepped && c.Stage >= stepLowStages) {
		return out
	}
	add(out, c.part.Measured)
	if _, have := out["throughput.requests_per_s"]; !have && c.part.Measured.RequestsPerS > 0 {
		out["throughput.requests_per_s"] = c.part.Measured.RequestsPerS
	}
	return out
}

func add(out map[string]float64, m replay.Measured) {
	for metric, qs := range m.Latency {
		for q := range qs {
			if v, ok := m.Get(metric, q); ok && !strings.HasPrefix(q, "max") && q != "count" {
				if _, have := out[metric+"."+q]; !have {
					out[metric+"."+q] = v
				}
			}
		}
	}
}
