// Package replay re-runs a measured benchmark run through the simulator —
// its exact arrivals, token counts, prefix identities and engine settings,
// or, for a benchmark known only by the tool's summary, the load that
// summary states — and compares the predicted latency distributions and
// throughput with the measured ones. Parts splits a run into the
// simulations validation and calibration share.
//
// Closed-loop runs known only by their mean TTFT and TPOT (a table of
// them, one run per row) are replayed in parallel by ReplayMeans and
// summarised overall, per (model, GPU) and per layout (GroupMeans).
//
// Reading order: replay.go, parts.go, names.go (recorded model ids),
// compare.go, accuracy.go (closed-loop means), meangroups.go.
package replay
