package models

import (
	"fmt"
	"math"
	"testing"
)

// TestStepCostByHand: one Llama-3.1-8B decode (context 1,000) on one GPU
// in bf16, op by op. L = 32 layers, h = 4096, 32 query and 8 KV heads of
// 128 (q 4096 wide, k and v 1024 each), MLP 14,336, vocabulary 128,256
// (already a multiple of 64).
func TestStepCostByHand(t *testing.T) {
	m := llama31_8B()
	var b Batch
	b.AddDecode(1000, 0)
	c := m.NewCostModel(m.DefaultPrecision(), 1).Step(&b)
	for _, w := range []struct {
		op                   OpKind
		flops, weights, data float64
		tokens, count        int
	}{
		// qkv: 2·32·4096·(4096 + 2·1024) FLOPs; as many bf16 weight bytes;
		// activations 32·(4096 + 4096 + 2048)·2 B.
		{OpQKVProj, 1610612736, 1610612736, 655360, 1, 32},
		// o_proj: 2·32·4096·4096; activations 32·(4096 + 4096)·2.
		{OpOProj, 1073741824, 1073741824, 524288, 1, 32},
		// gate_up + down: 2·32·3·4096·14336; activations 32·(2·4096 + 3·14336)·2.
		{OpMLP, 11274289152, 11274289152, 3276800, 1, 64},
		// LM head on the one sampled position: 2·4096·128256; its input
		// 4096·2 B and fp32 logits 128256·4 B.
		{OpLMHead, 1050673152, 1050673152, 521216, 1, 1},
		// Decode attention: 32 layers × 1,000 keys × 4·32·128 FLOPs
		// (QK and PV); KV 32·1000·(2·8·128·2 B) = 131,072,000 B, plus the
		// query read and output write 32·2·4096·2 B = 524,288 B.
		{OpAttnDecode, 524288000, 0, 131596288, 1, 32},
		// Norms, rotary, residuals, activation: per layer two fused add +
		// RMSNorm (8·4096) and rotary 2·(32 + 8)·128 = 10,240, the SiLU-and-mul
		// 3·14336, and the embedding 4096: (32·(32768 + 10240) + 32·43008 +
		// 4096)·2 B = 5,513,216 B in 4·32 kernels.
		{OpElementwise, 0, 0, 5513216, 1, 128},
	} {
		got := c[w.op]
		if got.FLOPs != w.flops || got.WeightBytes != w.weights || got.DataBytes != w.data || got.Tokens != w.tokens || got.Count != w.count {
			t.Errorf("%s: %+v, want FLOPs %g, weights %g B, data %g B, %d tokens, %d kernels", w.op, got, w.flops, w.weights, w.data, w.tokens, w.count)
		}
	}
	for _, op := range []OpKind{OpAttnPrefill, OpRouter, OpExperts, OpAllReduce, OpAllToAll} {
		if c[op] != (OpCost{}) {
			t.Errorf("%s: %+v, want nothing (a dense model's decode on one GPU)", op, c[op])
		}
	}
	// 15,533,604,864 FLOPs: 2 × the 7.5 B non-embedding parameters plus
	// attention.
	if got := c.FLOPs(); got != 15533604864 {
		t.Errorf("total FLOPs %g, want 15,533,604,864", got)
	}
	if got := c[OpQKVProj].Bytes(); got != 1610612736+655360 {
		t.Errorf("Bytes %g, want weights + data", got)
	}
}

// TestStepCostAllReduceByHand: at TP2 each layer all-reduces the hidden
// state twice (1·4096·2 B each: 32·2·8,192 = 524,288 B) and the sampled
// logits are gathered in fp32 (64,128 rows of the padded vocabulary per
// rank · 4 B = 256,512 B): 2·32 + 1 collectives.
func TestStepCostAllReduceByHand(t *testing.T) {
	m := llama31_8B()
	var b Batch
	b.AddDecode(1000, 0)
	c := m.NewCostModel(m.DefaultPrecision(), 2).Step(&b)
	if got := c[OpAllReduce]; got.DataBytes != 780800 || got.Count != 65 || got.FLOPs != 0 {
		t.Errorf("all-reduce %+v, want 780,800 B in 65 collectives", got)
	}
	// Half the qkv work per GPU: 2·32·4096·(2048 + 2·512).
	if got := c[OpQKVProj].FLOPs; got != 805306368 {
		t.Errorf("qkv FLOPs at TP2 %g, want 805,306,368", got)
	}
}

