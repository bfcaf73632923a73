package measured

import (
	"math"
	"strconv"
	"strings"
)

// Aggregate is a benchmark's summary as the tool wrote it: the target for
// quantiles when a file has no per-request data, and a cross-check when it
// has. Distributions are in milliseconds, keyed "mean", "min", "max", "std"
// and "p<percent>" with the decimal point dropped ("p50", "p90", "p99",
// "p999" = 99.9th, "p1" = 1st, "p01" = 0.1th); a map holds whatever the
// file has. Zero scalars are not stated.
//
// The definitions are vLLM's, whatever the tool calls them: TTFT is send to
// first token; TPOT is (e2e − ttft) / (output tokens − 1) per request (what
// AIPerf, GenAI-Perf and guidellm call inter-token latency); ITL is the gap
// between streamed chunks (vLLM's and SGLang's itl, AIPerf's
// inter_chunk_latency); E2E is send to last token.
type Aggregate struct {
	TTFTMS map[string]float64 `json:"ttft_ms,omitempty"`
	TPOTMS map[string]float64 `json:"tpot_ms,omitempty"`
	ITLMS  map[string]float64 `json:"itl_ms,omitempty"`
	E2EMS  map[string]float64 `json:"e2e_ms,omitempty"`

	RequestsPerS     float64 `json:"requests_per_s,omitempty"`
	OutputTokensPerS float64 `json:"output_tokens_per_s,omitempty"`
	Completed        int     `json:"completed,omitempty"`
	Failed           int     `json:"failed,omitempty"`

	// RateRPS and Concurrency are the load the tool applied, when stated
	// (0: not stated or unlimited): arrivals at RateRPS with at most
	// Concurrency requests in flight, or, without a rate, Concurrency
	// clients each sending a request when its last one finished.
	RateRPS     float64 `json:"rate_rps,omitempty"`
	Concurrency int     `json:"concurrency,omitempty"`

	MeanInputTokens  float64 `json:"mean_input_tokens,omitempty"`
	MeanOutputTokens float64 `json:"mean_output_tokens,omitempty"`

	// Sent is what a load generator that schedules its sends reports of
	// them (inference-perf's load_summary), when the file has it.
	Sent *SentLoad `json:"sent,omitempty"`
}

// SentLoad is how a load generator with a send schedule reports a
// benchmark's sends (inference-perf's load_summary; see
// inferenceperfreport.go for how its numbers relate): the rate asked for,
// the requests scheduled, the time from the first send to the last, the
// rate that achieved (scheduled / send duration) and how late each
// request was sent against its schedule (a cap on requests in flight holds
// sends back).
type SentLoad struct {
	RequestedRPS    float64            `json:"requested_rps,omitempty"`
	Scheduled       int                `json:"scheduled,omitempty"`
	SendDurationS   float64            `json:"send_duration_s,omitempty"`
	AchievedRPS     float64            `json:"achieved_rps,omitempty"`
	ScheduleDelayMS map[string]float64 `json:"schedule_delay_ms,omitempty"`
}

// StageInfo is one benchmark of a file: its index (Request.Stage), the
// tool's name for its load strategy ("synchronous", "throughput",
// "constant", "poisson", "concurrent", "concurrency", "request_rate" …) and
// the rate or concurrency it applied (0: not stated or unlimited).
type StageInfo struct {
	Index       int     `json:"index"`
	Strategy    string  `json:"strategy,omitempty"`
	RateRPS     float64 `json:"rate_rps,omitempty"`
	Concurrency int     `json:"concurrency,omitempty"`
	// DurationS is how long the tool was to send at this load (0: not
	// stated).
	DurationS float64 `json:"duration_s,omitempty"`
	// Label names what sets the benchmark apart when the file says more
	// than its load (a sweep run's serve parameters and run number).
	Label string `json:"label,omitempty"`
	// Engine, TP and DP are the server settings of this benchmark when
	// they differ between the file's benchmarks (a `vllm bench sweep
	// serve` over max_num_seqs); Run.Stage applies them.
	Engine *Engine `json:"engine,omitempty"`
	TP     int     `json:"tp,omitempty"`
	DP     int     `json:"dp,omitempty"`
	// Aggregate is the tool's summary of this benchmark, for files that
	// hold several.
	Aggregate *Aggregate `json:"aggregate,omitempty"`
}

