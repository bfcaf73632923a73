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

// TestHostileSizesExit2 (issue 23): sizes that took the process down are
// bad input naming their field (exit 2), before anything is allocated.
func TestHostileSizesExit2(t *testing.T) {
	for _, c := range []struct {
		name  string
		args  []string
		field string
	}{
		{"4e9 users", []string{"simulate", "--concurrency", "4000000000"}, "workload.arrival.concurrency"},
		{"2e9 KV blocks", []string{"simulate", "--set", "engine.num_gpu_blocks_override=2000000000"}, "engine.num_gpu_blocks_override"},
		{"block_size 1024", []string{"simulate", "--set", "engine.block_size=1024"}, "engine.block_size"},
		{"--max-events -1", []string{"simulate", "--max-events", "-1"}, "--max-events"},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, _, stderr := runCLI(t, c.args...)
			if code != exitUsage || !strings.Contains(stderr, c.field) {
				t.Fatalf("exit %d, want %d naming %s; stderr %q", code, exitUsage, c.field, stderr)
			}
		})
	}
}

// TestRunLimitsStopTheRun (issue 23): --max-events 1 and --timeout 1ns
// stop the run, saying so (exit 2: over the limit given; exit 1: the
// run was stopped), instead of printing a full report with exit 0.
func TestRunLimitsStopTheRun(t *testing.T) {
	for _, c := range []struct {
		args []string
		code int
		says string
	}{
		{[]string{"simulate", "--requests", "5", "--max-events", "1"}, exitUsage, "event limit (1 events)"},
		{[]string{"simulate", "--requests", "5", "--timeout", "1ns"}, exitFailure, "deadline"},
	} {
		code, stdout, stderr := runCLI(t, c.args...)
		if code != c.code || stdout != "" || !strings.Contains(stderr, c.says) {
			t.Errorf("%v: exit %d (stdout %q, stderr %q), want %d saying %q and no report", c.args, code, stdout, stderr, c.code, c.says)
		}
	}
}
