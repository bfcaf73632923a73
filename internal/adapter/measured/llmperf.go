package measured

import (
	"encoding/json"
	"regexp"
	"strings"
)

// llmperf (ray-project/llmperf) token_benchmark_ray.py writes
// <model>_<in>_<out>_summary.json: the run's settings (model,
// mean_input_tokens, mean_output_tokens — requested, not measured —,
// num_concurrent_requests) and flattened results,
// results_<metric>_{mean,min,max,stddev} and
// results_<metric>_quantiles_p<NN> for metrics ttft_s,
// end_to_end_latency_s, inter_token_latency_s, number_input_tokens,
// number_output_tokens …, plus results_mean_output_throughput_token_per_s,
// results_num_completed_requests and results_num_completed_requests_per_min.
// Aggregate only. Its inter_token_latency_s is per request the sum of the
// gaps between chunks (TTFT included) over the output tokens, neither TPOT
// nor a chunk gap, so it is left out (a note says so).

func sniffLLMPerf(s *shape) bool {
	return s.kind == kindJSONObject && s.topPrefix("results_ttft_s", "results_end_to_end_latency_s", "results_num_completed_requests")
}

var reLLMPerfStat = regexp.MustCompile(`^results_(ttft_s|end_to_end_latency_s|number_input_tokens|number_output_tokens)_(?:quantiles_)?(mean|min|max|stddev|p[0-9]+(?:\.[0-9]+)?)$`)

// llmperfSummaryUsed are the summary's scalar keys the reader uses.
var llmperfSummaryUsed = keys("results_mean_output_throughput_token_per_s", "results_num_completed_requests", "results_number_errors",
	"results_num_completed_requests_per_min", "num_concurrent_requests", "mean_input_tokens", "mean_output_tokens", "model")

func parseLLMPerfSummary(p *parser) (*Run, error) {
	var top map[string]json.RawMessage
	if err := p.unmarshal(0, "", pyJSON(trimBOM(p.data)), &top); err != nil {
		return nil, err
	}
	a := &Aggregate{}
	run := &Run{Aggregate: a}
	numAt := func(k string) (float64, error) {
		raw, ok := top[k]
		if !ok {
			return 0, nil
		}
		var v num
		if err := p.unmarshal(0, k, raw, &v); err != nil {
			return 0, err
		}
		return v.finite(), nil
	}
	var meanIn, meanOut, measuredIn, measuredOut float64
	for k := range top {
		m := reLLMPerfStat.FindStringSubmatch(k)
		if m == nil {
			continue
		}
		v, err := numAt(k)
		if err != nil {
			return nil, err
		}
		stat, ok := statKey(m[2])
		if !ok {
			continue
		}
		switch m[1] {
		case "ttft_s":
			setStat(&a.TTFTMS, stat, v, 1e3)
		case "end_to_end_latency_s":
			setStat(&a.E2EMS, stat, v, 1e3)
		case "number_input_tokens":
			if stat == "mean" {
				measuredIn = positive(v)
			}
		case "number_output_tokens":
			if stat == "mean" {
				measuredOut = positive(v)
			}
		}
	}
	for _, f := range []struct {
		key string
		set func(float64)
	}{
		{"results_mean_output_throughput_token_per_s", func(v float64) { a.OutputTokensPerS = positive(v) }},
		{"results_num_completed_requests", func(v float64) { a.Completed = count(v) }},
		{"results_number_errors", func(v float64) { a.Failed = count(v) }},
		{"results_num_completed_requests_per_min", func(v float64) { a.RequestsPerS = positive(v / 60) }},
		{"num_concurrent_requests", func(v float64) { a.Concurrency = count(v) }},
		{"mean_input_tokens", func(v float64) { meanIn = positive(v) }},
		{"mean_output_tokens", func(v float64) { meanOut = positive(v) }},
	} {
		v, err := numAt(f.key)
		if err != nil {
			return nil, err
		}
		f.set(v)
	}
	a.MeanInputTokens, a.MeanOutputTokens = firstPositive(measuredIn, meanIn), firstPositive(measuredOut, meanOut)
	if raw, ok := top["model"]; ok {
		if err := p.unmarshal(0, "model", raw, &run.Model); err != nil {
			return nil, err
		}
	}
	if a.empty() {
		return nil, p.errf(0, "", "no results_* metrics")
	}
	itl := false
	for k := range top {
		if strings.HasPrefix(k, "results_inter_token_latency_s") {
			itl = true
		}
		if !llmperfSummaryUsed(k) && !reLLMPerfStat.MatchString(k) {
			run.ignore("", k)
		}
	}
	if itl {
		run.note("llmperf inter_token_latency_s (chunk gaps with TTFT over output tokens) is not TPOT: left out")
	}
	return run, nil
}

func firstPositive(vs ...float64) float64 {
	for _, v := range vs {
		if v > 0 {
			return v
		}
	}
	return 0
}
