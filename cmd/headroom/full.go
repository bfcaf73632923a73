//go:build full

package main

// fullBuild: this binary has the REST server (serve) and the charts
// (--plot-dir). Built with `go build -tags full ./cmd/headroom`.
const fullBuild = true

// runFull is not needed: this build runs every command itself.
func runFull(_ *env, _ []string) int { return exitFailure }

func needsFull([]string) bool { return false }
