package measured

// SGLang's bench_serving (python -m sglang.bench_serving --output-file)
// appends one JSON object per run to a JSON Lines file: the arguments
// (backend, dataset_name, request_rate — Infinity when unlimited —,
// max_concurrency, sharegpt_output_len, random_input_len …), the totals
// (duration, completed, total_input_tokens, total_output_tokens,
// total_output_tokens_retokenized, request_throughput, output_throughput;
// concurrency is the measured mean number in flight, not the applied
// load), the statistics ({mean,median,std,p<percent>,max}_<m>_ms for m in
// ttft, tpot, itl, e2e_latency) and, with --output-details, the same
// per-request lists as vLLM's (input_lens, output_lens, ttfts, itls —
// chunk gaps in seconds —, generated_texts, errors). No send times: they
// are reconstructed as for vLLM (see parseBenchResults). Each line is a
// stage.

var sglangDialect = benchDialect{metrics: map[string]func(*Aggregate) *map[string]float64{
	"ttft":        vllmDialect.metrics["ttft"],
	"tpot":        vllmDialect.metrics["tpot"],
	"itl":         vllmDialect.metrics["itl"],
	"e2e_latency": vllmDialect.metrics["e2el"],
}}

func sniffSGLang(s *shape) bool {
	return s.objects() && sniffSGLangKeys(s)
}

func sniffSGLangKeys(s *shape) bool {
	return s.anyTop("mean_e2e_latency_ms", "total_output_tokens_retokenized", "sharegpt_output_len")
}

func parseSGLangBench(p *parser) (*Run, error) { return parseBenchResults(p, sglangDialect) }
