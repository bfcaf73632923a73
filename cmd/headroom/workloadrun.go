package main

import (
	"fmt"
	"io"
	"sort"
	"text/tabwriter"

	"github.com/headroom-sim/headroom/internal/adapter/measured"
	"github.com/headroom-sim/headroom/internal/study/replay"
	"github.com/headroom-sim/headroom/internal/study/scenario"
	"github.com/headroom-sim/headroom/sim"
	"github.com/headroom-sim/headroom/sim/stats"
)

// workloadRun is simulate's --workload-run: a measured run's requests as
// the workload (arrivals, lengths, tenants), in place of the scenario's.
type workloadRun struct {
	path, arrivals string
	run            *measured.Run
	// byStage collects the simulated latencies per stage (a tenant of a
	// trace, a benchmark of a sweep) for the table.
	byStage map[int]*stageSamples
}

type stageSamples struct{ ttft, tpot, e2e []float64 }

// apply loads the run and puts its requests in res's workload.
func (w *workloadRun) apply(res *scenario.Resolved, format string) (string, error) {
	if w.arrivals != "send" && w.arrivals != "schedule" {
		return "", usagef("--workload-arrivals: %q is not send or schedule", w.arrivals)
	}
	run, _, err := loadMeasured(w.path, &runOverrides{format: format}, nil)
	if err != nil {
		return "", usagef("--workload-run %s: %v", w.path, err)
	}
	recs := replay.TraceRecords(run, w.arrivals == "schedule")
	if len(recs) == 0 {
		return "", usagef("--workload-run %s: no completed request with its token counts to replay (it holds %d requests; a file of summaries has none)", w.path, len(run.Requests))
	}
	old := res.Config.Workload
	res.Config.Workload = sim.Workload{Trace: recs, TraceHashTokens: run.HashTokens, Warmup: old.Warmup}
	if err := res.Config.Validate(); err != nil {
		return "", scenarioError(err)
	}
	w.run, w.byStage = run, map[int]*stageSamples{}
	from := "send times"
	if w.arrivals == "schedule" {
		from = "scheduled arrivals (send less the client's delay)"
	}
	msg := fmt.Sprintf("workload: %d requests of %s (%s), arriving at their %s, with their own input and output lengths", len(recs), run.Name, run.Format, from)
	if n := len(run.Stages); n > 1 {
		msg += fmt.Sprintf("; %d stages (%s …) reported apart", n, stageName(run, run.Stages[0].Index))
	}
	return msg + "; the scenario's workload section is not used", nil
}

// sink collects the simulated requests per stage.
func (w *workloadRun) sink() sim.Option {
	return sim.WithRequestSink(func(s sim.RequestSample) {
		st := w.byStage[s.Stage]
		if st == nil {
			st = &stageSamples{}
			w.byStage[s.Stage] = st
		}
		st.ttft, st.e2e = append(st.ttft, s.TTFTMS), append(st.e2e, s.E2EMS)
		if s.OutputTokens > 1 {
			st.tpot = append(st.tpot, s.TPOTMS)
		}
	})
}

// writeStages prints the simulated latencies per stage of the run.
func (w *workloadRun) writeStages(out io.Writer) {
	if w.run == nil || len(w.run.Stages) < 2 {
		return
	}
	idx := make([]int, 0, len(w.byStage))
	for i := range w.byStage {
		idx = append(idx, i)
	}
	sort.Ints(idx)
	fmt.Fprintln(out)
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "stage\tof the run\tcompleted\tTTFT p50/p99 ms\tTPOT p50/p99 ms\tE2E p50/p99 ms\t")
	for _, i := range idx {
		s := w.byStage[i]
		t, p, e := stats.Summarize(s.ttft), stats.Summarize(s.tpot), stats.Summarize(s.e2e)
		fmt.Fprintf(tw, "%d\t%s\t%d\t%.1f/%.1f\t%.1f/%.1f\t%.1f/%.1f\t\n", i, stageName(w.run, i), len(s.e2e), t.P50, t.P99, p.P50, p.P99, e.P50, e.P99)
	}
	tw.Flush()
}

func stageName(run *measured.Run, i int) string {
	for _, s := range run.Stages {
		if s.Index == i {
			if s.Label != "" {
				return s.Label
			}
			return stageLoad(&s)
		}
	}
	return "-"
}
