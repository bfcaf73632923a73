package accuracy_test

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/headroom-sim/headroom/internal/adapter/measured"
	"github.com/headroom-sim/headroom/internal/study/accuracy"
	"github.com/headroom-sim/headroom/internal/study/replay"
)

func mean(model, gpu string, mttft, ttft, mtpot, tpot float64) replay.MeanResult {
	return replay.MeanResult{Run: &measured.Run{TP: 1}, Model: model, GPU: gpu, MeasuredTTFTMS: mttft, TTFTMS: ttft, MeasuredTPOT: mtpot, TPOTMS: tpot}
}

func TestClosedLoopFigures(t *testing.T) {
	rs := []replay.MeanResult{
		mean("m", "h100", 100, 141, 10, 10.5), // +41%, +5%
		mean("m", "h100", 100, 71, 10, 8.1),   // -29%, -19%
		mean("m", "h100", 100, 100, 10, 13),   // 0, +30%
		mean("n", "b200", 100, 110, 10, 10.1), // +10%, +1%
		{Run: &measured.Run{}, Model: "x", GPU: "b300", Err: errors.New("does not fit")},
	}
	got := map[string]accuracy.Figure{}
	for _, f := range accuracy.ClosedLoopFigures(rs) {
		got[f.Key] = f
	}
	for _, c := range []struct {
		key  string
		v    float64
		bar  float64
		n    int
		meet bool
	}{
		// |TTFT| 41, 29, 0, 10: median 19.5 (interpolated); |TPOT| 5, 19, 30, 1: median 12.
		{"overall TTFT", 19.5, 20, 4, true},
		{"overall TPOT", 12, 10, 4, false},
		// Signed TTFT errors -29, 0, 10, 41: median +5, within the ±10% bar.
		{"overall TTFT signed", 5, 10, 4, true},
		{"m on h100 TTFT", 29, 35, 3, true},
		{"m on h100 TPOT", 19, 20, 3, true},
		{"n on b200 TTFT", 10, 35, 1, true},
		{"x on b300 TTFT", math.Inf(1), 35, 0, false},
	} {
		f, ok := got[c.key]
		if !ok || math.Abs(f.ValuePct-c.v) > 1e-6 && !math.IsInf(c.v, 1) || math.IsInf(c.v, 1) != math.IsInf(f.ValuePct, 1) || f.BarPct != c.bar || f.N != c.n || f.Meets() != c.meet {
			t.Errorf("%s: %+v (found %v), want %v%% bar %v n %d meets %v", c.key, f, ok, c.v, c.bar, c.n, c.meet)
		}
	}
	if len(got) != 9 {
		t.Errorf("%d figures, want 3 overall + 2 × 3 groups", len(got))
	}
}

func TestRunFigures(t *testing.T) {
	c := replay.Comparison{Run: "r", Metrics: []replay.Metric{
		{Name: "ttft_ms.mean", ErrorPct: -12}, {Name: "ttft_ms.p99", ErrorPct: 31},
		{Name: "tpot_ms.p50", ErrorPct: 14.9},
		{Name: "throughput.requests_per_s", ErrorPct: 80},
	}}
	figs := accuracy.RunFigures([]replay.Comparison{c})
	if len(figs) != 2 || figs[0].Key != "run r ttft_ms" || figs[0].ValuePct != 31 || figs[0].N != 2 || figs[0].Meets() ||
		figs[1].Key != "run r tpot_ms" || figs[1].ValuePct != 14.9 || !figs[1].Meets() {
		t.Fatalf("figures %+v", figs)
	}
	if accuracy.MeetsRunBars(&c) {
		t.Error("a TTFT p99 31% off meets the 30% bar")
	}
	c.Metrics[1].ErrorPct = -29
	if !accuracy.MeetsRunBars(&c) {
		t.Error("every quantile within its bar, yet it misses")
	}
}

func TestJudge(t *testing.T) {
	figs := []accuracy.Figure{
		{Key: "ok", ValuePct: 10, BarPct: 20, N: 5},
		{Key: "new miss", ValuePct: 25, BarPct: 20, N: 5},
		{Key: "known, as bad", ValuePct: 40, BarPct: 35, N: 5},
		{Key: "known, a little worse", ValuePct: 41.9, BarPct: 35, N: 5},
		{Key: "known, worse", ValuePct: 42.1, BarPct: 35, N: 5},
		{Key: "known, fixed", ValuePct: 19, BarPct: 20, N: 5},
		{Key: "nothing ran", ValuePct: math.Inf(1), BarPct: 20},
	}
	known := map[string]accuracy.KnownMiss{
		"known, as bad":         {CeilingPct: 40, Reason: "a"},
		"known, a little worse": {CeilingPct: 40, Reason: "b"},
		"known, worse":          {CeilingPct: 40, Reason: "c"},
		"known, fixed":          {CeilingPct: 22, Reason: "d"},
		"gone":                  {CeilingPct: 50, Reason: "e"},
	}
	var got []string
	for _, p := range accuracy.Judge(figs, known) {
		got = append(got, p.String())
	}
	want := []string{
		"new miss: 25.0% is above its 20% bar (n=5)",
		"known, worse: 42.1% is worse than its known-miss ceiling 40.0% (+2 points allowed; bar 35%, n=5)",
		"known, fixed: 19.0% now meets its 20% bar (n=5): remove it from knownMisses",
		"nothing ran: no run replayed",
		"gone: listed in knownMisses but no such figure was measured",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("problems:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	ledger := accuracy.Ledger(figs, known)
	for _, line := range []string{
		`"new miss": {CeilingPct: 25.0, Reason: "(say why it misses)"}, // bar 20%, n=5`,
		`"known, a little worse": {CeilingPct: 41.9, Reason: "b"}, // bar 35%, n=5`,
		`"known, worse": {CeilingPct: 42.1, Reason: "c"},`,
	} {
		if !strings.Contains(ledger, line) {
			t.Errorf("ledger lacks %q:\n%s", line, ledger)
		}
	}
	for _, gone := range []string{`"ok"`, `"known, fixed"`, `"gone"`, `"nothing ran"`} {
		if strings.Contains(ledger, gone) {
			t.Errorf("ledger keeps %s:\n%s", gone, ledger)
		}
	}
	if !strings.HasPrefix(ledger, "var knownMisses = map[string]accuracy.KnownMiss{\n") || !strings.HasSuffix(ledger, "}\n") {
		t.Errorf("ledger is not a Go declaration:\n%s", ledger)
	}
}
