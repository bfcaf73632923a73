package models

import (
	"math"

	"github.com/headroom-sim/headroom/hardware"
)

// OpKind names one kind of operation in a forward pass.
type OpKind int

// The operations of a decoder forward pass, summed over layers.
const (
	OpQKVProj     OpKind = iota // query/key/value projections (MLA: q_a, q_b, kv_a, kv_b)
	OpAttnPrefill               // attention of prefill chunks over their context
	OpAttnDecode                // attention of decode tokens over their context
	OpOProj                     // attention output projection
	OpMLP                       // dense gated MLP: gate_up and down
	OpRouter                    // MoE router
	OpExperts                   // MoE routed and shared experts
	OpLMHead                    // logits of the sampled positions
	OpElementwise               // norms, rotary, residual adds, activation, embedding lookup
	OpAllReduce                 // tensor-parallel all-reduces (bytes cross the scale-up link)
	OpAllToAll                  // expert-parallel token exchange (all-gather + reduce-scatter)
	NumOpKinds
)

var opNames = [NumOpKinds]string{
	"qkv_proj", "attention_prefill", "attention_decode", "o_proj", "mlp",
	"moe_router", "moe_experts", "lm_head", "elementwise", "all_reduce", "all_to_all",
}

func (k OpKind) String() string {
	if k < 0 || k >= NumOpKinds {
		return "unknown"
	}
	return opNames[k]
}

// IsGEMM reports whether the op is a weight matmul whose efficiency depends
// on the token count.
func (k OpKind) IsGEMM() bool {
	switch k {
	case OpQKVProj, OpOProj, OpMLP, OpRouter, OpExperts, OpLMHead:
		return true
	}
	return false
}

// OpCost is the work of one operation kind in one step on one GPU.
type OpCost struct {
	FLOPs float64
	// WeightBytes are weights read from device memory.
	WeightBytes float64
	// DataBytes are activations and KV cache read or written, or, for
	// OpAllReduce, the bytes each rank contributes to the collectives.
	DataBytes float64
	// Tokens is the GEMM M dimension (rows multiplied).
	Tokens int
	// Count is how many kernels (or collectives) the op launches.
	Count int
}

// Bytes is all device-memory traffic of the op.
func (c OpCost) Bytes() float64 { return c.WeightBytes + c.DataBytes }

// Cost is the work of one forward pass, by op kind.
type Cost [NumOpKinds]OpCost

// FLOPs sums all ops.
func (c *Cost) FLOPs() float64 {
	var f float64
	for i := range c {
		f += c[i].FLOPs
	}
	return f
}

// Batch summarises the sequences of one engine step. Build it with
// AddPrefill and AddDecode.
type Batch struct {
	// PrefillTokens are the new prompt tokens computed this step.
	PrefillTokens int
	// PrefillChunks is the number of prefill chunks.
	PrefillChunks int
	// PrefillPairs is Σ over chunks of the query-key pairs a causal chunk of
	// q tokens after c cached tokens computes: q·c + q(q+1)/2; the SWA
	// variant caps each query's keys at the window.
	PrefillPairs, PrefillPairsSWA float64
	// PrefillKV is Σ (c + q): KV tokens the chunks read and write.
	PrefillKV, PrefillKVSWA float64
	// DecodeSeqs is the number of sequences decoding one token.
	DecodeSeqs int
	// DecodeContext is Σ context lengths of the decoding sequences.
	DecodeContext, DecodeContextSWA float64
	// SpecTokens is the draft tokens verified this step (speculative
	// decoding): token rows beyond each decoding sequence's one.
	SpecTokens int
	// SpecPairs is Σ over verifying sequences of the query-key pairs of
	// their queries before the last (the last one's are DecodeContext's);
	// the SWA variant caps each query's keys at the window.
	SpecPairs, SpecPairsSWA float64
	// Sampled is the number of positions whose logits are computed: every
	// decode, every prefill chunk that completes its prompt, and every
	// position of a verified draft.
	Sampled int
	// GroupTokens is the token rows every MoE layer runs this step across
	// the expert-parallel group, when data-parallel ranks step together
	// (0: this rank's Tokens times the ranks).
	GroupTokens int
}

// Tokens is the number of token rows the step runs through the model.
func (b *Batch) Tokens() int { return b.PrefillTokens + b.DecodeSeqs + b.SpecTokens }

// Reset empties the batch for reuse.
func (b *Batch) Reset() { *b = Batch{} }