// OwnServer reports whether any benchmark of the run carries its own
// server settings (each was served by a different engine configuration).
func (r *Run) OwnServer() bool {
	for _, s := range r.Stages {
		if s.Engine != nil || s.TP > 0 || s.DP > 0 {
			return true
		}
	}
	return false
}

// Stage returns the part of a run that is benchmark i (Request.Stage == i)
// with send times from its own first request, its StageInfo and aggregate,
// and the benchmark's own server settings applied; nil when no stage has
// that index.
func (r *Run) Stage(i int) *Run {
	out := *r
	out.Requests, out.Stages, out.Aggregate = nil, nil, nil
	out.Engine.Extra = append([]string(nil), r.Engine.Extra...)
	found := false
	for _, s := range r.Stages {
		if s.Index == i {
			s.Aggregate, out.Aggregate = nil, s.Aggregate
			out.Engine.merge(s.Engine)
			if s.TP > 0 {
				out.TP = s.TP
			}
			if s.DP > 0 {
				out.DP = s.DP
			}
			s.Engine, s.TP, s.DP = nil, 0, 0
			out.Stages = []StageInfo{s}
			found = true
		}
	}
	if len(r.Stages) == 0 && i == 0 {
		out.Aggregate, found = r.Aggregate, true
	}
	if found && out.Aggregate == nil && len(r.Stages) == 1 {
		out.Aggregate = r.Aggregate // a single benchmark keeps its summary on the run
	}
	for _, q := range r.Requests {
		if q.Stage == i {
			out.Requests = append(out.Requests, q)
			found = true
		}
	}
	if !found {
		return nil
	}
	out.normalise()
	return &out
}

// percentKey is the Aggregate key of a percentile: "p" and the percent
// without its decimal point (50 → "p50", 99.9 → "p999", 0.1 → "p01").
func percentKey(pct float64) string {
	return "p" + strings.ReplaceAll(strconv.FormatFloat(pct, 'f', -1, 64), ".", "")
}

// statKey normalises a tool's statistic name: "avg"/"mean" → "mean",
// "median" → "p50", "stddev"/"std_dev" → "std", "p99.9" → "p999"; ok is
// false for names that are not statistics.
func statKey(name string) (string, bool) {
	switch n := strings.ToLower(name); n {
	case "mean", "avg", "average":
		return "mean", true
	case "median":
		return "p50", true
	case "std", "stddev", "std_dev", "stdev":
		return "std", true
	case "min", "max":
		return n, true
	default:
		if len(n) < 2 || n[0] != 'p' {
			return "", false
		}
		v, err := strconv.ParseFloat(n[1:], 64)
		if err != nil || !(v >= 0 && v <= 100) {
			return "", false
		}
		return percentKey(v), true
	}
}

// setStat stores v (scaled) in *m under key, creating the map; NaN and
// infinite values are dropped.
func setStat(m *map[string]float64, key string, v, scale float64) {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return
	}
	if *m == nil {
		*m = map[string]float64{}
	}
	(*m)[key] = v * scale
}

// empty reports whether the aggregate holds nothing.
func (a *Aggregate) empty() bool {
	return a == nil || (len(a.TTFTMS) == 0 && len(a.TPOTMS) == 0 && len(a.ITLMS) == 0 && len(a.E2EMS) == 0 &&
		a.RequestsPerS == 0 && a.OutputTokensPerS == 0 && a.Completed == 0 && a.Failed == 0)
}

// positive is v when finite and > 0, else 0.
func positive(v float64) float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) || v <= 0 {
		return 0
	}
	return v
}

// count is v as a non-negative whole count (0 when not one).
func count(v float64) int {
	if v = positive(v); v == 0 || v > maxTokens*1024 {
		return 0
	}
	return int(math.Round(v))
}