func TestBatchPairsByHand(t *testing.T) {
	var b Batch
	// 4 new tokens after 6 cached: the queries see 7, 8, 9, 10 keys =
	// 4·6 + 4·5/2 = 34 pairs; KV 10 tokens.
	b.AddPrefill(4, 6, 0, false)
	if b.PrefillPairs != 34 || b.PrefillKV != 10 || b.PrefillTokens != 4 || b.PrefillChunks != 1 || b.Sampled != 0 {
		t.Errorf("prefill %+v", b)
	}
	b.AddPrefill(0, 6, 0, true) // an empty chunk adds nothing
	if b.PrefillChunks != 1 || b.Sampled != 0 {
		t.Errorf("empty chunk counted: %+v", b)
	}
	// A 4-token window: 10 fresh tokens see 1, 2, 3, 4, 4, 4, 4, 4, 4, 4 = 34 keys.
	for _, c := range []struct{ q, c, w, want int }{
		{10, 0, 4, 34},
		{5, 10, 4, 20}, // every query sees the whole window
		{3, 1, 8, 9},   // inside the window: 2 + 3 + 4
		{1, 0, 1, 1},
	} {
		if got := windowPairs(c.q, c.c, c.w); got != float64(c.want) {
			t.Errorf("windowPairs(%d, %d, %d) = %g, want %d", c.q, c.c, c.w, got, c.want)
		}
	}
	var w Batch
	w.AddPrefill(10, 0, 4, true)
	// KV within the window: min(0 + 10, 4 + 10) = 10; sampled once (last).
	if w.PrefillPairs != 55 || w.PrefillPairsSWA != 34 || w.PrefillKVSWA != 10 || w.Sampled != 1 {
		t.Errorf("windowed prefill %+v", w)
	}
	// Verification of 3 drafts after 100 tokens: the decode token's context
	// is 103 (its own query sees them all); the drafts' queries see 100,
	// 101, 102 keys: 303 pairs; 4 positions sampled.
	var v Batch
	v.AddVerify(100, 3, 0)
	if v.DecodeContext != 103 || v.SpecPairs != 303 || v.SpecTokens != 3 || v.Sampled != 4 || v.Tokens() != 4 {
		t.Errorf("verify %+v", v)
	}
	var d Batch
	d.AddDraftInput(100, 4, 0) // 4 tokens in, one scored
	if d.Tokens() != 4 || d.Sampled != 1 {
		t.Errorf("draft input %+v", d)
	}
}

func TestExpertsTouchedByHand(t *testing.T) {
	m := qwen3_30B_A3B() // 128 experts, top 8
	c := m.NewCostModel(m.DefaultPrecision(), 1)
	for _, w := range []struct {
		n    int
		want float64
	}{
		{0, 0},
		{1, 8},                                // 128·(1 − 120/128)
		{2, 128 * (1 - 0.87890625)},           // 128·(1 − (120/128)²) = 15.5
		{4096, 128 * (1 - pow(0.9375, 4096))}, // all of them
	} {
		if got := c.ExpertsTouched(w.n); !near(got, w.want) {
			t.Errorf("ExpertsTouched(%d) = %g, want %g", w.n, got, w.want)
		}
	}
	// Expert parallel over 8 GPUs at TP2 (4 data-parallel ranks): each GPU
	// holds 16 experts and sees 4 ranks' tokens: 16·(1 − 0.9375⁴).
	ep := m.NewCostModelEP(m.DefaultPrecision(), 2, 8)
	if got, want := ep.ExpertsTouched(1), 16*(1-0.7724761962890625); !near(got, want) {
		t.Errorf("EP ExpertsTouched(1) = %g, want %g", got, want)
	}
	// Its exchange: 48 MoE layers × all-gather and reduce-scatter of 7/8 of
	// the 4 ranks' 10 tokens × 2048 × 2 B each way.
	var b Batch
	b.AddDecodes(10, 10000, 0)
	if got, want := ep.Step(&b)[OpAllToAll].DataBytes, 2*48*0.875*10*4*2048*2.0; got != want {
		t.Errorf("EP all-to-all %g B, want %g", got, want)
	}
}

