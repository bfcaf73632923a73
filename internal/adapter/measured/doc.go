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
// a blis observe trace, inference-perf results or run folder, llmperf,
// vllm bench sweep); ReadSilicon reads a table of closed-loop runs;
// Describe summarises a run for `headroom inspect`. No reader drops a
// number silently: what it does not use is in Run.Ignored, and a known
// metric it cannot use is said in a note.
//
// Reading order: run.go (the types and their summary), aggregate.go
// (summaries and stages), import.go and detect.go (formats), dir.go (run
// folders), parse.go (the shared field parsers), modelid.go (model ids as
// tools record them), serveparams.go (engine settings from serve command
// lines), inspect.go (Describe), then one file per format: vllmbench.go
// and benchmetadata.go (vLLM bench --metadata), sglangbench.go,
// genaiperf.go, aiperf.go and aiperfsummary.go, guidellm.go and
// guidellmcsv.go, inferenceperf.go and inferenceperfreport.go, with
// manifests.go (the Kubernetes manifests beside inference-perf results),
// inferencesim.go and blistrace.go (a blis observe trace), llmservingsim.go
// and llmservingsimjsonl.go, llmperf.go and llmperfresponses.go, silicon.go
// (AIConfigurator's closed-loop table), csv.go (Headroom's plain CSV).
package measured
