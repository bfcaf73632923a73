package steptime

import (
	"cmp"
	"math"
	"slices"
	"testing"
)

// handMoEProfile has one bf16 expert format: half the peak with no depth
// fall-off, half the bandwidth, 10 µs per layer, 64-row blocks.
func handMoEProfile() Profile {
	p := handProfile()
	p.MoE = map[string]MoECoeffs{FormatBF16: {Efficiency: 0.5, BandwidthEfficiency: 0.5, OverheadUS: 10, BlockTokens: 64}}
	return p
}

func TestFormulaMoEByHand(t *testing.T) {
	p, h := handMoEProfile(), handHW()
	for _, c := range []struct {
		name  string
		w     MoEWork
		want  float64
		bound Bound
	}{
		// 100 tokens, top-2, experts of 1024 × 512, loads 100, 60, 40, 0:
		// padded to 128 + 64 + 64 = 256 rows, 3 experts touched, 200 pairs.
		// Weights 3·1024·512·2 B = 3,145,728 B at 1e12 B/s.
		//   gate/up: max(2·256·1024·(2·512) / 5e14 = 1.073741824 µs, 2·3,145,728/1e12 = 6.291456 µs)
		//   down:    max(2·256·512·1024 / 5e14 = 0.536870912 µs, 3.145728 µs)
		//   traffic: (100·2·1024·4 + 100·1024·2 + 200·(1024 + 6·512)·2) B
		//          = (819,200 + 204,800 + 1,638,400) / 1e12 = 2.6624 µs
		//   t = 10 + 6.291456 + 3.145728 + 2.6624 = 22.099584 µs: weight streams
		//   (9.437 µs) plus traffic beat the 10 µs overhead: memory-bound.
		{"decode-sized", MoEWork{Tokens: 100, TopK: 2, Hidden: 1024, Inter: 512, Loads: []float64{100, 60, 40, 0}}, 22.099584e-6, BoundMemory},
		// 1,000 tokens on each of 2 experts: 1,000 rows pad to 16 blocks of
		// 64 = 1,024 each, 2,048 in all.
		//   gate/up: 2·2048·1024·1024 / 5e14 = 8.589934592 µs (weights 4.194304 µs)
		//   down:    4.294967296 µs (weights 2.097152 µs)
		//   traffic: (1000·2·1024·4 + 1000·1024·2 + 2000·4096·2) / 1e12 = 26.624 µs
		//   t = 10 + 8.589934592 + 4.294967296 + 26.624 = 49.508901888 µs
		{"compute-sized", MoEWork{Tokens: 1000, TopK: 2, Hidden: 1024, Inter: 512, Loads: []float64{1000, 1000}}, 49.508901888e-6, BoundMemory},
		// Without loads: 200 pairs spread over 4 touched experts, 50 each,
		// padded to 64: 256 rows, 4 experts' weights (4,194,304 B).
		//   gate/up max(1.073741824, 8.388608) µs, down max(0.536870912, 4.194304) µs
		//   traffic as the first case, 2.6624 µs: t = 10 + 8.388608 + 4.194304 + 2.6624 = 25.245312 µs
		{"uniform loads", MoEWork{Tokens: 100, TopK: 2, Hidden: 1024, Inter: 512, ExpertsTouched: 4, Pairs: 200}, 25.245312e-6, BoundMemory},
	} {
		got, bound := FormulaMoE(&p, h, FormatBF16, c.w)
		if !within(got, c.want, 1e-12) || bound != c.bound {
			t.Errorf("%s: %.12g s (%s), want %.12g s (%s)", c.name, got, bound, c.want, c.bound)
		}
	}
	// The experts scale divides the whole layer but its overhead.
	p.Scale.Experts = 2
	w := MoEWork{Tokens: 1000, TopK: 2, Hidden: 1024, Inter: 512, Loads: []float64{1000, 1000}}
	if got, _ := FormulaMoE(&p, h, FormatBF16, w); !within(got, 10e-6+39.508901888e-6/2, 1e-12) {
		t.Errorf("scale.experts 2: %.12g s", got)
	}
}

