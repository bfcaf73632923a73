// Package calibrate fits the step-time model to a measured benchmark run:
// it replays the run (its arrivals, lengths and engine settings) through the
// simulator and adjusts the profile's coefficients — compute and bandwidth
// efficiencies, attention efficiencies, CPU overheads, and the all-reduce
// link for tensor-parallel runs — to minimise the error on the TTFT, TPOT
// and end-to-end quantiles, with gonum's Nelder-Mead on a bounded
// parametrisation (one scale factor per group of coefficients) and a weak
// pull towards the defaults. It also evaluates a
// profile on held-out runs.
//
// Reading order: params.go (the groups of coefficients a fit scales),
// objective.go (targets and loss), fit.go, evaluate.go, file.go (the
// versioned calibration file), workflow.go (Check and Calibrate: the one
// workflow `headroom calibrate` and POST /v1/calibrations both call).
package calibrate
