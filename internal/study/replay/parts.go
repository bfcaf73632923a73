package replay

import (
	"fmt"
	"math"

	"github.com/headroom-sim/headroom/catalogs"
	"github.com/headroom-sim/headroom/internal/adapter/measured"
	"github.com/headroom-sim/headroom/internal/study/scenario"
	"github.com/headroom-sim/headroom/sim/stats"
)

// What a part's measured figures are.
const (
	// BasisRequests: computed from the run's per-request records, replayed
	// with their own arrivals and lengths.
	BasisRequests = "requests"
	// BasisAggregate: the tool's own summary of a benchmark (its
	// quantiles), replayed from the load it states (rate or concurrency,
	// request count, mean lengths).
	BasisAggregate = "aggregate"
)

// Part is one simulation of a replay and the measurement it is compared
// with. A run with per-request records is one part (the whole run, as the
// server saw it) unless its benchmarks were served with different engine
// settings (a `vllm bench sweep serve`), in which case each benchmark is
// its own part; a run with only the tool's aggregates is one part per
// benchmark that has one.
type Part struct {
	// Name names the run, or the benchmark: "run stage 2 (poisson)".
	Name string
	// Stage is the run's benchmark the figures belong to (-1: the whole
	// run).
	Stage int
	// Filter is the stage of the simulated requests the figures compare
	// with (-1: all of them).
	Filter int
	// Basis is BasisRequests or BasisAggregate.
	Basis    string
	Resolved *scenario.Resolved
	Measured Measured
	// Notes say what the rebuilt load assumes.
	Notes []string
}

// Measured is a benchmark's measured figures: per metric ("ttft_ms",
// "tpot_ms", "e2e_ms"), the statistics that were measured ("mean", "p50",
// …, in ms); throughput and counts when known (0: unknown).
type Measured struct {
	Latency          map[string]map[string]float64 `json:"latency"`
	RequestsPerS     float64                       `json:"requests_per_s,omitempty"`
	OutputTokensPerS float64                       `json:"output_tokens_per_s,omitempty"`
	Completed        int                           `json:"completed"`
	Failed           int                           `json:"failed"`
}

// Get is the measured value of metric's statistic q (ok false when not
// measured).
func (m Measured) Get(metric, q string) (float64, bool) {
	v, ok := m.Latency[metric][q]
	return v, ok && v > 0
}

// measuredFromSummary turns per-request summaries into figures.
func measuredFromSummary(s measured.Summary) Measured {
	m := Measured{Latency: map[string]map[string]float64{}, RequestsPerS: s.RequestsPerS, OutputTokensPerS: s.OutputTokensPerS, Completed: s.Completed, Failed: s.Failed}
	for _, x := range []struct {
		name string
		sum  stats.Summary
	}{{"ttft_ms", s.TTFTMS}, {"tpot_ms", s.TPOTMS}, {"itl_ms", s.ITLMS}, {"e2e_ms", s.E2EMS}} {
		if x.sum.Count == 0 {
			continue
		}
		q := map[string]float64{}
		for _, k := range stats.QuantileNames {
			if v, ok := x.sum.At(k); ok {
				q[k] = v
			}
		}
		m.Latency[x.name] = q
	}
	return m
}

// measuredFromAggregate turns a tool's summary into figures.
func measuredFromAggregate(a *measured.Aggregate) Measured {
	m := Measured{Latency: map[string]map[string]float64{}, RequestsPerS: a.RequestsPerS, OutputTokensPerS: a.OutputTokensPerS, Completed: a.Completed, Failed: a.Failed}
	for name, qs := range map[string]map[string]float64{"ttft_ms": a.TTFTMS, "tpot_ms": a.TPOTMS, "e2e_ms": a.E2EMS} {
		if len(qs) > 0 {
			m.Latency[name] = qs
		}
	}
	return m
}

// hasRequests reports whether a run has a completed per-request record.
func hasRequests(run *measured.Run) bool {
	for i := range run.Requests {
		if run.Requests[i].OK() {
			return true
		}
	}
	return false
}

