package sim

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/headroom-sim/headroom/sim/stats"
)

// Report is the result of a run. Its JSON keys are a public contract
// (docs/scenario.md, "The report").
type Report struct {
	Model     string  `json:"model"`
	GPU       string  `json:"gpu"`
	TP        int     `json:"tp"`
	Replicas  int     `json:"replicas"`
	Seed      uint64  `json:"seed"`
	DurationS float64 `json:"duration_s"`

	Requests RequestCounts `json:"requests"`

	// TTFTMS, TPOTMS, ITLMS and E2EMS are the client's view, as benchmark
	// tools measure them: from the client's send to the tokens it receives
	// (network, the API server's request handling and the streaming of
	// every token included).
	TTFTMS stats.Summary `json:"ttft_ms"`
	// ServerTTFTMS is vLLM's own time_to_first_token: from the engine's
	// arrival stamp to the API server's handling of the output batch that
	// carries the first token (no network, parsing or tokenisation).
	ServerTTFTMS *stats.Summary `json:"server_ttft_ms,omitempty"`
	TPOTMS       stats.Summary  `json:"tpot_ms"`
	ITLMS        stats.Summary  `json:"itl_ms"`
	E2EMS        stats.Summary  `json:"e2e_ms"`
	QueueMS      stats.Summary  `json:"queue_ms"`
	PrefillMS    stats.Summary  `json:"prefill_ms"`
	DecodeMS     stats.Summary  `json:"decode_ms"`
	// Percentiles says how the summaries' quantiles were computed.
	Percentiles Percentiles `json:"percentiles"`
	// TTFTMSInterval and the four fields after it are the headline
	// figures' 80% and 95% error bands, in the figures' units, and how
	// they were judged (interval.go): set by the callers that apply an
	// error model (headroom simulate, POST /v1/simulate), nil in
	// sim.Run's own report.
	TTFTMSInterval     *SummaryInterval    `json:"ttft_ms_interval,omitempty"`
	TPOTMSInterval     *SummaryInterval    `json:"tpot_ms_interval,omitempty"`
	ITLMSInterval      *SummaryInterval    `json:"itl_ms_interval,omitempty"`
	E2EMSInterval      *SummaryInterval    `json:"e2e_ms_interval,omitempty"`
	ThroughputInterval *ThroughputInterval `json:"throughput_interval,omitempty"`
	Uncertainty        *Uncertainty        `json:"uncertainty,omitempty"`

	Throughput          Throughput `json:"throughput"`
	Preemptions         int64      `json:"preemptions"`
	PrefixCacheHitRatio float64    `json:"prefix_cache_hit_ratio"`
	KVCache             KVUsage    `json:"kv_cache"`
	Fluency             Fluency    `json:"fluency"`
	// MaxRunning is the most requests one replica ran at once.
	MaxRunning int `json:"max_running"`
	// CoStartedRatio is the share of completed requests whose first token
	// came out of the same engine step as another request's: the measure of
	// a closed loop's phase lock (near 1 when users arrive in cohorts that
	// are prefilled together; 0.02 to 0.26 in vLLM 0.23's open-loop traces
	// at 2 to 10 req/s, requests whose first chunks reach the client within
	// 1.5 ms of each other).
	CoStartedRatio float64 `json:"co_started_ratio"`
	// Speculative is speculative decoding's counts, when it is on.
	Speculative *SpeculativeReport `json:"speculative,omitempty"`

	GoodputRPS *float64   `json:"goodput_rps,omitempty"`
	SLA        *SLAResult `json:"sla,omitempty"`

	// Disaggregation is the prefill and decode pools of a disaggregated
	// run, its KV transfer and TTFT's parts.
	Disaggregation *DisaggReport `json:"disaggregation,omitempty"`
	// Autoscale is what the autoscaler did (runs with one).
	Autoscale *AutoscaleReport `json:"autoscale,omitempty"`

	Stages     []StageReport `json:"stages,omitempty"`
	Timeseries []TimePoint   `json:"timeseries,omitempty"`

	Simulation RunStats `json:"simulation"`
}

