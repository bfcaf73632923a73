// Package catalogs holds Headroom's built-in GPU and model catalogs, embedded
// YAML with a source for every figure, and loads user catalogs on top of
// them: a directory of extra YAML entries, or a model imported from a
// Hugging Face config.json.
//
// Loading reads from an fs.FS or an io.Reader; callers at the edges (the
// CLI, the API server) open the files. Unknown keys and missing required
// fields are errors that name the file, the field and the reason.
//
// Reading order: catalog.go (lookup by id or alias), load.go (YAML files),
// hf.go (config.json import), gpus/*.yaml and models/*.yaml (the data).
package catalogs
