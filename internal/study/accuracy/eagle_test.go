package accuracy_test

import (
	"context"
	"math"
	"os"
	"testing"

	"github.com/headroom-sim/headroom/catalogs"
	"github.com/headroom-sim/headroom/internal/adapter/measured"
	"github.com/headroom-sim/headroom/internal/study/calibrate"
	"github.com/headroom-sim/headroom/internal/study/replay"
	"github.com/headroom-sim/headroom/sim"
	"github.com/headroom-sim/headroom/sim/engine"
)

// eagleBar is one bar of TestEagleBars: the error (%) a figure may have,
// and, for a figure that misses today, the worst it may get (its figure
// when last measured, plus the slack) and why.
type eagleBar struct {
	name       string
	barPct     float64
	ceilingPct float64 // 0: must meet the bar
	reason     string
}

// eagleSlackPct is how much a known miss may worsen before it fails.
const eagleSlackPct = 3

// loadKubecon loads one variant of the shared inference-perf run, from
// the repository's copy (testdataDir).
func loadKubecon(t *testing.T, cat *catalogs.Catalog, variant string) *measured.Run {
	t.Helper()
	run, err := measured.LoadDir(os.DirFS(testdataDir), "measured/inference-perf-kubecon/"+variant)
	if err != nil {
		t.Fatal(err)
	}
	return run
}

// stageReport replays one stage of run through the normal replay path
// (replay.Parts, the built-in kernel tables) at acceptance acc.
func stageReport(t *testing.T, run *measured.Run, cat *catalogs.Catalog, stage int, acc *engine.Acceptance) (replay.Part, *sim.Report) {
	t.Helper()
	opt := replayOptions(cat)
	opt.Acceptance = acc
	parts, err := replay.Parts(run, cat, opt, stage)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := sim.Run(context.Background(), parts[0].Resolved.Config)
	if err != nil {
		t.Fatal(err)
	}
	return parts[0], rep
}

// TestEagleBars holds speculative decoding to the shared vllm+eagle run
// (vLLM 0.11, EAGLE-3 drafting 4 tokens for Llama-3.1-8B on one H100,
// seven 60 s constant-rate stages of a shared-prefix load): the
// acceptance is calibrated on stage 0 (1 request/s) as `headroom
// calibrate --fit acceptance --stage 0` does, and checked on the others.
// Bars: low-load E2E P50 and TTFT P50 within 15% (and their ratios to the
// same load without speculation, vllm+quantization, within 15%), E2E P50
// of the unsaturated stages 1–3 within 15%, saturation throughput (stages
// 5 and 6, the client's 440 requests in flight) within 10%.
func TestEagleBars(t *testing.T) {
	cat, err := catalogs.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	eagle := loadKubecon(t, cat, "vllm+eagle")
	plain := loadKubecon(t, cat, "vllm+quantization")
	fit, err := calibrate.FitAcceptance(context.Background(), eagle, cat, calibrate.AcceptanceOptions{Stage: 0, KernelDB: replayOptions(cat).KernelDB})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("acceptance fitted on stage 0: rate %.4f, mean acceptance length %.3f (from the means: %.4f, %.3f); %v",
		fit.Rate, fit.MeanAcceptanceLength, fit.RateFromMeans, fit.MeanAcceptanceLengthFromMeans, fit.Notes)
	// The run's SSE events carry about 1.13 tokens each (inference-perf
	// counts two ITL intervals per event: 114 for EAGLE's 63 tokens after
	// the first, 129 without speculation).
	if !(fit.MeanAcceptanceLengthFromMeans < 1.2) {
		t.Errorf("mean acceptance length %.3f from the means: the run accepts few drafts (its events carry about 1.13 tokens)", fit.MeanAcceptanceLengthFromMeans)
	}
	rate := fit.Rate
	acc := &engine.Acceptance{Rate: &rate}

	got := map[string]float64{}
	errPct := func(pred, meas float64) float64 { return 100 * (pred - meas) / meas }
	p0, r0 := stageReport(t, eagle, cat, 0, acc)
	q0, s0 := stageReport(t, plain, cat, 0, nil)
	for _, m := range []struct {
		key  string
		pred float64
		base float64
	}{{"e2e_ms", r0.E2EMS.P50, s0.E2EMS.P50}, {"ttft_ms", r0.TTFTMS.P50, s0.TTFTMS.P50}} {
		meas, _ := p0.Measured.Get(m.key, "p50")
		base, _ := q0.Measured.Get(m.key, "p50")
		got["stage 0 "+m.key+".p50"] = errPct(m.pred, meas)
		got["stage 0 "+m.key+".p50 ratio to no speculation"] = errPct(m.pred/m.base, meas/base)
		t.Logf("stage 0 %s.p50: measured %.1f ms (no speculation %.1f), predicted %.1f ms (%.1f)", m.key, meas, base, m.pred, m.base)
	}
	for st := 1; st <= 3; st++ {
		p, r := stageReport(t, eagle, cat, st, acc)
		meas, _ := p.Measured.Get("e2e_ms", "p50")
		got[stageKey(st, "e2e_ms.p50")] = errPct(r.E2EMS.P50, meas)
		t.Logf("stage %d e2e_ms.p50: measured %.1f ms, predicted %.1f ms", st, meas, r.E2EMS.P50)
	}
	var measThr, predThr float64
	for _, st := range []int{5, 6} {
		p, r := stageReport(t, eagle, cat, st, acc)
		measThr += p.Measured.RequestsPerS / 2
		predThr += r.Throughput.RequestsPerS / 2
	}
	got["saturation requests_per_s"] = errPct(predThr, measThr)
	t.Logf("saturation (stages 5-6): measured %.2f req/s, predicted %.2f req/s", measThr, predThr)

	for _, b := range []eagleBar{
		{name: "stage 0 e2e_ms.p50", barPct: 15},
		{name: "stage 0 e2e_ms.p50 ratio to no speculation", barPct: 15},
		{name: "stage 0 ttft_ms.p50", barPct: 15, ceilingPct: 59.4,
			reason: "the request path's host costs (sim/frontend.go, host.json) are under-predicted as without speculation (vllm+quantization stage 0: -63%); the ratio to it meets its bar"},
		{name: "stage 0 ttft_ms.p50 ratio to no speculation", barPct: 15},
		{name: stageKey(1, "e2e_ms.p50"), barPct: 15},
		{name: stageKey(2, "e2e_ms.p50"), barPct: 15},
		{name: stageKey(3, "e2e_ms.p50"), barPct: 15},
		{name: "saturation requests_per_s", barPct: 10},
	} {
		v, ok := got[b.name]
		if !ok {
			t.Errorf("%s: not computed", b.name)
			continue
		}
		abs := math.Abs(v)
		switch {
		case abs <= b.barPct && b.ceilingPct > 0:
			t.Errorf("%s: %+.1f%% now meets its %.0f%% bar: drop its ceiling (%s)", b.name, v, b.barPct, b.reason)
		case abs <= b.barPct:
			t.Logf("%s: %+.1f%% (bar %.0f%%)", b.name, v, b.barPct)
		case b.ceilingPct > 0 && abs <= b.ceilingPct+eagleSlackPct:
			t.Logf("%s: %+.1f%% misses its %.0f%% bar, known (ceiling %.1f%%): %s", b.name, v, b.barPct, b.ceilingPct, b.reason)
		default:
			t.Errorf("%s: %+.1f%% misses its %.0f%% bar", b.name, v, b.barPct)
		}
	}
}

func stageKey(st int, metric string) string {
	return "stage " + string(rune('0'+st)) + " " + metric
}