// Percentiles says how a report's quantiles were computed. A per-request
// summary (TTFT, TPOT, E2E, queue, prefill, decode, server TTFT, a stage's
// or the TTFT breakdown's) with a count of at most ExactUpTo is exact: the
// values' own quantiles, interpolated as numpy.percentile does. A larger
// one, and ITL (one value per token) always, come from an HDR-style
// histogram whose quantiles are within HistogramRelativeError of the exact
// ones; means, maxima and counts are exact in both.
type Percentiles struct {
	// PerRequest is the method of the run's per-request summaries: "exact"
	// or "histogram".
	PerRequest string `json:"per_request"`
	// ITL is the method of itl_ms: "histogram".
	ITL       string `json:"itl"`
	ExactUpTo int    `json:"exact_up_to"`
	// StagesExactUpTo is the exact values a run's stages keep together
	// (their TTFT, TPOT, E2E and queue samples) beyond the first 2,048 of
	// each; each stage says which method its summaries used.
	StagesExactUpTo int `json:"stages_exact_up_to,omitempty"`
	// HistogramRelativeError bounds a histogram quantile's error relative
	// to the exact quantile (0.001: 0.1%).
	HistogramRelativeError float64 `json:"histogram_relative_error"`
}

// RequestCounts accounts for every request of the run: Total is what the
// clients issued, and Total = Completed + Rejected + Unfinished.
type RequestCounts struct {
	Total     int `json:"total"`
	Completed int `json:"completed"`
	Rejected  int `json:"rejected"`
	// Unfinished counts requests still queued, running or held at the
	// client when nothing more could happen (an engine that can never
	// schedule them).
	Unfinished int `json:"unfinished"`
	// RejectedReasons counts rejections by reason.
	RejectedReasons map[string]int `json:"rejected_reasons,omitempty"`
}

// Throughput is measured from the first request sent to the last response
// received.
type Throughput struct {
	RequestsPerS     float64 `json:"requests_per_s"`
	InputTokensPerS  float64 `json:"input_tokens_per_s"`
	OutputTokensPerS float64 `json:"output_tokens_per_s"`
	TotalTokensPerS  float64 `json:"total_tokens_per_s"`
}

// KVUsage describes KV-cache occupancy (fraction of blocks referenced by
// requests), averaged over replicas.
type KVUsage struct {
	NumGPUBlocks   int     `json:"num_gpu_blocks"`
	PeakUsageRatio float64 `json:"peak_usage_ratio"`
	MeanUsageRatio float64 `json:"mean_usage_ratio"`
}

// Fluency describes streaming smoothness (the brief's 流畅度).
type Fluency struct {
	// ITLCV is the coefficient of variation of token-weighted ITL.
	ITLCV float64 `json:"itl_cv"`
	// Stalls counts inter-token gaps longer than StallThresholdMS.
	Stalls           int64   `json:"stalls"`
	LongestStallMS   float64 `json:"longest_stall_ms"`
	StallThresholdMS float64 `json:"stall_threshold_ms"`
}

// SLAResult is the verdict on each bound of the SLA.
type SLAResult struct {
	Met    bool       `json:"met"`
	Checks []SLACheck `json:"checks"`
}

// SLACheck is one bound: metric's quantile must not exceed limit. The
// quantile is over every measured request: one that never completed
// (rejected, or left unfinished) missed every bound, as a client that got
// no answer would count it; ValueMS is the completed requests' figure, as
// in the report's summaries, and Reason says when the others decide.
type SLACheck struct {
	Metric   string  `json:"metric"`
	Quantile string  `json:"quantile"`
	LimitMS  float64 `json:"limit_ms"`
	ValueMS  float64 `json:"value_ms"`
	Met      bool    `json:"met"`
	// Reason says why the bound is missed whatever ValueMS is: no request
	// completed, or those that never did put the quantile past the limit.
	Reason string `json:"reason,omitempty"`
}