// AddPrefill adds a chunk of q new tokens after c tokens already in the KV
// cache; last says whether the chunk completes the prompt (then the step
// samples the first output token). window is the model's sliding window
// (0 for none).
func (b *Batch) AddPrefill(q, c, window int, last bool) {
	if q <= 0 {
		return
	}
	fq, fc := float64(q), float64(c)
	b.PrefillTokens += q
	b.PrefillChunks++
	b.PrefillPairs += fq*fc + fq*(fq+1)/2
	b.PrefillKV += fc + fq
	if window > 0 {
		b.PrefillPairsSWA += windowPairs(q, c, window)
		b.PrefillKVSWA += math.Min(fc+fq, float64(window)+fq)
	}
	if last {
		b.Sampled++
	}
}

// windowPairs counts query-key pairs of a causal chunk when each query sees
// at most window keys.
func windowPairs(q, c, w int) float64 {
	// Query i (0-based) at position c+i sees min(c+i+1, w) keys.
	fq, fc, fw := float64(q), float64(c), float64(w)
	if fc+fq <= fw {
		return fq*fc + fq*(fq+1)/2
	}
	// queries with c+i+1 < w: i < w-c-1
	n := math.Max(0, math.Min(fq, fw-fc-1))
	ramp := n*fc + n*(n+1)/2
	return ramp + (fq-n)*fw
}

// AddDecode adds one sequence decoding a token with ctx tokens of context
// (including the one being decoded).
func (b *Batch) AddDecode(ctx, window int) {
	b.DecodeSeqs++
	b.Sampled++
	b.DecodeContext += float64(ctx)
	if window > 0 {
		b.DecodeContextSWA += float64(min(ctx, window))
	}
}

// AddDecodes adds n sequences decoding a token each, whose contexts
// (AddDecode's ctx) sum to ctxSum, and to ctxSWA capped at the window
// each (0 without a window): n AddDecode calls in one.
func (b *Batch) AddDecodes(n, ctxSum, ctxSWA int) {
	b.DecodeSeqs += n
	b.Sampled += n
	b.DecodeContext += float64(ctxSum)
	b.DecodeContextSWA += float64(ctxSWA)
}

// AddVerify adds one sequence verifying drafts speculative tokens in one
// step: its decode token, whose context is ctx tokens (as AddDecode), and
// the drafts after it, the last query seeing ctx + drafts keys. The
// attention reads the sequence's KV once for all its queries; the target
// scores every position (the rejection sampler compares them all).
func (b *Batch) AddVerify(ctx, drafts, window int) {
	b.AddDecode(ctx+drafts, window)
	if drafts <= 0 {
		return
	}
	b.SpecTokens += drafts
	b.Sampled += drafts
	fc, fd := float64(ctx), float64(drafts)
	b.SpecPairs += fd*fc + fd*(fd-1)/2
	if window > 0 {
		for j := range drafts {
			b.SpecPairsSWA += float64(min(ctx+j, window))
		}
	}
}

// AddDraftInput adds one sequence's n tokens entering a draft model's
// pass after ctx−1 tokens in its KV cache (n = 1 is AddDecode(ctx)), of
// which only the last is scored: the first pass of an EAGLE-style
// proposer over the tokens the target verified.
func (b *Batch) AddDraftInput(ctx, n, window int) {
	b.AddVerify(ctx, n-1, window)
	b.Sampled -= max(n-1, 0)
}

// CostModel holds the per-token coefficients of one model served at one
// precision and tensor-parallel degree, so a step costs a few
// multiplications.
type CostModel struct {
	m    *Model
	p    Precision
	tp   int
	full float64 // full-attention layers
	swa  float64 // sliding-window layers
	L    float64 // layers

	act, wb, eb, kvb float64 // bytes per element: activations, weights, expert weights, KV
	ab               float64 // bytes per attention-projection weight

	qkvFLOPsPerTok, qkvWeights, qkvActPerTok float64
	oFLOPsPerTok, oWeights, oActPerTok       float64
	mlpFLOPsPerTok, mlpWeights, mlpActPerTok float64
	routerFLOPsPerTok, routerWeights         float64
	expertFLOPsPerTok, expertActPerTok       float64
	expertWeightsEach, sharedWeights         float64
	experts, topK                            float64
	ep, dp                                   int // expert-parallel group, data-parallel ranks in it
	lmFLOPsPerTok, lmWeights, lmActPerTok    float64
	eltPerTok                                float64

	// attention coefficients per layer
	qkFLOPsPerPair, pvFLOPsPerPair float64 // prefill: per query-key pair
	decQKFLOPsPerCtx               float64 // decode: per context token (QK + PV)
	kvBytesPerTokLayer             float64
	prefillKVExpandFLOPs           float64 // MLA: kv_b expansion per context token (prefill)
	decodeAbsorbFLOPsPerSeq        float64 // MLA: W_UK/W_UV absorption per decode token
	qActPerTok                     float64
}

