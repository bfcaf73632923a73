// Package measured holds real benchmark runs in one form: per request, the
// send time, the token counts, the measured TTFT and end-to-end latency
// (and streamed chunk times where the tool records them), or, where a tool
// writes only its summary, each benchmark's aggregate; plus what is known
// of the engine that served them (model, GPU, tensor parallelism, engine
// settings, vLLM version, the KV block count it logged).
//
// Loaders read from an fs.FS or io.Reader; the caller opens files. Import
// reads one result file of any benchmark tool's format (detected or
// named); LoadDir reads a run folder (LLMServingSim, inference-sim,
// inference-perf results, llmperf, vllm bench sweep); Describe summarises
// a run for `headroom inspect`.
//
// Reading order: run.go (the types and their summary), aggregate.go
// (summaries and stages), import.go and detect.go (formats), dir.go (run
// folders), parse.go (the shared field parsers), modelid.go (model ids as
// tools record them), serveparams.go (engine settings from serve command
// lines), inspect.go (Describe), then one file per format: vllmbench.go,
// sglangbench.go, genaiperf.go, aiperf.go and aiperfsummary.go,
// guidellm.go and guidellmcsv.go, inferenceperf.go and
// inferenceperfreport.go, inferencesim.go, llmservingsim.go and
// llmservingsimjsonl.go, llmperf.go and llmperfresponses.go, silicon.go
// (AIConfigurator's closed-loop table), csv.go (Headroom's plain CSV).
package measured
