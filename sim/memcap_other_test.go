//go:build !linux

package sim

import "testing"

// capMemory caps nothing where RLIMIT_AS is not at hand: the fuzz test
// still fails on a crash, not on memory alone.
func capMemory(testing.TB, uint64) (restore func()) { return func() {} }