// NewCostModel precomputes the coefficients for m at precision p on tp GPUs.
func (m *Model) NewCostModel(p Precision, tp int) *CostModel { return m.NewCostModelEP(p, tp, 1) }

// NewCostModelEP is NewCostModel with the routed experts spread over an
// expert-parallel group of ep GPUs (ep = tp × data-parallel ranks), each
// holding E/ep whole experts and serving the tokens every rank routes to
// them. Ranks are assumed to carry equal batches.
func (m *Model) NewCostModelEP(p Precision, tp, ep int) *CostModel {
	tp = max(tp, 1)
	if ep <= tp || m.MoE == nil {
		ep = 1
	}
	c := &CostModel{m: m, p: p, tp: tp, L: float64(m.NumLayers), ep: ep, dp: max(ep/tp, 1),
		full: float64(m.NumFullLayers()), swa: float64(m.NumSlidingLayers())}
	c.act, c.wb, c.eb, c.kvb = p.Activations.Bytes(), p.Weights.WeightBytes(), p.ExpertDType().WeightBytes(), p.KV.Bytes()
	c.ab = p.AttentionDType().WeightBytes()
	h := float64(m.HiddenSize)
	frac := 1 / float64(tp)
	headsR := float64(m.NumHeads) * frac
	L := c.L

	if a := m.MLA; a != nil {
		qk := float64(a.QKNopeHeadDim + a.QKRopeHeadDim)
		var qParams float64
		if a.QLoRARank > 0 {
			qParams = h*float64(a.QLoRARank) + float64(a.QLoRARank)*qk*headsR
		} else {
			qParams = h * qk * headsR
		}
		kvA := h * float64(a.KVLoRARank+a.QKRopeHeadDim)
		kvB := float64(a.KVLoRARank) * float64(a.QKNopeHeadDim+a.VHeadDim) * headsR
		c.qkvFLOPsPerTok = 2 * L * (qParams + kvA)
		c.qkvWeights = L * (qParams + kvA + kvB) * c.ab
		c.qkvActPerTok = L * (h + qk*headsR + float64(a.KVLoRARank+a.QKRopeHeadDim)) * c.act
		c.oFLOPsPerTok = 2 * L * float64(a.VHeadDim) * headsR * h
		c.oWeights = L * float64(a.VHeadDim) * headsR * h * c.ab
		c.oActPerTok = L * (float64(a.VHeadDim)*headsR + h) * c.act
		// Prefill: naive attention over expanded keys/values.
		c.qkFLOPsPerPair = 2 * qk * headsR
		c.pvFLOPsPerPair = 2 * float64(a.VHeadDim) * headsR
		c.prefillKVExpandFLOPs = 2 * kvB
		// Decode: absorbed attention over the latent.
		c.decQKFLOPsPerCtx = 2*float64(a.KVLoRARank+a.QKRopeHeadDim)*headsR + 2*float64(a.KVLoRARank)*headsR
		c.decodeAbsorbFLOPsPerSeq = 2 * headsR * float64(a.KVLoRARank) * float64(a.QKNopeHeadDim+a.VHeadDim)
		c.qActPerTok = qk * headsR * c.act
	} else {
		qdim := float64(m.QDim()) * frac
		kvdim := float64(m.KVHeadsPerRank(tp) * m.HeadDim)
		c.qkvFLOPsPerTok = 2 * L * h * (qdim + 2*kvdim)
		c.qkvWeights = L * h * (qdim + 2*kvdim) * c.ab
		c.qkvActPerTok = L * (h + qdim + 2*kvdim) * c.act
		c.oFLOPsPerTok = 2 * L * qdim * h
		c.oWeights = L * qdim * h * c.ab
		c.oActPerTok = L * (qdim + h) * c.act
		hd := float64(m.HeadDim)
		c.qkFLOPsPerPair = 2 * hd * headsR
		c.pvFLOPsPerPair = 2 * hd * headsR
		c.decQKFLOPsPerCtx = 4 * hd * headsR
		c.qActPerTok = qdim * c.act
	}
	c.kvBytesPerTokLayer = m.KVBytesPerTokenLayer(p.KV, tp)

	dense := float64(m.NumDenseLayers())
	ir := float64(m.IntermediateSize) * frac
	c.mlpFLOPsPerTok = 2 * dense * 3 * h * ir
	c.mlpWeights = dense * 3 * h * ir * c.wb
	c.mlpActPerTok = dense * (2*h + 3*ir) * c.act

	if e := m.MoE; e != nil {
		ml := float64(m.NumMoELayers())
		ie := float64(e.ExpertIntermediateSize) * frac
		is := float64(m.sharedExpertSize()) * frac
		ns := float64(e.NumSharedExperts)
		c.experts, c.topK = float64(e.NumExperts), float64(e.NumExpertsPerTok)
		c.routerFLOPsPerTok = 2 * ml * h * c.experts
		c.routerWeights = ml * h * c.experts * c.act
		c.expertFLOPsPerTok = 2 * ml * 3 * h * (c.topK*ie + ns*is)
		c.expertActPerTok = ml * (c.topK*(2*h+3*ie) + ns*(2*h+3*is)) * c.act
		c.expertWeightsEach = ml * 3 * h * ie * c.eb
		if c.ep > 1 {
			// Whole experts per GPU: a touched expert is read in full.
			c.expertWeightsEach = ml * 3 * h * float64(e.ExpertIntermediateSize) * c.eb
		}
		c.sharedWeights = ml * ns * 3 * h * is * c.wb
	}

	vr := float64(m.vocabPerRank(tp))
	c.lmFLOPsPerTok = 2 * h * vr
	c.lmWeights = h * vr * c.act
	c.lmActPerTok = (h*c.act + vr*4) // fp32 logits
	// Elementwise kernels, elements read plus written per token:
	//   - two fused residual-add + RMSNorm kernels per layer, each reading
	//     the input and the residual and writing both: 2 × 4·H;
	//   - the rotary embedding, in place on the rotated dims of q and k:
	//     2 × (heads + KV heads per rank) × rotary dim;
	//   - the dense MLP's activation (SiLU-and-mul reads gate and up,
	//     writes one: 3·I/tp); MoE layers apply it inside the fused
	//     expert kernel (counted in expertActPerTok);
	//   - the embedding lookup, once per pass: H.
	ropeHeads := headsR + float64(m.KVHeadsPerRank(tp))
	if m.MLA != nil {
		ropeHeads = headsR + 1 // one shared rotary key (k_pe) per token
	}
	rope := 2 * ropeHeads * float64(m.RopeDim())
	c.eltPerTok = (L*(8*h+rope) + dense*3*ir + h) * c.act
	return c
}

