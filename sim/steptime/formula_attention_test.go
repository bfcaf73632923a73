package steptime

import "testing"

// handAttention is a Llama-3.1-8B layer on one GPU: 32 query heads, 8 KV
// heads of 128, bf16 KV.
func handAttention() AttentionShape {
	return AttentionShape{Key: AttentionKey{KVDType: "bf16", HeadDim: 128, Heads: 32, KVHeads: 8}, KVBytes: 2}
}

// handAttentionProfile has round attention coefficients: decode at half
// the bandwidth, 7 µs per call, 2 µs per thread block, a block streaming at
// its SM's share of the bandwidth, a 2 µs combine; prefill at half the
// tensor rate with no softmax term, 8 µs per call, 1 µs per block, half the
// bandwidth for queries and outputs, the plain maximum of parallel and tail
// time.
func handAttentionProfile() Profile {
	p := handProfile()
	p.Attention = AttentionCoeffs{
		Prefill: map[string]PrefillCoeffs{"bf16": {TensorEfficiency: 0.5, OverheadUS: 8, BlockUS: 1, BandwidthEfficiency: 0.5}},
		Decode:  map[string]DecodeCoeffs{"bf16": {BandwidthEfficiency: 0.5, OverheadUS: 7, BlockUS: 2, BlockBandwidth: 1, CombineUS: 2, SplitKV: true}},
	}
	return p
}

func TestFormulaDecodeAttentionByHand(t *testing.T) {
	p, h := handAttentionProfile(), handHW()
	swa := handAttention()
	swa.Key.Window = 4096
	for _, c := range []struct {
		name          string
		shape         AttentionShape
		batch, tokens float64
		blockBW       float64
		want          float64
	}{
		// 64 sequences × 2,048 KV tokens: KV 64·8·2048·128·2 (K and V)·2 B =
		// 536,870,912 B, queries 64·32·128·4 = 1,048,576 B: 537.919488 µs at
		// 1e12 B/s. 512 (sequence, KV head) blocks fill the 100 SMs: no split;
		// the longest block (16 × 128-token tiles, 1,048,576 B) at one SM's
		// share (1e10 B/s) takes 104.8576 µs, under the stream. Fixed: 7 µs +
		// 2 µs·512/100 = 17.24 µs. Total 555.159488 µs.
		{"full batch", handAttention(), 64, 64 * 2048, 1, 555.159488e-6},
		// One sequence of 32,768 tokens: 8 blocks for 100 SMs, so the KV is
		// split ceil(100/8) = 13 ways (of 256 tiles). KV 8·32768·128·4 =
		// 134,217,728 B + queries 16,384 B: 134.234112 µs. Longest block
		// ceil(256/13) = 20 tiles, 1,310,720 B at 1e10 B/s: 131.072 µs, under
		// it. Fixed 7 + 2·8·13/100 = 9.08 µs, + combine 2 µs. Total 145.314112 µs.
		{"split KV", handAttention(), 1, 32768, 1, 145.314112e-6},
		// The same with blocks streaming at half an SM's share: the longest
		// block binds: 1,310,720 B / 5e9 B/s = 262.144 µs, + 11.08 µs.
		{"block-bound", handAttention(), 1, 32768, 0.5, 273.224e-6},
		// A 4,096-token window over 32,768 tokens reads the 32 whole tiles
		// that overlap it (floor(32767/128) − floor(28672/128) + 1 = 255 −
		// 224 + 1), 4,096 tokens: KV 16,777,216 B + 16,384 B = 16.7936 µs;
		// split 13 ways, the longest block ceil(32/13) = 3 tiles, 196,608 B
		// at 1e10 B/s = 19.6608 µs binds. Total 11.08 + 19.6608 = 30.7408 µs.
		{"sliding window", swa, 1, 32768, 1, 30.7408e-6},
	} {
		d := p.Attention.Decode["bf16"]
		d.BlockBandwidth = c.blockBW
		p.Attention.Decode["bf16"] = d
		got, bound := FormulaDecodeAttention(&p, h, c.shape, c.batch, c.tokens)
		if !within(got, c.want, 1e-12) || bound != BoundMemory {
			t.Errorf("%s: %.12g s (%s), want %.12g s (memory)", c.name, got, bound, c.want)
		}
	}
	// fp8 KV halves the KV bytes (its coefficients fall back to bf16's):
	// 268,435,456 + 1,048,576 B = 269.484032 µs, + 17.24 µs.
	fp8 := handAttention()
	fp8.Key.KVDType, fp8.KVBytes = "fp8", 1
	if got, _ := FormulaDecodeAttention(&p, h, fp8, 64, 64*2048); !within(got, 286.724032e-6, 1e-12) {
		t.Errorf("fp8 KV: %.12g s, want 286.724032 µs", got)
	}
	if got, _ := FormulaDecodeAttention(&p, h, handAttention(), 0, 100); got != 0 {
		t.Errorf("no sequences: %g s", got)
	}
}

