// Package workers runs independent jobs on a bounded number of goroutines:
// the one pool behind plan's sweeps and comparisons, calibrate's objective
// and replay's batch of runs. Each job writes its own result slot, so the
// results come out in the jobs' order however they interleave
// (workers.go).
package workers
