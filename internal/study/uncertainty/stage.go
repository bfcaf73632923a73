package uncertainty

import (
	"math"

	"github.com/headroom-sim/headroom/sim"
)

// StageReport is stage i of rep as a report of its own, for Judge: the
// stage's latencies, queue, throughput, preemptions and requests, and its
// load as the run's time series shows it over the stage's seconds: the
// most requests one rank ran (the running requests summed over the ranks,
// divided by ranks) and the highest KV-cache usage. A run without a time
// series keeps the whole run's peaks, which judges every stage at the
// heaviest stage's load (wider bands, never narrower). Nil when rep has
// no stage i.
func StageReport(rep *sim.Report, i, ranks int) *sim.Report {
	if i < 0 || i >= len(rep.Stages) {
		return nil
	}
	st := &rep.Stages[i]
	sub := &sim.Report{
		Requests: st.Requests, TTFTMS: st.TTFTMS, TPOTMS: st.TPOTMS, ITLMS: st.ITLMS, E2EMS: st.E2EMS, QueueMS: st.QueueMS,
		Throughput: st.Throughput, Preemptions: st.Preemptions, MaxRunning: rep.MaxRunning, KVCache: rep.KVCache,
	}
	if len(rep.Timeseries) == 0 {
		return sub
	}
	ranks = max(ranks, 1)
	running, kv, seen := 0.0, 0.0, false
	end := st.StartS + st.DurationS
	for _, p := range rep.Timeseries {
		// A point is the state at the end of a simulated second.
		if p.TS <= st.StartS || p.TS > end {
			continue
		}
		seen = true
		running = math.Max(running, float64(p.Running)/float64(ranks))
		kv = math.Max(kv, p.KVUsageRatio)
	}
	if seen {
		sub.MaxRunning = int(math.Ceil(running))
		sub.KVCache.PeakUsageRatio = kv
	}
	return sub
}
