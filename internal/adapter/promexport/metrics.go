package promexport

// Bucket boundaries (seconds, or tokens) as vLLM's
// vllm/v1/metrics/loggers.py defines them.
var (
	// TTFTBuckets are vllm:time_to_first_token_seconds' bounds.
	TTFTBuckets = []float64{0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0,
		2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0}
	// ITLBuckets are the bounds of vllm:inter_token_latency_seconds and of
	// the time-per-output-token histograms.
	ITLBuckets = []float64{0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0,
		2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0}
	// RequestLatencyBuckets are the bounds of vllm:e2e_request_latency_seconds
	// and of the request phase histograms (queue, prefill, decode).
	RequestLatencyBuckets = []float64{0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0,
		30.0, 40.0, 50.0, 60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0}
)

// tokenBuckets is vLLM's build_1_2_5_buckets up to 10^8; Write cuts it at
// the model length (Options.MaxModelLen) or the longest request seen.
var tokenBuckets = func() []float64 {
	var out []float64
	for m := 1.0; m <= 1e8; m *= 10 {
		out = append(out, m, 2*m, 5*m)
	}
	return out
}()

// Metric types.
const (
	typeGauge     = "gauge"
	typeCounter   = "counter"
	typeHistogram = "histogram"
)

// family is one exported metric family.
type family struct {
	name, typ, help, unit string
}

// Gauges and counters, from the report's time series.
var (
	famRunning     = family{"vllm:num_requests_running", typeGauge, "Number of requests in model execution batches.", ""}
	famWaiting     = family{"vllm:num_requests_waiting", typeGauge, "Number of requests waiting to be processed.", ""}
	famKVUsage     = family{"vllm:kv_cache_usage_perc", typeGauge, "KV-cache usage. 1 means 100 percent usage.", ""}
	famGPUKVUsage  = family{"vllm:gpu_cache_usage_perc", typeGauge, "GPU KV-cache usage. 1 means 100 percent usage. DEPRECATED: Use vllm:kv_cache_usage_perc instead.", ""}
	famPreemptions = family{"vllm:num_preemptions", typeCounter, "Cumulative number of preemption from the engine.", ""}
	famPrompt      = family{"vllm:prompt_tokens", typeCounter, "Number of prefill tokens processed.", ""}
	famGeneration  = family{"vllm:generation_tokens", typeCounter, "Number of generation tokens processed.", ""}
	famSuccess     = family{"vllm:request_success", typeCounter, "Count of successfully processed requests.", ""}
)

// Histograms, from a Collector; the index is the collector's slot.
const (
	hTTFT = iota
	hITL
	hTPOT
	hRequestTPOT
	hE2E
	hDecode
	hPromptTokens
	hGenerationTokens
	numHists
)

var histFamilies = [numHists]struct {
	family
	buckets []float64
}{
	hTTFT:             {family{"vllm:time_to_first_token_seconds", typeHistogram, "Histogram of time to first token in seconds.", "seconds"}, TTFTBuckets},
	hITL:              {family{"vllm:inter_token_latency_seconds", typeHistogram, "Histogram of inter-token latency in seconds.", "seconds"}, ITLBuckets},
	hTPOT:             {family{"vllm:time_per_output_token_seconds", typeHistogram, "Histogram of time per output token in seconds. DEPRECATED: Use vllm:inter_token_latency_seconds instead.", "seconds"}, ITLBuckets},
	hRequestTPOT:      {family{"vllm:request_time_per_output_token_seconds", typeHistogram, "Histogram of time_per_output_token_seconds per request.", "seconds"}, ITLBuckets},
	hE2E:              {family{"vllm:e2e_request_latency_seconds", typeHistogram, "Histogram of e2e request latency in seconds.", "seconds"}, RequestLatencyBuckets},
	hDecode:           {family{"vllm:request_decode_time_seconds", typeHistogram, "Histogram of time spent in DECODE phase for request.", "seconds"}, RequestLatencyBuckets},
	hPromptTokens:     {family{"vllm:request_prompt_tokens", typeHistogram, "Number of prefill tokens processed.", ""}, tokenBuckets},
	hGenerationTokens: {family{"vllm:request_generation_tokens", typeHistogram, "Number of generation tokens processed.", ""}, tokenBuckets},
}

// FinishedReason is the finished_reason label of vllm:request_success_total:
// a simulated request stops at its drawn output length, as a benchmark
// run with ignore_eos does.
const FinishedReason = "length"

// Names lists the metric family names Write exports, in output order.
func Names() []string {
	out := []string{famRunning.name, famWaiting.name, famKVUsage.name, famGPUKVUsage.name,
		famPreemptions.name, famPrompt.name, famGeneration.name, famSuccess.name}
	for _, h := range histFamilies {
		out = append(out, h.name)
	}
	return out
}
