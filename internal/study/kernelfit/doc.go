// Package kernelfit fits the step-time formulas' per-GPU coefficients
// (sim/steptime.Profile) to a system's measured kernel tables
// (sim/steptime.KernelDB) and reports how well the fitted formulas, and
// the table backend's interpolation, predict the measurements they were
// not fitted on.
//
// Every table is split by a fixed rule (split.go) into a fit half and a
// held-out half; each op group's coefficients are fitted on the fit half
// by a deterministic compass search on the mean absolute log error
// (minimize.go), with the kernels' discrete structure (tiles, GQA packing,
// split-KV, L2 working sets, size switches) chosen by the same loss, and
// the errors are reported on the held-out half. Attention tables that do
// not measure the shapes their keys name (checkHeads) are neither fitted
// nor judged. The built-in defaults of the five measured GPUs are this
// fit's output on catalogs/kernels (FitDefaults, defaults.go;
// sim/steptime/profiles, written and checked by cmd/headroom-fit), and
// docs/steptime.md's generated section is Report's.
//
// Reading order: defaults.go, split.go, minimize.go, fit.go, fit_gemm.go,
// fit_attention.go, fit_moe.go, fit_comm.go, interp.go (the table
// backend's errors), report.go.
package kernelfit
