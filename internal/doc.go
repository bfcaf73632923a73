// Package internal groups Headroom's packages above the simulation core.
//
// The tree shows the layers; imports only point down:
//
//	cmd/headroom              the CLI: flags, files, tables, charts
//	cmd/headroom-server, api/ the REST API server and its handlers, jobs,
//	                          configuration and calibration store
//	cmd/internal/cli          what the two binaries share: flag parsing,
//	                          usage errors and exit codes, the catalog
//	internal/study/...        what users run on top of the engine:
//	                          scenario (the public input schema → sim.Config),
//	                          replay (measured runs through the simulator),
//	                          calibrate (fit step-time scales to a run, and
//	                          the default host costs to many),
//	                          plan (sweeps, load search, capacity plans),
//	                          stepreport (one engine step explained),
//	                          accuracy (the bars against measured runs),
//	                          kernelfit (the default kernel profiles, fitted
//	                          to measured kernel tables),
//	                          uncertainty (the error model: bands from the
//	                          validation residuals),
//	                          workers (the goroutine pool they share)
//	internal/adapter/...      translate the outside world: measured (benchmark
//	                          result files), kerneldb (kernel tables laid out
//	                          as AIConfigurator's perf database), plot (SVG),
//	                          promexport (OpenMetrics)
//	sim/...                   the pure, deterministic simulation core: the
//	                          event loop (sim) and its parts — engine settings,
//	                          step-time model, memory model, workloads, stats
//	models/, hardware/        model architecture maths and GPU descriptions
//	catalogs/                 the built-in GPU, model, interconnect and kernel
//	                          catalogs and their loaders
//	internal/testkit/...      test-only helpers: golden files, the location of
//	                          the reference data, the documents' commands
package internal
