package main

import (
	"sync"

	"github.com/headroom-sim/headroom/catalogs"
	"github.com/headroom-sim/headroom/internal/adapter/kerneldb"
)

var (
	kernelOnce     sync.Once
	kernelProvider *kerneldb.Provider
)

// kernelDBs is the process's kernel databases: the built-in measurements
// and any directory a scenario names, each read once.
func kernelDBs(cat *catalogs.Catalog) *kerneldb.Provider {
	kernelOnce.Do(func() {
		kernelProvider = kerneldb.ForCatalog(cat.GPU)
	})
	return kernelProvider
}