func TestCausalTilesByHand(t *testing.T) {
	for _, c := range []struct {
		name                   string
		s, group, window       float64
		total, longest, blocks float64
	}{
		// 256 tokens, one head per block: 2 query blocks walking 1 and 2 KV
		// tiles (causal): 3 tiles, the longest 2.
		{"causal", 256, 1, 0, 3, 2, 2},
		// Four query heads packed per block (GQA): 1,024 rows in 8 blocks of
		// 32 tokens; 4 blocks share each KV tile: Σ ceil(j/4) for j = 1…8 =
		// 1+1+1+1+2+2+2+2 = 12 tiles; the longest walks both.
		{"packed GQA", 256, 4, 0, 12, 2, 8},
		// A one-tile prompt: one block, one tile.
		{"short", 32, 1, 0, 1, 1, 1},
		// 1,024 tokens within a 256-token window: 8 blocks; a block inside
		// the band walks ceil(256/128) + 1 = 3 tiles: 1 + 2 + 3 for the first
		// three (Σ = 4.5 + 1.5 = 6) and 3 each for the other five: 21.
		{"window", 1024, 1, 256, 21, 3, 8},
	} {
		total, longest, blocks := causalTiles(c.s, c.group, c.window)
		if total != c.total || longest != c.longest || blocks != c.blocks {
			t.Errorf("%s: %g, %g, %g tiles; want %g, %g, %g", c.name, total, longest, blocks, c.total, c.longest, c.blocks)
		}
	}
}

