package kerneldb

import "testing"

// epInvariant flags a configuration whose EP rows (ep ≥ 4) take as long
// as its unsplit rows — the rank ran the whole layer — and keeps one whose
// EP rows scale, or that has too few shared token counts to tell.
func TestEPInvariant(t *testing.T) {
	rows := func(dtype string, ep int64, ratio float64, tokens ...int64) []moeRow {
		var out []moeRow
		for _, n := range tokens {
			base := moeRow{MoEDType: dtype, NumTokens: n, HiddenSize: 2880, InterSize: 2880, TopK: 4, NumExperts: 128,
				MoETPSize: 1, MoEEPSize: 1, Distribution: "power_law_1.2", Latency: float64(n)}
			split := base
			split.MoEEPSize, split.Latency = ep, base.Latency*ratio
			out = append(out, base, split)
		}
		return out
	}
	var all []moeRow
	all = append(all, rows("w4a16_mxfp4", 8, 1.0, 1, 8, 64, 512)...) // EP rows no faster: invariant
	all = append(all, rows("fp8", 8, 0.2, 1, 8, 64, 512)...)         // EP scales
	all = append(all, rows("fp8_block", 8, 1.0, 1, 8, 64)...)        // three shared counts: undecided
	all = append(all, rows("bf16", 2, 1.0, 1, 8, 64, 512)...)        // ep 2 is not judged
	got := epInvariant(all)
	want := map[string]bool{"w4a16_mxfp4": true}
	for _, d := range []string{"w4a16_mxfp4", "fp8", "fp8_block", "bf16"} {
		g := epGroupKey{dtype: d, dist: "power_law_1.2", h: 2880, inter: 2880, topk: 4, e: 128, tp: 1}
		if got[g] != want[d] {
			t.Errorf("%s: invariant %v, want %v", d, got[g], want[d])
		}
	}
	if len(got) != 1 {
		t.Errorf("%d invariant configurations, want 1: %v", len(got), got)
	}
}
