// Package steptime predicts how long one engine step takes on a GPU: a
// roofline per operation of the forward pass (FLOPs ÷ achievable FLOPs,
// bytes ÷ achievable bandwidth), GEMM efficiency that falls for small token
// counts, attention cost growing with context, tensor-parallel all-reduces
// over the scale-up link, MoE expert reads, the LM head, and the CPU
// overhead per step and per sequence.
//
// All coefficients live in one Profile value. DefaultProfile gives
// per-GPU-family defaults; calibration replaces them with fitted values.
//
// Reading order: profile.go (coefficients and defaults), model.go (the
// step time), verify.go (speculative decoding's verification and draft
// passes). The subpackage kernels compares the model with measured
// kernel and static-batch times and fits the defaults; docs/steptime.md
// has the equations, the provenance of every default and the error tables.
package steptime
