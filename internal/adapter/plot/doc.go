// Package plot draws a run's and a planner's results as SVG charts a
// person would rather look at than read: latency CDFs, the engine's state
// over time, the throughput–latency curve with its SLA and knee, a sweep's
// heat map or lines, a plan's cost–latency Pareto front, a load search,
// and the simulator's predictions against measured runs.
//
// It is pure: every chart is a function that takes a result value and an
// io.Writer and writes one self-contained SVG document (8×5 in, or taller
// for stacked panels), built with gonum.org/v1/plot and its vgsvg backend.
// The output depends only on the input: the same result gives the same
// bytes, with no date, random id or embedded font. A chart that has
// nothing to show returns an error saying what is missing and writes
// nothing.
//
// Latency distributions need more than a report holds, so a Distributions
// collector gathers them from a run through the simulator's request and
// token sinks (sim.WithRequestSink, sim.WithTokenSink); sim.WithSinks
// feeds several collectors (this package's and internal/adapter/promexport's) from one run.
//
// Reading order: style.go (the look shared by every chart and the SVG
// rendering), distributions.go, cdf.go, timeline.go, curve.go (the
// throughput–latency curve and the load search), sweep.go, sweeplines.go
// (metrics over a sweep, one line per value of its second axis), pareto.go,
// day.go (a rate profile through a plan: load, replicas, the binding bound),
// accuracy.go (predicted vs measured), render.go (a result's default
// chart, for callers holding any result).
package plot
