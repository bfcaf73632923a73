// Package plan answers the planner's questions on top of the simulator:
// the highest load a configuration sustains within an SLA (MaxLoad), grids
// of what-if runs over any scenario field (Sweep), the cheapest clusters
// that meet an SLA with their cost, Pareto front and headroom (Plan), a
// throughput–latency staircase with its knee (Curve), and a fair A/B
// comparison (Compare); Plan weighs disaggregated prefill/decode
// clusters against aggregated ones.
//
// Every run goes through a Runner, which resolves scenarios against a
// catalog and runs simulations in parallel on all cores; searches reuse
// the scenario's seed for every probe, so results are reproducible and
// monotone in the load.
//
// Reading order: runner.go, metrics.go, search.go, sweep.go, plan.go,
// disagg.go (disaggregated prefill/decode candidates in the plan's
// ranking), curve.go, compare.go.
package plan