func pow(x float64, n int) float64 {
	out := 1.0
	for range n {
		out *= x
	}
	return out
}

func near(a, b float64) bool {
	return a == b || math.Abs(a-b) <= 1e-12*math.Max(math.Abs(a), math.Abs(b))
}

// mixedBatch is a step of 3 prefill chunks and 40 decodes over the
// window w.
func mixedBatch(w int) *Batch {
	var b Batch
	b.AddPrefill(512, 0, w, true)
	b.AddPrefill(256, 3000, w, false)
	b.AddPrefill(100, 7000, w, true)
	for i := range 40 {
		b.AddDecode(100+i*250, w)
	}
	return &b
}

// TestStepCostConservedAcrossTP: the GPUs of a tensor-parallel group do
// the work of one GPU between them: TP × the per-GPU FLOPs and bytes of
// every split op (projections, MLP, routed experts, attention, LM head,
// KV reads) equal TP1's while the KV heads divide. Beyond the KV heads
// they are replicated, so the group reads more. The router and the
// norms are replicated on every rank by design and are left out.
func TestStepCostConservedAcrossTP(t *testing.T) {
	split := []OpKind{OpQKVProj, OpOProj, OpMLP, OpExperts, OpAttnPrefill, OpAttnDecode, OpLMHead}
	for _, c := range []struct {
		m   *Model
		tps []int
	}{
		{llama31_8B(), []int{2, 4, 8}},
		{llama2_70B(), []int{2, 4, 8}},
		{gemma2_9B(), []int{2, 4, 8}},
		{qwen3_30B_A3B(), []int{2, 4}},
		{mixtral8x7B(), []int{2, 4, 8}},
	} {
		b := mixedBatch(c.m.SlidingWindow)
		one := c.m.NewCostModel(c.m.DefaultPrecision(), 1).Step(b)
		for _, tp := range c.tps {
			got := c.m.NewCostModel(c.m.DefaultPrecision(), tp).Step(b)
			for _, op := range split {
				n := float64(tp)
				name := fmt.Sprintf("%s TP%d %s", c.m.ID, tp, op)
				if !near(n*got[op].FLOPs, one[op].FLOPs) || !near(n*got[op].WeightBytes, one[op].WeightBytes) {
					t.Errorf("%s: %g × (%g FLOPs, %g weight B) ≠ TP1's %g FLOPs, %g B", name, n, got[op].FLOPs, got[op].WeightBytes, one[op].FLOPs, one[op].WeightBytes)
				}
				if op == OpAttnDecode || op == OpAttnPrefill {
					// The KV share of the data: kv tokens × bytes per token per layer.
					kv := func(cm *CostModel, cost Cost) float64 {
						return cost[op].DataBytes - cm.L*float64(cost[op].Tokens)*2*cm.qActPerTok
					}
					cm1, cmt := c.m.NewCostModel(c.m.DefaultPrecision(), 1), c.m.NewCostModel(c.m.DefaultPrecision(), tp)
					if !near(n*kv(cmt, got), kv(cm1, one)) {
						t.Errorf("%s: KV bytes %g × %g ≠ TP1's %g", name, n, kv(cmt, got), kv(cm1, one))
					}
				}
			}
		}
	}
	// Qwen3-30B-A3B has 4 KV heads: at TP8 each rank holds one, so the
	// group holds every KV head twice.
	m := qwen3_30B_A3B()
	b := mixedBatch(0)
	one := m.NewCostModel(m.DefaultPrecision(), 1).Step(b)
	eight := m.NewCostModel(m.DefaultPrecision(), 8).Step(b)
	if 8*eight[OpQKVProj].WeightBytes <= one[OpQKVProj].WeightBytes || 8*eight[OpAttnDecode].DataBytes <= one[OpAttnDecode].DataBytes {
		t.Errorf("replicated KV heads: TP8 group reads %g qkv B, %g KV B; TP1 %g, %g", 8*eight[OpQKVProj].WeightBytes, 8*eight[OpAttnDecode].DataBytes, one[OpQKVProj].WeightBytes, one[OpAttnDecode].DataBytes)
	}
}

