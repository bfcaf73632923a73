// Package adapter groups the translators between Headroom and the outside
// world's formats: measured (benchmark tools' result files into one measured
// run), plot (SVG charts) and promexport (OpenMetrics under vLLM's metric
// names). They read and write through io.Reader, io.Writer and fs.FS.
package adapter
