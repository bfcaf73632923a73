// Package study groups what users run on top of the simulation core:
// scenario (the public input schema, resolved into a sim.Config), replay
// (measured runs through the simulator), calibrate (step-time coefficients
// fitted to a run) and plan (sweeps, load searches, capacity plans). They
// take values and file openers from their callers (cmd/headroom, api).
package study
