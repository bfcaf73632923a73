package models

// GEMMShape is one weight matmul of a forward pass on one GPU: the token
// rows it multiplies (set per step) by a K×N weight, Count times per pass
// (usually once per layer).
type GEMMShape struct {
	Op     OpKind
	Name   string // qkv_proj, o_proj, gate_up_proj, down_proj, …
	N, K   int
	Count  int
	Format string // kernel format (Format*)
	// WeightBytes is one weight element's storage size, scales included.
	WeightBytes float64
	// PerSampled: the GEMM runs on the sampled positions only (LM head),
	// not on every token row.
	PerSampled bool
}

// AttentionShapes are the attention kernels' per-GPU dimensions.
type AttentionShapes struct {
	Heads, KVHeads, HeadDim int
	// FullLayers and SlidingLayers count the layers attending to the whole
	// context and to a window of Window tokens.
	FullLayers, SlidingLayers, Window int
	// MLA: attention runs over a compressed latent (DeepSeek); the kernel
	// tables' MHA/GQA rows do not describe it.
	MLA bool
}

// MoEShapes describe the routed experts: full model sizes and how one GPU
// splits them (TP slices every expert; EP gives whole experts to ranks).
type MoEShapes struct {
	Layers        int
	Hidden, Inter int // hidden_size and the expert's intermediate size
	TopK, Experts int
	TP, EP        int // the rank's (moe_tp, moe_ep) split
	Format        string
	WeightBytes   float64
	// Shared experts run as ordinary GEMMs (in Shapes.GEMMs).
}

// Shapes is the per-GPU kernel list of one forward pass of a model served
// at a precision over tp tensor-parallel GPUs, with experts over ep GPUs
// (ep ≤ tp: sliced by TP; ep > tp: expert parallel over the data-parallel
// group).
type Shapes struct {
	Hidden int
	Layers int
	GEMMs  []GEMMShape
	Attn   AttentionShapes
	MoE    *MoEShapes
	// ElementwiseBytesPerToken is the norms', rotary embedding's, residual
	// adds' and activation's memory traffic per token, summed over layers;
	// ElementwiseKernels is their kernel count per pass.
	ElementwiseBytesPerToken float64
	ElementwiseKernels       int
	// AllReducesPerPass is the tensor-parallel all-reduces of the hidden
	// state per pass (two per layer), each of Hidden × activation bytes per
	// token.
	AllReducesPerPass int
	ActBytes          float64
}

// Shapes returns the kernel shapes of m at precision p on tp GPUs with
// experts over ep GPUs (ep > tp: whole experts over the data-parallel
// group; else sliced by TP).
func (m *Model) Shapes(p Precision, tp, ep int) Shapes {
	if ep > tp {
		return m.ShapesSplit(p, tp, 1, ep)
	}
	return m.ShapesSplit(p, tp, max(tp, 1), 1)
}

// ShapesSplit returns the kernel shapes of m at precision p on tp GPUs,
// with the routed experts split moeTP × moeEP: every expert sliced over
// moeTP GPUs, whole experts spread over moeEP groups.
func (m *Model) ShapesSplit(p Precision, tp, moeTP, moeEP int) Shapes {
	tp = max(tp, 1)
	c := m.NewCostModelEP(p, tp, 1)
	h := m.HiddenSize
	L := m.NumLayers
	linFormat, attnFormat := p.LinearFormat(), p.AttentionFormat()
	wb, awb := p.Weights.WeightBytes(), p.AttentionDType().WeightBytes()
	act := p.Activations.Bytes()
	s := Shapes{Hidden: h, Layers: L, ActBytes: act}
	add := func(op OpKind, name string, n, k, count int, format string, bytes float64) {
		if n <= 0 || k <= 0 || count <= 0 {
			return
		}
		s.GEMMs = append(s.GEMMs, GEMMShape{Op: op, Name: name, N: n, K: k, Count: count, Format: format, WeightBytes: bytes})
	}
	headsR := m.NumHeads / tp
	if headsR < 1 {
		headsR = 1
	}
	if a := m.MLA; a != nil {
		qk := a.QKNopeHeadDim + a.QKRopeHeadDim
		if a.QLoRARank > 0 {
			add(OpQKVProj, "q_a_proj", a.QLoRARank, h, L, attnFormat, awb)
			add(OpQKVProj, "q_b_proj", qk*headsR, a.QLoRARank, L, attnFormat, awb)
		} else {
			add(OpQKVProj, "q_proj", qk*headsR, h, L, attnFormat, awb)
		}
		add(OpQKVProj, "kv_a_proj", a.KVLoRARank+a.QKRopeHeadDim, h, L, attnFormat, awb)
		add(OpQKVProj, "kv_b_proj", (a.QKNopeHeadDim+a.VHeadDim)*headsR, a.KVLoRARank, L, attnFormat, awb)
		add(OpOProj, "o_proj", h, a.VHeadDim*headsR, L, attnFormat, awb)
		s.Attn = AttentionShapes{Heads: headsR, KVHeads: 1, HeadDim: a.KVLoRARank + a.QKRopeHeadDim, FullLayers: L, MLA: true}
	} else {
		kvR := m.KVHeadsPerRank(tp)
		add(OpQKVProj, "qkv_proj", (headsR+2*kvR)*m.HeadDim, h, L, attnFormat, awb)
		add(OpOProj, "o_proj", h, headsR*m.HeadDim, L, attnFormat, awb)
		s.Attn = AttentionShapes{Heads: headsR, KVHeads: kvR, HeadDim: m.HeadDim,
			FullLayers: m.NumFullLayers(), SlidingLayers: m.NumSlidingLayers(), Window: m.SlidingWindow}
	}
	if dense := m.NumDenseLayers(); dense > 0 && m.IntermediateSize > 0 {
		ir := (m.IntermediateSize + tp - 1) / tp
		add(OpMLP, "gate_up_proj", 2*ir, h, dense, linFormat, wb)
		add(OpMLP, "down_proj", h, ir, dense, linFormat, wb)
	}
	if e := m.MoE; e != nil {
		ml := m.NumMoELayers()
		add(OpRouter, "router", e.NumExperts, h, ml, FormatBF16, act)
		if e.NumSharedExperts > 0 {
			is := int(m.sharedExpertSize()) * e.NumSharedExperts
			isR := (is + tp - 1) / tp
			add(OpExperts, "shared_gate_up_proj", 2*isR, h, ml, linFormat, wb)
			add(OpExperts, "shared_down_proj", h, isR, ml, linFormat, wb)
		}
		s.MoE = &MoEShapes{Layers: ml, Hidden: h, Inter: e.ExpertIntermediateSize, TopK: e.NumExpertsPerTok,
			Experts: e.NumExperts, TP: max(moeTP, 1), EP: max(moeEP, 1), Format: p.ExpertFormat(), WeightBytes: p.ExpertDType().WeightBytes()}
	}
	add(OpLMHead, "lm_head", int(m.vocabPerRank(tp)), h, 1, FormatBF16, act)
	s.GEMMs[len(s.GEMMs)-1].PerSampled = true
	s.ElementwiseBytesPerToken = c.eltPerTok
	s.ElementwiseKernels = 4 * L
	if tp > 1 {
		s.AllReducesPerPass = 2 * L
	}
	return s
}
