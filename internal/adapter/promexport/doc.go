// Package promexport writes a simulated run as the metrics a vLLM server
// would have exported while serving it: OpenMetrics text under vLLM's own
// metric names and labels (vllm:num_requests_running,
// vllm:time_to_first_token_seconds_bucket{le=...}, …), one sample per
// simulated second with a timestamp, ended by "# EOF". Loaded into
// Prometheus with `promtool tsdb create-blocks-from openmetrics`, it lets
// the dashboards people already run against vLLM (and the one in
// docs/grafana/vllm-simulated.json) show a simulated run; docs/prometheus.md
// walks through it.
//
// It is pure: Write takes the report, a Collector and options, and writes
// to an io.Writer. Gauges and counters come from the report's time series
// (report.timeseries: true); histograms come from a Collector fed by the
// simulator's request and token sinks, each observation counted in the
// simulated second it happened (first token for TTFT, each token for
// inter-token latency, completion for the rest), cumulated per second as
// Prometheus would have scraped them. Timestamps are offsets from a start
// time the caller gives (default DefaultStart), so the same run gives the
// same bytes.
//
// Reading order: metrics.go (the exported families, their names, help and
// buckets as vLLM defines them), collector.go, write.go.
package promexport
