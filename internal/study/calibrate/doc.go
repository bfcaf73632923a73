// Package calibrate fits the step-time model to a measured benchmark run:
// it replays the run (its arrivals, lengths and engine settings) through the
// simulator and adjusts the profile's scale factors, one per resource class
// whose time a run moves together — compute, memory, fixed overheads, and
// the fused-MoE experts (MoE models) and the link (tensor-parallel runs) —
// to minimise the error on the TTFT, TPOT and end-to-end quantiles, with
// gonum's Nelder-Mead on a bounded parametrisation and a weak pull towards
// the defaults. It also evaluates a profile on held-out runs, and fits the
// default host costs (the engine's and the API server's time, the same for
// every GPU) to many closed-loop runs at once.
//
// Reading order: params.go (the scale factors a fit adjusts),
// objective.go (targets and loss), fit.go, evaluate.go, file.go (the
// versioned calibration file), workflow.go (Check and Calibrate: the one
// workflow `headroom calibrate` and POST /v1/calibrations both call),
// host.go (HostSplit and FitHost, the closed loops alone), families.go
// (the families of measured runs and FitHostFamilies), hostdefaults.go
// (FitHostDefaults and CheckHostDefaults: sim/steptime/profiles/host.json
// and testdata/host-families.json, written and checked by
// cmd/headroom-fit).
package calibrate