// ExpertsTouched is the expected number of distinct routed experts a step
// of n tokens reads per MoE layer on one GPU with uniform routing:
// E·(1 − (1 − k/E)^n); with expert parallelism, the GPU's E/ep experts
// over the tokens of every data-parallel rank.
func (c *CostModel) ExpertsTouched(n int) float64 {
	if c.experts == 0 || n == 0 {
		return 0
	}
	local, tokens := c.experts, float64(n)
	if c.ep > 1 {
		local, tokens = c.experts/float64(c.ep), tokens*float64(c.dp)
	}
	return local * (1 - math.Pow(1-c.topK/c.experts, tokens))
}

// expertPairs is the token-expert pairs one GPU's routed experts process
// in a step of t tokens: every routed pair (each expert is sliced by TP),
// or with EP the GPU's share of the group's dp·t·k pairs, t·k/tp.
func (c *CostModel) expertPairs(t float64) float64 {
	if c.ep > 1 {
		return t * c.topK / float64(c.tp)
	}
	return t * c.topK
}

// Step returns the work of one forward pass over b on one GPU.
func (c *CostModel) Step(b *Batch) Cost {
	var out Cost
	t := float64(b.Tokens())
	n := b.Tokens()
	if n == 0 {
		return out
	}
	L := int(c.L)
	out[OpQKVProj] = OpCost{FLOPs: t * c.qkvFLOPsPerTok, WeightBytes: c.qkvWeights, DataBytes: t * c.qkvActPerTok, Tokens: n, Count: L}
	out[OpOProj] = OpCost{FLOPs: t * c.oFLOPsPerTok, WeightBytes: c.oWeights, DataBytes: t * c.oActPerTok, Tokens: n, Count: L}
	if c.mlpWeights > 0 {
		out[OpMLP] = OpCost{FLOPs: t * c.mlpFLOPsPerTok, WeightBytes: c.mlpWeights, DataBytes: t * c.mlpActPerTok, Tokens: n, Count: 2 * c.m.NumDenseLayers()}
	}
	if c.experts > 0 {
		ml := c.m.NumMoELayers()
		out[OpRouter] = OpCost{FLOPs: t * c.routerFLOPsPerTok, WeightBytes: c.routerWeights, DataBytes: t * float64(ml) * c.experts * 4, Tokens: n, Count: ml}
		touched := c.ExpertsTouched(n)
		out[OpExperts] = OpCost{
			FLOPs:       t * c.expertFLOPsPerTok,
			WeightBytes: touched*c.expertWeightsEach + c.sharedWeights,
			DataBytes:   t * c.expertActPerTok,
			// Each expert's GEMM sees only the tokens routed to it, so its
			// efficiency follows the tokens per touched expert, not the
			// batch's (with EP: the pairs this GPU serves, t·k/tp, over its
			// touched experts).
			Tokens: max(1, int(c.expertPairs(t)/math.Max(touched, 1))), Count: 2 * ml,
		}
		if c.ep > 1 {
			// vLLM's default all2all backend (allgather_reducescatter):
			// every MoE layer all-gathers the hidden states of the whole
			// EP group and reduce-scatters the outputs; each GPU moves
			// (ep-1)/ep of dp·t tokens each way.
			frac := float64(c.ep-1) / float64(c.ep)
			out[OpAllToAll] = OpCost{DataBytes: 2 * float64(ml) * frac * t * float64(c.dp) * float64(c.m.HiddenSize) * c.act, Tokens: n, Count: 2 * ml}
		}
	}
	if b.Sampled > 0 {
		s := float64(b.Sampled)
		out[OpLMHead] = OpCost{FLOPs: s * c.lmFLOPsPerTok, WeightBytes: c.lmWeights, DataBytes: s * c.lmActPerTok, Tokens: b.Sampled, Count: 1}
	}
	out[OpElementwise] = OpCost{DataBytes: t * c.eltPerTok, Tokens: n, Count: 4 * L}

	if b.PrefillTokens > 0 {
		pairs := c.full*b.PrefillPairs + c.swa*b.PrefillPairsSWA
		kv := c.full*b.PrefillKV + c.swa*b.PrefillKVSWA
		// One variable-length FlashAttention kernel per layer covers every
		// prefill chunk of the step (vLLM's flash_attn_varlen_func), so the
		// kernel count does not grow with the number of chunks.
		out[OpAttnPrefill] = OpCost{
			FLOPs:     pairs*(c.qkFLOPsPerPair+c.pvFLOPsPerPair) + kv*c.prefillKVExpandFLOPs,
			DataBytes: kv*c.kvBytesPerTokLayer + c.L*float64(b.PrefillTokens)*2*c.qActPerTok,
			Tokens:    b.PrefillTokens, Count: L,
		}
	}
	if b.DecodeSeqs > 0 {
		ctx := c.full*b.DecodeContext + c.swa*b.DecodeContextSWA
		// Query-key pairs: one query per context token of each sequence,
		// and a verified draft's queries over the same KV.
		pairs := ctx + c.full*b.SpecPairs + c.swa*b.SpecPairsSWA
		d := float64(b.DecodeSeqs) + float64(b.SpecTokens)
		out[OpAttnDecode] = OpCost{
			FLOPs:     pairs*c.decQKFLOPsPerCtx + c.L*d*c.decodeAbsorbFLOPsPerSeq,
			DataBytes: ctx*c.kvBytesPerTokLayer + c.L*d*2*c.qActPerTok,
			Tokens:    b.DecodeSeqs + b.SpecTokens, Count: L,
		}
	}
	if c.tp > 1 {
		// Two all-reduces of the hidden state per layer (after attention and
		// after the MLP), plus gathering the logits.
		msg := t * float64(c.m.HiddenSize) * c.act
		out[OpAllReduce] = OpCost{DataBytes: 2*c.L*msg + float64(b.Sampled)*float64(c.m.vocabPerRank(c.tp))*4, Tokens: n, Count: 2*L + 1}
	}
	return out
}

// TP is the tensor-parallel degree the cost model was built for.
func (c *CostModel) TP() int { return c.tp }

// Model is the model the cost model describes.
func (c *CostModel) Model() *Model { return c.m }

// Precision is the precision the cost model was built for.
func (c *CostModel) Precision() Precision { return c.p }

// PeakDType is the dtype whose tensor throughput the linear layers run at:
// weight-only integer formats compute in the activation type.
func (p Precision) PeakDType() hardware.DType {
	switch p.Weights {
	case hardware.INT4:
		return p.Activations
	}
	return p.Weights
}