// TestStepCostMonotonic: more tokens or longer contexts never cost fewer
// FLOPs or bytes, op by op.
func TestStepCostMonotonic(t *testing.T) {
	for _, m := range []*Model{llama31_8B(), mistral7B(), gemma2_9B(), qwen3_30B_A3B(), deepseekV3(), gptOSS120B()} {
		c := m.NewCostModel(m.DefaultPrecision(), 2)
		w := m.SlidingWindow
		check := func(what string, prev, cur Cost) {
			for op := range NumOpKinds {
				if cur[op].FLOPs < prev[op].FLOPs || cur[op].Bytes() < prev[op].Bytes() {
					t.Errorf("%s, %s: %s costs %g FLOPs, %g B; less costed %g, %g", m.ID, what, op, cur[op].FLOPs, cur[op].Bytes(), prev[op].FLOPs, prev[op].Bytes())
				}
			}
		}
		var prev Cost
		for n := 1; n <= 4096; n *= 2 {
			var b Batch
			b.AddPrefill(n, 0, w, true)
			cur := c.Step(&b)
			check(fmt.Sprintf("prefill of %d tokens", n), prev, cur)
			prev = cur
		}
		prev = Cost{}
		for ctx := 1; ctx <= 131072; ctx *= 4 {
			var b Batch
			for range 16 {
				b.AddDecode(ctx, w)
			}
			b.AddPrefill(128, ctx, w, true)
			cur := c.Step(&b)
			check(fmt.Sprintf("context %d", ctx), prev, cur)
			prev = cur
		}
	}
}

// TestShapesSplitAcrossTP: the per-GPU GEMM shapes of TP t hold 1/t of
// every weight matrix (N·K·t is TP1's), the attention heads divide, and
// only a split model all-reduces (twice a layer).
func TestShapesSplitAcrossTP(t *testing.T) {
	m := llama31_8B()
	p := m.DefaultPrecision()
	size := func(s Shapes) map[string]int {
		out := map[string]int{}
		for _, g := range s.GEMMs {
			out[g.Name] = g.N * g.K * g.Count
		}
		return out
	}
	one := m.Shapes(p, 1, 1)
	if one.AllReducesPerPass != 0 || one.Attn.Heads != 32 || one.Attn.KVHeads != 8 {
		t.Errorf("TP1 shapes %+v", one)
	}
	// qkv_proj: (32 + 2·8)·128 = 6144 columns of 4096; lm_head 128,256 rows.
	if s := size(one); s["qkv_proj"] != 6144*4096*32 || s["lm_head"] != 128256*4096 || s["gate_up_proj"] != 2*14336*4096*32 {
		t.Errorf("TP1 GEMM sizes %v", s)
	}
	for _, tp := range []int{2, 4, 8} {
		sh := m.Shapes(p, tp, tp)
		for name, n := range size(sh) {
			if n*tp != size(one)[name] {
				t.Errorf("TP%d %s: %d × %d elements, TP1 %d", tp, name, n, tp, size(one)[name])
			}
		}
		if sh.AllReducesPerPass != 2*32 || sh.Attn.Heads != 32/tp || sh.Attn.KVHeads != 8/tp {
			t.Errorf("TP%d: %d all-reduces, %d/%d heads", tp, sh.AllReducesPerPass, sh.Attn.Heads, sh.Attn.KVHeads)
		}
	}
	// A MoE model's experts: sliced by TP, or whole over an EP group.
	q := qwen3_30B_A3B()
	if s := q.Shapes(q.DefaultPrecision(), 2, 2).MoE; s.TP != 2 || s.EP != 1 || s.Experts != 128 || s.Inter != 768 {
		t.Errorf("TP2 experts %+v", s)
	}
	if s := q.Shapes(q.DefaultPrecision(), 2, 8).MoE; s.TP != 1 || s.EP != 8 {
		t.Errorf("EP8 experts %+v", s)
	}
}
