// Package accuracy judges the simulator against measured runs: the bars
// its predictions must meet (the closed-loop table's overall and per
// (model, GPU) median errors, and each request-level run's worst quantile
// errors), the figures those bars apply to, and a ledger of the figures
// known to miss, with the worst each may get. Its test replays the
// reference data's runs (../shared/data/measured) and enforces the bars.
//
// Reading order: bars.go (bars and figures), ledger.go (known misses).
package accuracy
