// Package measured holds real benchmark runs in one form: per request, the
// send time, the token counts, the measured TTFT and end-to-end latency
// (and streamed chunk times where the tool records them), plus what is
// known of the engine that served them (model, GPU, tensor parallelism,
// engine settings, vLLM version, the KV block count it logged).
//
// Loaders read from an fs.FS or io.Reader; the caller opens files. They
// cover the run directories of the reference data (LLMServingSim bench
// examples, inference-sim ground truth) and the benchmark tools' result
// formats.
//
// Reading order: run.go (the types and their summary), llmservingsim.go,
// inferencesim.go.
package measured
