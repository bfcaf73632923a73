package accuracy_test

import (
	"context"
	"os"
	"testing"

	"github.com/headroom-sim/headroom/catalogs"
	"github.com/headroom-sim/headroom/internal/study/accuracy"
	"github.com/headroom-sim/headroom/internal/study/calibrate"
	"github.com/headroom-sim/headroom/internal/testkit/refdata"
	"github.com/headroom-sim/headroom/sim/steptime"
)

// knownOpenLoopMisses and knownSteppedMisses are the open-loop and stepped
// figures that miss their bars today (see knownMisses).
var knownOpenLoopMisses = map[string]accuracy.KnownMiss{}

var knownSteppedMisses = map[string]accuracy.KnownMiss{
	"stepped vllm+eagle stage 0 (constant) e2e_ms.p50":                    {CeilingPct: 68.6, Reason: "replayed at EAGLE-3's published MT-bench acceptance (0.8 per position); this synthetic-prompt load accepts about 3% of drafts: at the acceptance fitted on the run TestEagleBars meets the bar (-3.1%)"}, // bar 15%, n=1
	"stepped vllm+eagle stage 0 (constant) ttft_ms.p50":                   {CeilingPct: 59.5, Reason: "the request path's default host costs under-predict the low-load TTFT as without speculation (vllm+quantization stage 0: 63%); the ratio to it meets its bar in TestEagleBars"},                          // bar 15%, n=1
	"stepped vllm+eagle stage 5 (constant) throughput.requests_per_s":     {CeilingPct: 27.9, Reason: "saturated: at the published acceptance the simulated server outruns the measured one; at the fitted acceptance the saturation throughput is within 1% (TestEagleBars)"},                                  // bar 10%, n=1
	"stepped vllm+eagle stage 6 (constant) throughput.requests_per_s":     {CeilingPct: 52.2, Reason: "saturated: at the published acceptance the simulated server outruns the measured one; at the fitted acceptance the saturation throughput is within 1% (TestEagleBars)"},                                  // bar 10%, n=1
	"stepped vllm+quantization stage 0 (constant) ttft_ms.p50":            {CeilingPct: 63.0, Reason: "client-side TTFT at 1 req/s: 29.3 ms measured, 10.9 ms simulated with the request path's default host costs (host.json, fitted to closed loops of another table)"},                                       // bar 15%, n=1
	"stepped vllm+v0_engine stage 0 (constant) ttft_ms.p50":               {CeilingPct: 70.8, Reason: "client-side TTFT at 1 req/s: 37.1 ms measured, 10.8 ms simulated with the request path's default host costs, as for vllm+quantization"},                                                                  // bar 15%, n=1
	"stepped vllm+v0_engine stage 3 (constant) throughput.requests_per_s": {CeilingPct: 35.2, Reason: "saturated: host.json has no cpu_v0 costs, so the V0 engine's host time is priced as V1's and the simulated server serves about 35% more than vLLM 0.9 did"},                                              // bar 10%, n=1
	"stepped vllm+v0_engine stage 4 (constant) throughput.requests_per_s": {CeilingPct: 35.0, Reason: "saturated: host.json has no cpu_v0 costs, so the V0 engine's host time is priced as V1's and the simulated server serves about 35% more than vLLM 0.9 did"},                                              // bar 10%, n=1
	"stepped vllm+v0_engine stage 5 (constant) throughput.requests_per_s": {CeilingPct: 34.7, Reason: "saturated: host.json has no cpu_v0 costs, so the V0 engine's host time is priced as V1's and the simulated server serves about 35% more than vLLM 0.9 did"},                                              // bar 10%, n=1
	"stepped vllm+v0_engine stage 6 (constant) throughput.requests_per_s": {CeilingPct: 35.1, Reason: "saturated: host.json has no cpu_v0 costs, so the V0 engine's host time is priced as V1's and the simulated server serves about 35% more than vLLM 0.9 did"},                                              // bar 10%, n=1
}

// familyResults replays one family of the reference data with the default
// host costs.
func familyResults(t *testing.T, family string) []calibrate.CaseResult {
	t.Helper()
	refdata.Path(t, "measured")
	cat, err := catalogs.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	cases, err := calibrate.LoadCases(os.DirFS(refdata.Dir()), cat, replayOptions(cat), []string{family})
	if err != nil {
		t.Fatal(err)
	}
	if len(cases) == 0 {
		t.Fatalf("no %s runs in the reference data", family)
	}
	return calibrate.EvaluateHost(context.Background(), cases, steptime.HostCosts(), 0)
}

// TestOpenLoopRunsMeetTheBars replays the residency traces (vLLM 0.23,
// Qwen3-14B on one H100, open-loop Poisson at 2-10 req/s, each request at
// its recorded send time and length) and judges every run's TTFT and ITL
// P50 (within 10%) and mean TPOT (within 5%).
func TestOpenLoopRunsMeetTheBars(t *testing.T) {
	if testing.Short() {
		t.Skip("replays the residency traces: skipped with -short")
	}
	rs := familyResults(t, calibrate.FamilyOpenLoop)
	judge(t, accuracy.FamilyFigures(calibrate.FamilyOpenLoop, rs, accuracy.OpenLoopBars), knownOpenLoopMisses, "knownOpenLoopMisses")
}

// TestSteppedRunsMeetTheBars replays the inference-perf stepped runs stage
// by stage with their manifests' flags and judges every stage's
// throughput (within 10%) and the lowest load's TTFT and E2E P50 (within
// 15%).
func TestSteppedRunsMeetTheBars(t *testing.T) {
	if testing.Short() {
		t.Skip("replays the inference-perf stages: skipped with -short")
	}
	rs := familyResults(t, calibrate.FamilyStepped)
	judge(t, accuracy.FamilyFigures(calibrate.FamilyStepped, rs, accuracy.SteppedBars), knownSteppedMisses, "knownSteppedMisses")
}
