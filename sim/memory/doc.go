// Package memory reproduces vLLM's start-up memory profile: how much of each
// GPU goes to weights, the peak activation of a profiling forward pass, the
// sampler, non-torch allocations (CUDA context extras, NCCL and custom
// all-reduce buffers, kernels), and what is left for the paged KV cache —
// the block count vLLM logs as num_gpu_blocks. From the block count it
// answers the capacity questions: how many requests of a given length fit
// at once, and, when a model does not fit, the smallest tensor-parallel
// degree that does.
//
// Every constant is derived from a vLLM mechanism or fitted to a logged
// start-up, and says which (see constants.go and docs/memory-model.md).
//
// Reading order: constants.go, profile.go, concurrency.go, report.go (the
// answer of `headroom capacity`).
package memory
