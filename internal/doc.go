// Package internal groups Headroom's packages above the simulation core.
//
// The tree shows the layers; imports only point down:
//
//	cmd/headroom, api/        the CLI and the REST API: flags, HTTP, files
//	internal/study/...        what users run on top of the engine:
//	                          scenario (the public input schema → sim.Config),
//	                          replay (measured runs through the simulator),
//	                          calibrate (fit step-time coefficients to a run),
//	                          plan (sweeps, load search, capacity plans),
//	                          workers (the goroutine pool they share)
//	internal/adapter/...      translate the outside world: measured (benchmark
//	                          result files), plot (SVG), promexport (OpenMetrics)
//	sim/...                   the pure, deterministic simulation core: the
//	                          event loop (sim) and its parts — engine settings,
//	                          step-time model, memory model, workloads, stats
//	models/, hardware/        model architecture maths and GPU descriptions
//	catalogs/                 the built-in GPU and model catalogs and their loaders
//	internal/testkit/...      test-only helpers: golden files, the location of
//	                          the reference data, kernel-measurement checks
package internal