// StageReport is the same metrics for the requests that arrived in one
// stage of a staged load. Throughput is what the engine produced inside
// the stage's time window.
type StageReport struct {
	Index       int           `json:"index"`
	StartS      float64       `json:"start_s"`
	DurationS   float64       `json:"duration_s"`
	RateRPS     float64       `json:"rate_rps,omitempty"`
	Concurrency int           `json:"concurrency,omitempty"`
	Requests    RequestCounts `json:"requests"`
	TTFTMS      stats.Summary `json:"ttft_ms"`
	TPOTMS      stats.Summary `json:"tpot_ms"`
	ITLMS       stats.Summary `json:"itl_ms"`
	E2EMS       stats.Summary `json:"e2e_ms"`
	QueueMS     stats.Summary `json:"queue_ms"`
	Throughput  Throughput    `json:"throughput"`
	Preemptions int64         `json:"preemptions"`
	Fluency     Fluency       `json:"fluency"`
	GoodputRPS  *float64      `json:"goodput_rps,omitempty"`
	SLA         *SLAResult    `json:"sla,omitempty"`
	// PerRequestPercentiles is the method of this stage's latency
	// summaries: "exact", or "histogram" once the run's stages together
	// are past percentiles.stages_exact_up_to values.
	PerRequestPercentiles string `json:"per_request_percentiles"`
}

// TimePoint is the engine state at the end of one simulated second, summed
// over replicas (KV usage averaged).
type TimePoint struct {
	TS               float64 `json:"t_s"`
	Running          int     `json:"running"`
	Waiting          int     `json:"waiting"`
	KVUsageRatio     float64 `json:"kv_usage_ratio"`
	OutputTokensPerS float64 `json:"output_tokens_per_s"`
	PromptTokensPerS float64 `json:"prompt_tokens_per_s"`
	PreemptionsTotal int64   `json:"preemptions_total"`
	CompletedTotal   int     `json:"completed_total"`
}

// RunStats describes the simulation itself.
type RunStats struct {
	Events int64 `json:"events"`
	Steps  int64 `json:"steps"`
	// SimulatedS is the simulated time covered.
	SimulatedS float64 `json:"simulated_s"`
}

func round(x float64, digits int) float64 {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return 0
	}
	p := math.Pow(10, float64(digits))
	return math.Round(x*p) / p
}

func roundSummary(s stats.Summary) stats.Summary {
	return stats.Summary{Mean: round(s.Mean, 4), P50: round(s.P50, 4), P90: round(s.P90, 4), P95: round(s.P95, 4),
		P99: round(s.P99, 4), P999: round(s.P999, 4), Max: round(s.Max, 4), Count: s.Count}
}

// summaries computes the latency summaries of a collector.
type summaries struct {
	ttft, serverTTFT, tpot, itl, e2e, queue, prefill, decode stats.Summary
}

func (c *collector) summarize() summaries {
	get := func(d *stats.Distribution) stats.Summary {
		if d == nil {
			return stats.Summary{} // not kept for a stage
		}
		return roundSummary(d.Summary())
	}
	return summaries{
		ttft: get(c.ttft), serverTTFT: get(c.serverTTFT), tpot: get(c.tpot), e2e: get(c.e2e),
		queue: get(c.queue), prefill: get(c.prefill), decode: get(c.decode),
		itl: roundSummary(c.itl.Summary()),
	}
}

func (c *collector) fluency(thresholdMS float64) Fluency {
	f := Fluency{Stalls: c.stalls, StallThresholdMS: thresholdMS, LongestStallMS: round(c.itl.MaxMS(), 4)}
	if m := c.itl.MeanMS(); m > 0 {
		f.ITLCV = round(c.itl.StdMS()/m, 4)
	}
	if f.LongestStallMS <= thresholdMS {
		f.LongestStallMS = 0
	}
	return f
}

// counts are the collector's requests; unfinished are those still in the
// system at the end.
func (c *collector) counts(unfinished int) RequestCounts {
	rc := RequestCounts{Total: c.issued, Completed: c.completed, Unfinished: unfinished}
	keys := make([]string, 0, len(c.rejected))
	for k := range c.rejected {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		rc.Rejected += c.rejected[k]
	}
	if rc.Rejected > 0 {
		rc.RejectedReasons = c.rejected
	}
	return rc
}