func TestFormulaContextAttentionByHand(t *testing.T) {
	p, h := handAttentionProfile(), handHW()
	// One fresh 256-token prompt: 256·257/2 = 32,896 pairs, equivalent
	// length (−1 + √(1 + 8·32,896))/2 = (−1 + 513)/2 = 256.
	// Per score 4·128 FLOP / (1e15 · 0.5) = 1.024 ps. 32 heads × 3 tiles ×
	// 128² scores = 1,572,864 scores: 1.610612736 µs, + 64 blocks × 1 µs / 100
	// SMs = 2.250612736 µs in parallel. The longest block (2 tiles) on one
	// SM: 2·128²·1.024 ps·100 + 1 µs = 4.3554432 µs, which binds.
	// Queries and outputs: 256·32·128·4 B / 1e12 B/s = 4.194304 µs.
	// Total 8 + 4.3554432 + 4.194304 = 16.5497472 µs, launch-bound.
	a := handAttention()
	got, bound := FormulaContextAttention(&p, h, a, 1, 256*257/2, 256)
	if want := 16.5497472e-6; !within(got, want, 1e-12) || bound != BoundOverhead {
		t.Errorf("256-token prompt: %.12g s (%s), want %.12g s (launch/cpu)", got, bound, want)
	}
	// With pack_gqa the same prompt has the same scores and blocks (12
	// tiles × 8 KV heads = 3 × 32): the same time.
	c := p.Attention.Prefill["bf16"]
	c.PackGQA = true
	p.Attention.Prefill["bf16"] = c
	if packed, _ := FormulaContextAttention(&p, h, a, 1, 256*257/2, 256); !within(packed, got, 1e-12) {
		t.Errorf("packed GQA: %.12g s, want %.12g s", packed, got)
	}
	// A 32-token prompt: packing fills one block with 4 heads' queries,
	// 8 units × 1 tile instead of 32: scores 131,072 × 1.024 ps = 0.134217728
	// µs, + 8 blocks·1 µs/100 = 0.214217728 µs; the tail 128²·1.024 ps·100 +
	// 1 µs = 2.6777216 µs binds; queries 32·32·128·4 / 1e12 = 0.524288 µs.
	// Total 8 + 2.6777216 + 0.524288 = 11.2020096 µs.
	if short, _ := FormulaContextAttention(&p, h, a, 1, 32*33/2, 32); !within(short, 11.2020096e-6, 1e-12) {
		t.Errorf("32-token packed prompt: %.12g s, want 11.2020096 µs", short)
	}
	// One-token prompts are decodes: 4 of them over 4 KV tokens.
	dec, _ := FormulaDecodeAttention(&p, h, a, 4, 4)
	if one, _ := FormulaContextAttention(&p, h, a, 4, 4, 4); one != dec {
		t.Errorf("one-token prompts: %g s, want the decode kernel's %g s", one, dec)
	}
}

func TestEquivalentLength(t *testing.T) {
	for _, c := range []struct{ pairs, batch, want float64 }{
		{32896, 1, 256},     // 256·257/2
		{2 * 32896, 2, 256}, // two such prompts
		{1, 1, 1},
		{0, 1, 0},
		{10, 0, 0},
	} {
		if got := equivalentLength(c.pairs, c.batch); !within(got, c.want, 1e-12) && got != c.want {
			t.Errorf("equivalentLength(%g, %g) = %g, want %g", c.pairs, c.batch, got, c.want)
		}
	}
}

// TestAttentionMonotonic: more context or more sequences never make
// attention faster, on the hand profile and on every measured GPU's
// fitted one. Prefill is checked from two-token prompts: a one-token
// prompt runs on the decode kernel (as in vLLM), whose fixed cost is above
// the prefill kernel's for a two-token prompt.
func TestAttentionMonotonic(t *testing.T) {
	profiles := map[string]Profile{"hand": handAttentionProfile()}
	for _, sys := range MeasuredSystems {
		p, _ := measuredProfile(sys)
		profiles[sys] = p
	}
	h := handHW()
	for name, p := range profiles {
		a := handAttention()
		for _, batch := range []float64{1, 8, 64, 256} {
			prevD, prevP := 0.0, 0.0
			for l := 1.0; l <= 131072; l *= 2 {
				d, _ := FormulaDecodeAttention(&p, h, a, batch, batch*l)
				pf, _ := FormulaContextAttention(&p, h, a, batch, batch*l*(l+1)/2, batch*l)
				if l == 1 {
					pf = 0
				}
				if d < prevD || pf < prevP {
					t.Errorf("%s, %g sequences: %g-token context %g s decode, %g s prefill; shorter took %g, %g", name, batch, l, d, pf, prevD, prevP)
				}
				prevD, prevP = d, pf
			}
		}
		for _, l := range []float64{128, 4096} {
			prev := 0.0
			for batch := 1.0; batch <= 512; batch++ {
				d, _ := FormulaDecodeAttention(&p, h, a, batch, batch*l)
				if d < prev {
					t.Errorf("%s: %g sequences × %g tokens decode %g s, one fewer took %g s", name, batch, l, d, prev)
				}
				prev = d
			}
		}
	}
}