// Parts splits the replay of run into simulations and their measured
// figures (see Part); stage >= 0 keeps that benchmark only. A benchmark
// with no completed request, or an aggregate with no latency figure, has
// no part; a run left with none is an error.
func Parts(run *measured.Run, cat *catalogs.Catalog, opt Options, stage int) ([]Part, error) {
	if stage >= 0 && run.Stage(stage) == nil {
		return nil, fmt.Errorf("%s: no benchmark %d", run.Name, stage)
	}
	if hasRequests(run) && !run.OwnServer() {
		res, err := Config(run, cat, opt)
		if err != nil {
			return nil, err
		}
		focus := run
		if stage >= 0 {
			focus = run.Stage(stage)
		}
		p := Part{Name: StageName(run, stage), Stage: stage, Filter: stage, Basis: BasisRequests, Resolved: res, Measured: measuredFromSummary(focus.Summarize()), Notes: append(ScenarioNotes(run), res.Warning...)}
		if p.Measured.Completed == 0 {
			return nil, fmt.Errorf("%s: no completed requests", p.Name)
		}
		return []Part{p}, nil
	}
	var idx []int
	switch {
	case stage >= 0:
		idx = []int{stage}
	case len(run.Stages) == 0 || run.Aggregate != nil && !hasRequests(run):
		idx = []int{-1}
	default:
		for _, s := range run.Stages {
			idx = append(idx, s.Index)
		}
	}
	var parts []Part
	var skipped []string
	for _, i := range idx {
		sub := run
		if i >= 0 {
			sub = run.Stage(i)
		}
		p := Part{Name: StageName(run, i), Stage: i, Filter: -1}
		if hasRequests(sub) {
			p.Basis, p.Measured = BasisRequests, measuredFromSummary(sub.Summarize())
		} else if sub.Aggregate != nil {
			p.Basis, p.Measured = BasisAggregate, measuredFromAggregate(sub.Aggregate)
		}
		if len(p.Measured.Latency) == 0 {
			skipped = append(skipped, p.Name)
			continue
		}
		res, err := Config(sub, cat, opt)
		if err != nil {
			return nil, err
		}
		p.Resolved = res
		if p.Basis == BasisAggregate {
			p.Notes = aggregateNotes(sub)
		}
		p.Notes = append(p.Notes, ScenarioNotes(sub)...)
		p.Notes = append(p.Notes, res.Warning...)
		parts = append(parts, p)
	}
	if len(parts) == 0 {
		return nil, fmt.Errorf("%s: no benchmark with completed requests or latency figures to compare (%d without)", run.Name, len(skipped))
	}
	return parts, nil
}

// StageName names a run (stage < 0) or one of its benchmarks.
func StageName(run *measured.Run, stage int) string {
	if stage < 0 {
		return run.Name
	}
	for _, s := range run.Stages {
		if s.Index != stage {
			continue
		}
		what := s.Strategy
		if s.Label != "" {
			what = fmt.Sprintf("%s, %s", what, s.Label)
		}
		if what != "" {
			return fmt.Sprintf("%s stage %d (%s)", run.Name, stage, what)
		}
	}
	return fmt.Sprintf("%s stage %d", run.Name, stage)
}

// MaxRebuiltRequests bounds the requests a rebuilt load simulates.
const MaxRebuiltRequests = 20000

// aggregateNotes says what rebuilding a benchmark's load from its summary
// assumes.
func aggregateNotes(run *measured.Run) []string {
	a := run.Aggregate
	n := rebuiltRequests(a)
	notes := []string{fmt.Sprintf("load rebuilt from the tool's summary: %d requests of %d input and %d output tokens (the means)",
		n, int(math.Round(a.MeanInputTokens)), int(math.Round(a.MeanOutputTokens)))}
	if total := a.Completed + a.Failed; total > MaxRebuiltRequests {
		notes = append(notes, fmt.Sprintf("%d of the benchmark's %d requests simulated", MaxRebuiltRequests, total))
	}
	return notes
}

// rebuiltRequests is how many requests a rebuilt load simulates: the
// benchmark's (completed and failed), 200 when unknown, at most
// MaxRebuiltRequests.
func rebuiltRequests(a *measured.Aggregate) int {
	n := a.Completed + a.Failed
	if n < 1 {
		n = 200
	}
	return min(n, MaxRebuiltRequests)
}
