//go:build linux

package sim

import (
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// capMemory caps the process's address space at what it maps now plus
// extra bytes, until the returned func restores the limit: an allocation
// past it fails with "fatal error: out of memory", which the test (or the
// fuzzer's worker) reports as a crash, instead of taking the machine's
// memory. The fuzz inputs run one at a time, with no other test beside
// them.
func capMemory(t testing.TB, extra uint64) (restore func()) {
	t.Helper()
	var old syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_AS, &old); err != nil {
		t.Skipf("getrlimit: %v", err)
	}
	statm, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		t.Skipf("no /proc/self/statm: %v", err)
	}
	pages, err := strconv.ParseUint(strings.Fields(string(statm))[0], 10, 64)
	if err != nil {
		t.Skipf("statm: %v", err)
	}
	limit := pages*uint64(os.Getpagesize()) + extra
	if limit > old.Cur {
		return func() {} // already tighter
	}
	capped := syscall.Rlimit{Cur: limit, Max: old.Max}
	if err := syscall.Setrlimit(syscall.RLIMIT_AS, &capped); err != nil {
		t.Skipf("setrlimit: %v", err)
	}
	return func() {
		if err := syscall.Setrlimit(syscall.RLIMIT_AS, &old); err != nil {
			t.Fatalf("restore the address-space limit: %v", err)
		}
	}
}