// TestMoECoeffsFallback: a format without fused-MoE coefficients takes
// its kernel family's, then bf16's, then the dense GEMM's with a 64-row
// block.
func TestMoECoeffsFallback(t *testing.T) {
	p := handMoEProfile()
	if c := p.moeCoeffs(FormatFP8); c != p.MoE[FormatBF16] {
		t.Errorf("fp8 without its own: %+v, want bf16's", c)
	}
	p.MoE[FormatFP8Block] = MoECoeffs{Efficiency: 0.3, BlockTokens: 128}
	if c := p.moeCoeffs(FormatFP8); c != p.MoE[FormatFP8Block] {
		t.Errorf("fp8: %+v, want fp8_block's (its family)", c)
	}
	p.MoE = map[string]MoECoeffs{}
	g := p.GEMM[FormatBF16]
	want := MoECoeffs{Efficiency: g.Efficiency, KHalf: 128, BandwidthEfficiency: g.BandwidthEfficiency, OverheadUS: 8 * g.OverheadUS, BlockTokens: 64}
	if c := p.moeCoeffs(FormatBF16); c != want {
		t.Errorf("no MoE coefficients: %+v, want %+v", c, want)
	}
}

func TestMoELoadsBalanced(t *testing.T) {
	// 10 tokens × top-2 = 20 pairs over 2 EP ranks: 10 for rank 0's 4
	// experts, 2 each and the 2 left over to the first two.
	k := MoEKey{Routing: RoutingBalanced, Experts: 8, TopK: 2, EP: 2}
	if got := MoELoads(k, 10); !slices.Equal(got, []float64{3, 3, 2, 2}) {
		t.Errorf("balanced EP2: %v, want [3 3 2 2]", got)
	}
	// Without EP every expert is local: 20 pairs over 8: [3 3 3 3 2 2 2 2].
	k.EP = 1
	if got := MoELoads(k, 10); !slices.Equal(got, []float64{3, 3, 3, 3, 2, 2, 2, 2}) {
		t.Errorf("balanced: %v", got)
	}
}

// TestMoELoadsPowerLaw: the power-law loads are sorted, capped at the
// token count, and without EP hold every routed pair (as long as the cap
// does not bind); with EP rank 0 holds the hottest expert.
func TestMoELoadsPowerLaw(t *testing.T) {
	for _, routing := range []string{RoutingPowerLaw, RoutingPowerLaw1} {
		for _, tokens := range []int{1, 4, 16, 64, 256, 1024, 8192} {
			k := MoEKey{Routing: routing, Experts: 128, TopK: 8, EP: 1}
			loads := MoELoads(k, tokens)
			if len(loads) != 128 || !slices.IsSortedFunc(loads, func(a, b float64) int { return cmp.Compare(b, a) }) {
				t.Fatalf("%s, %d tokens: %d loads, sorted descending: %v", routing, tokens, len(loads), loads)
			}
			var sum float64
			for _, n := range loads {
				if n < 0 || n > float64(tokens) || n != math.Round(n) {
					t.Errorf("%s, %d tokens: load %g not a whole count in [0, %d]", routing, tokens, n, tokens)
				}
				sum += n
			}
			if loads[0] < float64(tokens) && sum != float64(tokens*8) {
				t.Errorf("%s, %d tokens: %g pairs, want %d", routing, tokens, sum, tokens*8)
			}
			k.EP = 8
			ep := MoELoads(k, tokens)
			if len(ep) != 16 || ep[0] != loads[0] {
				t.Errorf("%s, %d tokens, EP8: %d local loads, hottest %g (want 16, %g)", routing, tokens, len(ep), ep[0], loads[0])
			}
		}
	}
}

func TestMoEWorkForByHand(t *testing.T) {
	// 10 tokens, top-2 of 8 experts of 1024 × 1024 sliced over TP 2: 512
	// columns per GPU; balanced loads [3 3 3 3 2 2 2 2], 20 pairs, 8 experts.
	// FLOPs 2·3·1024·512·20 = 62,914,560; weights 8·3·1024·512·2 B =
	// 25,165,824 B; activations 20·(2·1024 + 3·512)·2 B = 143,360 B.
	k := MoEKey{Format: FormatBF16, Routing: RoutingBalanced, Hidden: 1024, Inter: 1024, TopK: 2, Experts: 8, TP: 2, EP: 1}
	w := MoEWorkFor(k, 10)
	if w.Pairs != 20 || w.ExpertsTouched != 8 || w.Inter != 512 || w.FLOPs != 62914560 || w.WeightBytes != 25165824 || w.ActBytes != 143360 {
		t.Errorf("work %+v", w)
	}
	// Its roofline on the hand GPU: max(62,914,560 / 1e15, 25,309,184 / 2e12) = 12.654592 µs.
	if got := moeIdeal(k, 10, handHW()); !within(got, 12.654592e-6, 1e-12) {
		t.Errorf("moeIdeal %g s, want 12.654592 µs", got)
	}
}
