// Package plan answers the planner's questions on top of the simulator:
// the highest load a configuration sustains within an SLA (MaxLoad), grids
// of what-if runs over any scenario field (Sweep), how many of which GPU
// serve a workload within an SLA with the required headroom (Plan: the
// recommendation, runners-up and why they lost, cost, Pareto front; for a
// rate profile, the day played through the recommendation with an
// autoscaler against static provisioning), a throughput–latency staircase
// with its knee (Curve), and a fair A/B comparison (Compare). Plan
// weighs disaggregated prefill/decode clusters against aggregated ones.
//
// Every run goes through a Runner, which resolves scenarios against a
// catalog and runs simulations in parallel on all cores; searches reuse
// the scenario's seed for every probe, so results are reproducible and
// monotone in the load.
//
// Reading order: runner.go, metrics.go, search.go, sweep.go, then the
// plan: plan.go (spec and result), workload.go (the load it sizes for,
// max_model_len), verdict.go (SLA verdicts that stop a run early),
// candidates.go (replica and headroom searches), recommend.go (ranking,
// binding bound, Pareto front, why the others lost), day.go (a rate
// profile through the recommendation), profile.go (profiles from files
// and traces), disagg.go (disaggregated prefill/decode candidates in the
// same ranking); then curve.go, compare.go; check.go is each question's
// check up to its first simulation (Check, CheckSweep, CheckCurve,
// CheckMaxLoad, CheckCompare), which a server asks before it queues one.
//
// An SLA verdict is the report's (sim.SLAResult): a run with no completed
// request meets no bound, and requests that never completed count as
// missing every bound, so a candidate or a load whose requests are all
// rejected is infeasible, and the plan's and the search's texts say why.
package plan
