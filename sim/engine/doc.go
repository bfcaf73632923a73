// Package engine holds the settings of the simulated vLLM engine (the
// scenario's `engine:` section), vLLM's defaults for them (which depend on
// the GPU), and their validation.
//
// Reading order: config.go, speculative.go (speculative decoding
// settings and the published acceptance defaults).
package engine
