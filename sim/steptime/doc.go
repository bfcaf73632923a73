// Package steptime predicts how long one engine step takes on a GPU: a
// roofline per operation of the forward pass (FLOPs ÷ achievable FLOPs,
// bytes ÷ achievable bandwidth), GEMM efficiency that falls for small token
// counts, attention cost growing with context, tensor-parallel all-reduces
// over the scale-up link, MoE expert reads, the LM head, and the CPU
// overhead per step and per sequence.
//
// All coefficients live in one Profile value. DefaultProfile gives
// per-GPU-family defaults; a calibration fits its scale factors
// (Profile.Scale) to a measured run.
//
// Kernel times come from one of two backends: the formulas with the
// profile's coefficients, or measured kernel tables (KernelDB),
// interpolated between measured shapes, with the formulas where a table
// does not reach.
//
// Reading order: profile.go (the coefficients, their ranges, the base
// profile), defaults.go (each GPU's default profile: fitted to its own
// kernel tables, or a family template's on its peaks; the host costs),
// model.go (the step time of a batch), kernels.go (the kernels of a step,
// each from the table or the formula: GEMMs, elementwise, all-reduces, the
// LM head and sampler, fused MoE), attention.go (prefill and decode
// attention over the layers), formula.go (the GEMM, collective and
// elementwise formulas and the Hardware they read), formula_attention.go
// and formula_moe.go (attention and fused-MoE formulas), kerneldb.go (the
// measured tables and the GEMM lookup), kerneldb_lookup.go (attention,
// MoE and collective lookups, on utilisation), curve.go (one measured
// curve and its interpolation), verify.go (speculative decoding's
// verification and draft passes). internal/study/kernelfit fits the
// defaults to the tables; docs/steptime.md has the equations, the
// provenance of every default and the error tables. The *_test.go files
// check each formula against hand-computed values.
package steptime
