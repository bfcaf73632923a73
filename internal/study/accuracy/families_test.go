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
var knownOpenLoopMisses = map[string]accuracy.KnownMiss{
	"open-loop 5T_agg_10rps/vanilla tpot_ms.mean": {CeilingPct: 6.1, Reason: "-6% at 10 req/s, the highest rate (-1% to -4% below it, ITL p50 -1%): the decodes' slowdown by the prefill chunks mixed into their steps is under-predicted, the prefill steps of this GPU's tables about 7% fast (docs/request-path.md)"},
}

var knownSteppedMisses = map[string]accuracy.KnownMiss{
	"stepped vllm+eagle stage 0 (constant) ttft_ms.p50":        {CeilingPct: 32.9, Reason: "as without speculation (vllm+quantization, below): 36.6 ms measured, 24.6 ms simulated; the ratio to the run without speculation meets its bar in TestEagleBars"},
	"stepped vllm+quantization stage 0 (constant) ttft_ms.p50": {CeilingPct: 29.7, Reason: "client-side TTFT at 1 req/s: 29.3 ms measured, 20.6 ms simulated, with E2E p50 within 6%: the gap is on the first token's path only (a client in another pod of a GKE cluster), not in the engine; the default client is fitted to every family at once (docs/host-costs.md)"},
	"stepped vllm+v0_engine stage 0 (constant) ttft_ms.p50":    {CeilingPct: 49.8, Reason: "client-side TTFT at 1 req/s: 37.1 ms measured, 18.7 ms simulated, E2E p50 within 7%: as for vllm+quantization, 8 ms more of it under V0"},
}

// familyResults replays one family of the reference data with the default
// host costs: the stepped runs from the repository's copy (testdataDir),
// the others from ../shared.
func familyResults(t *testing.T, family string) []calibrate.CaseResult {
	t.Helper()
	root := testdataDir
	if family != calibrate.FamilyStepped {
		refdata.Path(t, "measured")
		root = refdata.Dir()
	}
	cat, err := catalogs.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	cases, err := calibrate.LoadCases(os.DirFS(root), cat, replayOptions(cat), []string{family})
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
