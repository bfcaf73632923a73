package measured

import (
	"math"

	"github.com/headroom-sim/headroom/sim/stats"
)

// Description is what was read from a run, for a user to check an import
// before validating or calibrating on it (`headroom inspect`). Latency
// figures use the simulation report's keys: milliseconds, "mean", "p50",
// "p90", "p95", "p99", "p999", "max" and "count" when computed from
// per-request records; whatever statistics the tool wrote ("p25", "std",
// "min" …) when taken from its summary.
type Description struct {
	Name           string   `json:"name"`
	Format         string   `json:"format"`
	Model          string   `json:"model"`
	ModelNote      string   `json:"model_note,omitempty"`
	GPU            string   `json:"gpu"`
	GPUNote        string   `json:"gpu_note,omitempty"`
	TP             int      `json:"tp"`
	DP             int      `json:"dp"`
	ExpertParallel bool     `json:"expert_parallel,omitempty"`
	EngineVersion  string   `json:"engine_version,omitempty"`
	Engine         Engine   `json:"engine"`
	LoggedBlocks   int      `json:"logged_blocks,omitempty"`
	ServerSide     bool     `json:"server_side"`
	PrefixGroups   int      `json:"prefix_groups,omitempty"`
	PrefixTokens   int      `json:"prefix_tokens,omitempty"`
	Notes          []string `json:"notes,omitempty"`
	// Ignored is what the reader did not use (Run.Ignored).
	Ignored []string `json:"ignored,omitempty"`
	Figures
	// Stages describe each benchmark of a file that holds several.
	Stages []StageDescription `json:"stages,omitempty"`
}

// Figures are a benchmark's (or a run's) measured figures.
type Figures struct {
	// Basis is "requests" (computed from per-request records) or
	// "aggregate" (the tool's own summary); "" when there are none.
	Basis    string             `json:"basis"`
	Requests DescribedCounts    `json:"requests"`
	TTFTMS   map[string]float64 `json:"ttft_ms,omitempty"`
	TPOTMS   map[string]float64 `json:"tpot_ms,omitempty"`
	ITLMS    map[string]float64 `json:"itl_ms,omitempty"`
	E2EMS    map[string]float64 `json:"e2e_ms,omitempty"`
	// Throughput is requests and output tokens per second (0: unknown).
	Throughput       DescribedThroughput `json:"throughput"`
	MeanInputTokens  float64             `json:"mean_input_tokens,omitempty"`
	MeanOutputTokens float64             `json:"mean_output_tokens,omitempty"`
	// Sent is the tool's account of the sends (Aggregate.Sent).
	Sent *SentLoad `json:"sent,omitempty"`
}

// DescribedCounts accounts for a benchmark's requests (total = completed
// + failed).
type DescribedCounts struct {
	Total     int `json:"total"`
	Completed int `json:"completed"`
	Failed    int `json:"failed"`
}

// DescribedThroughput is what a benchmark sustained.
type DescribedThroughput struct {
	RequestsPerS     float64 `json:"requests_per_s"`
	OutputTokensPerS float64 `json:"output_tokens_per_s"`
}

// StageDescription is one benchmark of a file.
type StageDescription struct {
	StageInfo
	Figures
}

// Describe summarises what a run holds, as a whole and per benchmark.
func Describe(run *Run) Description {
	d := Description{Name: run.Name, Format: run.Format, Model: run.Model, ModelNote: run.ModelNote, GPU: run.GPU, GPUNote: run.GPUNote, TP: run.TP, DP: run.DP,
		ExpertParallel: run.ExpertParallel, EngineVersion: run.EngineVersion, Engine: run.Engine, LoggedBlocks: run.LoggedBlocks,
		ServerSide: run.ServerSide, PrefixGroups: run.PrefixGroups, PrefixTokens: run.PrefixTokens, Notes: run.Engine.Extra, Ignored: run.Ignored}
	d.Engine.Extra = nil
	d.Figures = figuresOf(run)
	if len(run.Stages) > 1 || (len(run.Stages) == 1 && (run.Stages[0].Engine != nil || run.Stages[0].Label != "")) {
		for _, s := range run.Stages {
			sub := run.Stage(s.Index)
			info := s
			info.Aggregate = nil
			d.Stages = append(d.Stages, StageDescription{StageInfo: info, Figures: figuresOf(sub)})
		}
		if len(run.Requests) == 0 {
			// A file of summaries: its figures are its benchmarks'.
			d.Figures = Figures{Basis: BasisOf(run)}
			for _, s := range d.Stages {
				d.Requests.Completed += s.Requests.Completed
				d.Requests.Failed += s.Requests.Failed
			}
			d.Requests.Total = d.Requests.Completed + d.Requests.Failed
		}
	}
	return d
}

// BasisOf is "requests" when a run has per-request records, "aggregate"
// when only the tools' summaries, "" when neither.
func BasisOf(run *Run) string {
	switch {
	case len(run.Requests) > 0:
		return "requests"
	case run.Aggregate != nil || len(run.Stages) > 0:
		return "aggregate"
	}
	return ""
}

// figuresOf is a run's figures: from its requests, else its aggregate.
func figuresOf(run *Run) Figures {
	if len(run.Requests) > 0 {
		s := run.Summarize()
		f := Figures{Basis: "requests", Requests: DescribedCounts{Total: len(run.Requests), Completed: s.Completed, Failed: s.Failed},
			Throughput: DescribedThroughput{s.RequestsPerS, s.OutputTokensPerS}}
		if s.Completed > 0 {
			f.TTFTMS, f.TPOTMS, f.E2EMS = summaryMap(s.TTFTMS), summaryMap(s.TPOTMS), summaryMap(s.E2EMS)
			f.ITLMS = summaryMap(stats.Summarize(chunkGapsMS(run)))
		}
		var in, out float64
		for i := range run.Requests {
			if q := &run.Requests[i]; q.OK() {
				in += float64(q.InputTokens)
				out += float64(q.OutputTokens)
			}
		}
		if s.Completed > 0 {
			f.MeanInputTokens, f.MeanOutputTokens = in/float64(s.Completed), out/float64(s.Completed)
		}
		return f
	}
	a := run.Aggregate
	if a == nil {
		return Figures{}
	}
	return Figures{Basis: "aggregate", Requests: DescribedCounts{Total: a.Completed + a.Failed, Completed: a.Completed, Failed: a.Failed},
		TTFTMS: a.TTFTMS, TPOTMS: a.TPOTMS, ITLMS: a.ITLMS, E2EMS: a.E2EMS,
		Throughput:      DescribedThroughput{a.RequestsPerS, a.OutputTokensPerS},
		MeanInputTokens: a.MeanInputTokens, MeanOutputTokens: a.MeanOutputTokens, Sent: a.Sent}
}

// chunkGapsMS are the gaps between the streamed chunks of the completed
// requests (first chunk at TTFT), in milliseconds.
func chunkGapsMS(run *Run) []float64 {
	var out []float64
	for i := range run.Requests {
		q := &run.Requests[i]
		if !q.OK() {
			continue
		}
		prev := q.TTFTS
		for _, c := range q.ChunkTimesS {
			out = append(out, (c-prev)*1e3)
			prev = c
		}
	}
	return out
}

// summaryMap is a summary under the report's keys (nil when empty).
func summaryMap(s stats.Summary) map[string]float64 {
	if s.Count == 0 {
		return nil
	}
	m := map[string]float64{"count": float64(s.Count)}
	for _, k := range stats.QuantileNames {
		if v, ok := s.At(k); ok && !math.IsNaN(v) {
			m[k] = v
		}
	}
	return m
}
