// Package replay re-runs a measured benchmark run through the simulator —
// its exact arrivals, token counts, prefix identities and engine settings —
// and compares the predicted latency distributions and throughput with the
// measured ones.
//
// Reading order: replay.go, compare.go.
package replay
