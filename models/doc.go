// Package models describes transformer language models by the shape values
// of their Hugging Face config.json, and derives from them everything the
// simulator needs: parameter counts (total and active for mixture-of-experts),
// weight bytes per data type and tensor-parallel rank, KV-cache bytes per
// token (grouped-query, multi-head, multi-head latent attention, sliding
// windows), and the FLOPs and bytes moved by each operation of a forward pass.
//
// The package is pure: values in, numbers out.
//
// Reading order: model.go (the shape), params.go (parameter counts and
// weight bytes), kv.go (KV-cache bytes), ops.go (per-operation FLOPs and
// bytes for a batch).
package models
