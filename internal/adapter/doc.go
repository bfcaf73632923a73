// Package adapter groups the translators between Headroom and the outside
// world's formats: measured (benchmark tools' result files and run folders
// into one measured run), kerneldb (measured kernel latencies laid out as
// AIConfigurator's perf database into a steptime.KernelDB, and the provider
// that caches them per GPU), plot (SVG charts) and promexport (OpenMetrics
// under vLLM's metric names). They read and write through io.Reader,
// io.Writer and fs.FS.
package adapter
