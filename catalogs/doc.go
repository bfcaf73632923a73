// Package catalogs holds Headroom's built-in GPU and model catalogs, embedded
// YAML with a source for every figure, and loads user catalogs on top of
// them: a directory of extra YAML entries, or a model imported from a
// Hugging Face config.json.
//
// Loading reads from an fs.FS or an io.Reader; callers at the edges (the
// CLI, the API server) open the files. Unknown keys and missing required
// fields are errors that name the file, the field and the reason.
//
// Lookups accept what users type: catalog ids, aliases and Hugging Face
// ids in any case, and model paths as benchmark tools record them. A user
// catalog (a Clone of the built-in one plus a directory) may reuse a
// built-in name; its own entry then answers to it.
//
// Reading order: catalog.go (lookup by id or alias), load.go (YAML files,
// models/ORG/NAME.yaml for ids with a slash), hf.go and hf_keys.go
// (config.json import), hf_quant.go (quantization_config: the formats and how
// they become models.Quantization), hf_compressed.go (compressed-tensors),
// hf_modelopt.go (NVIDIA ModelOpt and hf_quant_config.json), hf_modules.go
// (which modules a checkpoint leaves unquantised), hf_qobj.go (typed reads of
// JSON objects), gpus/*.yaml and models/*.yaml (the data), interconnects.go
// and interconnects.yaml (the links a KV cache crosses between a prefill
// and a decode GPU, for disaggregated serving), kernels.go and kernels/
// (the embedded kernel tables of the measured GPUs, read by
// internal/adapter/kerneldb).
package catalogs
