package steptime

import (
	"math"
	"sort"
)

// MLAModuleDims are the multi-head latent attention dimensions the MLA
// module tables were measured at: DeepSeek-V3's (AIConfigurator's
// collect_mla_module_v3.py builds DeepseekV2MLAAttention with that
// checkpoint's config). Kimi-K2 has the same; a model with other
// dimensions is priced by the formula.
var MLAModuleDims = MLADims{Hidden: 7168, QLoRARank: 1536, KVLoRARank: 512, QKNopeHeadDim: 128, QKRopeHeadDim: 64, VHeadDim: 128}

// MLADims are an MLA attention block's sizes.
type MLADims struct {
	Hidden, QLoRARank, KVLoRARank, QKNopeHeadDim, QKRopeHeadDim, VHeadDim int
}

// MLAKey identifies one measured MLA module configuration: the KV-cache
// type, the projections' kernel format and the query heads on one GPU.
type MLAKey struct {
	KVDType string // bf16 | fp8
	GEMM    string // bf16 | fp8_block | nvfp4
	Heads   int
}

// mlaTable is one (context or generation, KV type, projection format)
// table: a (batch, length) grid per measured head count.
type mlaTable struct {
	grids map[int]*grid2
	heads []int   // sorted
	floor float64 // the table's least latency (its launch floor)
}

func mlaKind(context bool) string {
	if context {
		return "context"
	}
	return "generation"
}

// AddMLAModule records one MLA module call (vLLM's whole
// DeepseekV2MLAAttention forward: the fused q_a/kv_a projection, the
// norms, q_b, the kv_b or absorbed BMMs, rotary, the MLA kernel and
// o_proj) over batch sequences: prompts of length tokens (context), or one
// decode token each over length KV tokens including it (generation).
func (db *KernelDB) AddMLAModule(context bool, k MLAKey, batch, length int, sec float64) {
	tk := [2]string{mlaKind(context), k.KVDType + "/" + k.GEMM}
	t := db.mla[tk]
	if t == nil {
		t = &mlaTable{grids: map[int]*grid2{}}
		db.mla[tk] = t
	}
	addGrid(t.grids, k.Heads, batch, length, sec)
}

func (t *mlaTable) finish() {
	hs := map[int]bool{}
	t.floor = math.Inf(1)
	for h, g := range t.grids {
		hs[h] = true
		bs := map[int]bool{}
		for b, c := range g.rows {
			c.finish()
			bs[b] = true
			for _, y := range c.Y {
				t.floor = math.Min(t.floor, y)
			}
		}
		g.batches = sortedKeys(bs)
	}
	t.heads = sortedKeys(hs)
}

// HasMLAModule reports whether the database holds MLA module rows of
// both kinds for a KV-cache type and projection format.
func (db *KernelDB) HasMLAModule(kvDType, gemm string) bool {
	return db.mla[[2]string{"context", kvDType + "/" + gemm}] != nil && db.mla[[2]string{"generation", kvDType + "/" + gemm}] != nil
}

// MLAModuleFloor is the least latency of a table: what its smallest
// shapes take, the time of launching the module's kernels when the
// collector ran them eagerly.
func (db *KernelDB) MLAModuleFloor(context bool, kvDType, gemm string) float64 {
	if t := db.mla[[2]string{mlaKind(context), kvDType + "/" + gemm}]; t != nil {
		return t.floor
	}
	return 0
}

// LookupMLAModule returns the measured MLA module time for heads query
// heads on one GPU over batch sequences of length (the prompt length for
// context, the KV length for generation; fractional values stand for a
// mix with the same work), interpolated on utilisation over batch and
// length within a measured head count and linearly between the two
// measured head counts around heads (beyond the largest, its utilisation
// carries to heads). roof is the GPU's roof for the projections' format;
// wb is one projection weight's bytes, kvBytes one KV element's.
func (db *KernelDB) LookupMLAModule(context bool, k MLAKey, batch, length float64, roof Roof, wb float64) (float64, bool) {
	t := db.mla[[2]string{mlaKind(context), k.KVDType + "/" + k.GEMM}]
	if t == nil || len(t.heads) == 0 || batch < 1 || length < 1 || k.Heads < 1 {
		return 0, false
	}
	kvb := 2.0
	if k.KVDType == "fp8" {
		kvb = 1
	}
	at := func(h int) float64 {
		ideal := func(b, x float64) float64 { return mlaIdeal(context, MLAModuleDims, h, b, x, roof, wb, kvb) }
		return t.grids[h].at(batch, length, ideal)
	}
	j := sort.SearchInts(t.heads, k.Heads)
	switch {
	case j < len(t.heads) && t.heads[j] == k.Heads:
		return at(k.Heads), true
	case j == len(t.heads):
		hi := t.heads[j-1]
		return at(hi) * mlaIdeal(context, MLAModuleDims, k.Heads, batch, length, roof, wb, kvb) /
			mlaIdeal(context, MLAModuleDims, hi, batch, length, roof, wb, kvb), true
	case j == 0:
		return at(t.heads[0]), true
	}
	lo, hi := t.heads[j-1], t.heads[j]
	w := float64(k.Heads-lo) / float64(hi-lo)
	return at(lo)*(1-w) + at(hi)*w, true
}

// mlaIdeal is the roofline time of an MLA module with heads query heads
// of dims d over batch sequences of length x: the projections' weights
// streamed once and their FLOPs for every token, the latent KV read
// (generation) or the causal attention FLOPs (context).
func mlaIdeal(context bool, d MLADims, heads int, batch, x float64, roof Roof, wb, kvb float64) float64 {
	h := float64(heads)
	qk := float64(d.QKNopeHeadDim + d.QKRopeHeadDim)
	lat := float64(d.KVLoRARank + d.QKRopeHeadDim)
	params := float64(d.Hidden)*(float64(d.QLoRARank)+lat) + float64(d.QLoRARank)*h*qk +
		float64(d.KVLoRARank)*h*float64(d.QKNopeHeadDim+d.VHeadDim) + h*float64(d.VHeadDim)*float64(d.Hidden)
	if context {
		tokens := batch * x
		pairs := batch * x * (x + 1) / 2
		flops := 2*tokens*params + 2*h*pairs*(qk+float64(d.VHeadDim))
		bytes := params*wb + tokens*(4*float64(d.Hidden)+lat*kvb)
		return roof.time(flops, bytes)
	}
	flops := 2*batch*params + 2*batch*h*x*(lat+float64(d.KVLoRARank))
	bytes := params*wb + batch*x*lat*kvb
	return roof.time(flops, bytes)
}
