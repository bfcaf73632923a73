// Package study groups what users run on top of the simulation core:
// scenario (the public input schema, resolved into a sim.Config), replay
// (measured runs through the simulator, compared with what was measured),
// calibrate (step-time scales fitted to a run; the default host costs
// fitted to many), plan (sweeps, load searches, capacity plans, a day of
// traffic), stepreport (one engine step explained kernel by kernel),
// accuracy (the bars the simulator must meet on measured runs, and the
// ledger of known misses), kernelfit (the default kernel profiles, fitted
// to measured kernel tables, and their held-out errors), uncertainty (the
// error model fitted to the validation residuals: a report's bands) and
// workers (the bounded goroutine pool they share). They take values and file openers
// from their callers (cmd/headroom, api).
package study
