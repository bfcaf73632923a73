// Package stats holds the summary statistics Headroom reports: exact
// quantiles of a sample (linear interpolation, as numpy.percentile and the
// benchmark tools compute them) and a log-bucketed histogram for
// distributions too large to keep (token-weighted inter-token latencies),
// accurate to 0.1%.
//
// Reading order: quantiles.go, histogram.go, distribution.go (exact up to
// ExactLimit values, a histogram beyond), durations.go (integer
// nanosecond durations reported in milliseconds).
package stats
