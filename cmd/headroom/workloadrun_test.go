package main

import (
	"strings"
	"testing"
)

const blisFixture = "../../internal/adapter/measured/testdata/blis-trace/run"

// TestSimulateWorkloadRun: simulate replays a measured run's requests as
// its workload, per tenant, at their send times or their scheduled
// arrivals.
func TestSimulateWorkloadRun(t *testing.T) {
	for _, arr := range []string{"send", "schedule"} {
		code, out, stderr := runCLI(t, "simulate", "--model", "qwen3-14b", "--gpu", "h100-sxm", "--workload-run", blisFixture, "--workload-arrivals", arr)
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", arr, code, stderr)
		}
		if !strings.Contains(stderr, "workload: 3 requests of run (blis-trace)") || !strings.Contains(out, "3 completed") ||
			!strings.Contains(out, "tenant tenant_A") || !strings.Contains(out, "tenant tenant_B") {
			t.Errorf("%s: %s\n%s", arr, stderr, out)
		}
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--workload-run", blisFixture, "--workload-arrivals", "later"}, `--workload-arrivals: "later" is not send or schedule`},
		{[]string{"--workload-run", "../../testdata/inference-perf/vllm+v0_engine/results/stage_3_lifecycle_metrics.json"}, "no completed request with its token counts to replay"},
		{[]string{"--workload-run", "no/such/run"}, "--workload-run no/such/run"},
	} {
		code, _, stderr := runCLI(t, append([]string{"simulate"}, c.args...)...)
		if code != 2 || !strings.Contains(stderr, c.want) {
			t.Errorf("%q: exit %d, %s", c.args, code, stderr)
		}
	}
}
