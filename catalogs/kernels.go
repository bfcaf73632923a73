package catalogs

import (
	"embed"
	"io/fs"
)

//go:embed kernels
var kernelFS embed.FS

// Kernels is the built-in kernel database: AIConfigurator's measured vLLM
// 0.19 kernel latencies of the GPU systems in kernels/SOURCE.md, laid out
// as its perf database (read with internal/adapter/kerneldb).
func Kernels() fs.FS {
	sub, err := fs.Sub(kernelFS, "kernels")
	if err != nil {
		panic(err)
	}
	return sub
}