// evaluateSLA checks each bound of sla against the summaries of c, whose
// requests rc counts; goodput counts the requests that met every
// per-request bound (collector.good). With no completed request no bound
// is met; requests that never completed count as missing every bound
// (unservedQuantile).
func evaluateSLA(sla *SLA, s summaries, c *collector, rc RequestCounts) *SLAResult {
	res := &SLAResult{Met: true}
	unserved := int64(rc.Rejected + rc.Unfinished)
	bounds := []struct {
		name string
		qs   map[string]float64
		sum  stats.Summary
		n    int64
		at   func(q float64) float64
	}{
		{"ttft_ms", sla.TTFTMS, s.ttft, c.ttft.Count(), c.ttft.Quantile},
		{"tpot_ms", sla.TPOTMS, s.tpot, c.tpot.Count(), c.tpot.Quantile},
		{"itl_ms", sla.ITLMS, s.itl, c.itl.Count(), c.itl.QuantileMS},
		{"e2e_ms", sla.E2EMS, s.e2e, c.e2e.Count(), c.e2e.Quantile},
	}
	for _, b := range bounds {
		names := make([]string, 0, len(b.qs))
		for q := range b.qs {
			names = append(names, q)
		}
		slices.SortFunc(names, func(a, b string) int {
			return slices.Index(stats.QuantileNames, a) - slices.Index(stats.QuantileNames, b)
		})
		for _, q := range names {
			lim := b.qs[q]
			v, _ := b.sum.At(q)
			ck := SLACheck{Metric: b.name, Quantile: q, LimitMS: lim, ValueMS: v, Met: v <= lim}
			switch {
			case rc.Completed == 0:
				ck.Met, ck.Reason = false, noneCompleted(rc)
			case ck.Met && unserved > 0:
				if all, ok := unservedQuantile(q, b.n, unserved, b.at); !ok || round(all, 4) > lim {
					ck.Met = false
					ck.Reason = fmt.Sprintf("%d of %d requests never completed (%d rejected, %d unfinished) and count as missing the bound: %s",
						unserved, rc.Total, rc.Rejected, rc.Unfinished, unservedText(q, all, ok))
				}
			}
			res.Checks = append(res.Checks, ck)
			res.Met = res.Met && ck.Met
		}
	}
	return res
}

// unservedQuantile is the named quantile of a metric over its n values and
// u requests that never completed, each past every bound: the values'
// quantile at the same rank of the n + u (numpy's interpolation, as the
// summaries'), or ok false when that rank falls among the u (a mean or a
// max always does).
func unservedQuantile(name string, n, u int64, at func(q float64) float64) (v float64, ok bool) {
	f, ok := stats.Fraction(name)
	if !ok || n == 0 {
		return 0, false
	}
	pos := f * float64(n+u-1)
	switch {
	case pos > float64(n-1):
		return 0, false
	case n == 1:
		return at(0), true
	}
	return at(pos / float64(n-1)), true
}

func unservedText(q string, v float64, ok bool) string {
	if !ok {
		return "the " + q + " over all requests falls on one of them"
	}
	return fmt.Sprintf("the %s over all requests is %.4g ms", q, v)
}

// noneCompleted says why an SLA has nothing to hold when no request
// completed.
func noneCompleted(rc RequestCounts) string {
	if rc.Total == 0 {
		return "no request was sent: there is nothing the SLA holds"
	}
	why := ""
	if len(rc.RejectedReasons) > 0 {
		keys := make([]string, 0, len(rc.RejectedReasons))
		for k := range rc.RejectedReasons {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		why = " (" + strings.Join(keys, "; ") + ")"
	}
	return fmt.Sprintf("no request completed: %d sent, %d rejected%s, %d unfinished", rc.Total, rc.Rejected, why, rc.Unfinished)
}
