package main

import (
	"strings"
	"testing"
)

// TestHostileScenariosExit2: valid numbers that break the simulated time
// are bad input (exit 2, naming the workload), never a failure (exit 1).
func TestHostileScenariosExit2(t *testing.T) {
	for _, c := range []struct {
		name string
		args []string
	}{
		{"rate 1e-9", []string{"simulate", "--requests", "10", "--rate-rps", "1e-9"}},
		{"stage 1e10 s", []string{"simulate", "--set", "workload.stages=[{duration_s: 1e10, rate_rps: 1e-9}]"}},
		{"compare rate 1e-9", []string{"compare", "--requests", "10", "--rate-rps", "1e-9", "--b-set", "gpu=a100-80gb"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, _, stderr := runCLI(t, c.args...)
			if code != exitUsage || !strings.Contains(stderr, "workload") {
				t.Fatalf("exit %d, want %d naming the workload; stderr %q", code, exitUsage, stderr)
			}
		})
	}
}
