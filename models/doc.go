// Package models describes transformer language models by the shape values
// of their Hugging Face config.json, and derives from them everything the
// simulator needs: parameter counts (total and active for mixture-of-experts),
// weight bytes per data type and tensor-parallel rank, KV-cache bytes per
// token (grouped-query, multi-head, multi-head latent attention, sliding
// windows), and the FLOPs and bytes moved by each operation of a forward pass.
//
// The package is pure: values in, numbers out.
//
// Pre-quantised checkpoints carry a Quantization: the weight dtype, the
// kernel scheme (per-tensor or block fp8, int8 W8A8, int4 weight-only,
// NVFP4, MXFP4), block and group sizes, which modules stay unquantised and
// the checkpoint's KV-cache hint; DefaultPrecision turns it into the dtype
// of each part (weights, attention, experts, KV cache, activations).
//
// Reading order: model.go (the shape), bounds.go (the maxima a shape's
// dimensions and names are checked against), quant.go (quantisation
// schemes), params.go (parameter counts, precision and weight bytes), kv.go
// (KV-cache bytes), ops.go (a step's batch and the per-operation FLOPs and
// bytes it costs one GPU), shapes.go (the per-GPU kernel shapes of a
// forward pass, which the step-time model prices), draft.go (the drafters
// of speculative decoding).
package models
