// Package accuracy judges the simulator against measured runs: the bars
// its predictions must meet (the closed-loop table's overall and per
// (model, GPU) median errors, and each request-level run's worst quantile
// errors), the figures those bars apply to, and a ledger of the figures
// known to miss, with the worst each may get. Its tests replay measured
// runs and enforce the bars: the closed-loop table and the stepped
// inference-perf runs from byte copies in testdata/ (so that those bars
// hold on a clean checkout), the open-loop and request-level runs from
// the reference data (../shared/data/measured; skipped without it).
//
// Reading order: bars.go (bars and figures), ledger.go (known misses).
package accuracy
