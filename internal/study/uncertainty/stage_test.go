package uncertainty

import (
	"testing"

	"github.com/headroom-sim/headroom/sim"
)

// TestStageReport: a stage's load is the peak of its own seconds of the
// time series (running per rank, KV usage); without a series, the run's.
func TestStageReport(t *testing.T) {
	rep := &sim.Report{
		MaxRunning: 90, KVCache: sim.KVUsage{PeakUsageRatio: 0.9},
		Stages: []sim.StageReport{
			{Index: 0, StartS: 0, DurationS: 2, Preemptions: 0, Throughput: sim.Throughput{RequestsPerS: 1}},
			{Index: 1, StartS: 2, DurationS: 2, Preemptions: 3, Throughput: sim.Throughput{RequestsPerS: 5}},
		},
		// Two ranks: running is summed over them.
		Timeseries: []sim.TimePoint{
			{TS: 1, Running: 4, KVUsageRatio: 0.1}, {TS: 2, Running: 7, KVUsageRatio: 0.2},
			{TS: 3, Running: 60, KVUsageRatio: 0.5}, {TS: 4, Running: 181, KVUsageRatio: 0.8},
		},
	}
	s0, s1 := StageReport(rep, 0, 2), StageReport(rep, 1, 2)
	if s0.MaxRunning != 4 || s0.KVCache.PeakUsageRatio != 0.2 || s0.Throughput.RequestsPerS != 1 || s0.Preemptions != 0 {
		t.Errorf("stage 0: running %d, kv %v, %+v", s0.MaxRunning, s0.KVCache.PeakUsageRatio, s0.Throughput)
	}
	if s1.MaxRunning != 91 || s1.KVCache.PeakUsageRatio != 0.8 || s1.Preemptions != 3 {
		t.Errorf("stage 1: running %d, kv %v, preemptions %d", s1.MaxRunning, s1.KVCache.PeakUsageRatio, s1.Preemptions)
	}
	rep.Timeseries = nil
	if s := StageReport(rep, 0, 2); s.MaxRunning != 90 || s.KVCache.PeakUsageRatio != 0.9 {
		t.Errorf("without a series: running %d, kv %v, want the run's", s.MaxRunning, s.KVCache.PeakUsageRatio)
	}
	if StageReport(rep, 2, 1) != nil || StageReport(rep, -1, 1) != nil {
		t.Error("a stage the run does not have")
	}
}
