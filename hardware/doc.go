// Package hardware describes accelerators: device memory as the driver
// reports it, memory bandwidth, peak tensor throughput per data type (dense and
// sparse kept apart), scale-up and host links, power and an editable price.
//
// It also owns the data types (DType) that weights, activations and the KV
// cache are stored in, with their sizes and quantisation overheads.
//
// The package is pure: it holds values and arithmetic, never reads files.
// Catalog entries are loaded by package catalogs.
//
// Reading order: dtype.go, gpu.go, interconnect.go (the links a KV cache
// crosses between a prefill and a decode GPU).
package hardware
