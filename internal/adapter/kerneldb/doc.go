// Package kerneldb reads measured kernel latencies laid out as
// AIConfigurator's perf database (<system>/<op>/<framework>/<version>/
// *.parquet: GEMM, prefill and decode attention, fused MoE, vLLM's custom
// all-reduce and NCCL collectives) into a steptime.KernelDB, so the
// step-time model can use a team's own measurements of its hardware.
//
// Reading order: load.go (layout, version choice, Load), rows.go (the
// Parquet row types), convert.go (row checks and units into the database),
// provider.go (a GPU's database, built-in or a user's directory, read once
// and shared).
package kerneldb
