package models

import "github.com/headroom-sim/headroom/hardware"

// ParamCounts breaks a model's parameters down by component.
type ParamCounts struct {
	Embedding     int64 `json:"embedding"`
	LMHead        int64 `json:"lm_head"` // 0 when tied to the embedding
	Attention     int64 `json:"attention"`
	DenseMLP      int64 `json:"dense_mlp"`
	RoutedExperts int64 `json:"routed_experts"`
	SharedExperts int64 `json:"shared_experts"`
	Router        int64 `json:"router"`
	Norms         int64 `json:"norms"`
	Total         int64 `json:"total"`
	// Active is what one token touches: everything but the routed experts
	// it is not sent to.
	Active int64 `json:"active"`
}

// attentionParamsPerLayer counts the attention projections of one layer,
// with kvHeads key/value heads (the full count, or one rank's share).
func (m *Model) attentionParamsPerLayer(headsFrac float64, kvHeads int) (sharded, replicated int64) {
	h := int64(m.HiddenSize)
	if a := m.MLA; a != nil {
		heads := float64(m.NumHeads) * headsFrac
		qk := int64(a.QKNopeHeadDim + a.QKRopeHeadDim)
		var q float64
		if a.QLoRARank > 0 {
			// q_a_proj (replicated) + q_a_layernorm + q_b_proj (split by heads)
			replicated += h*int64(a.QLoRARank) + int64(a.QLoRARank)
			q = float64(int64(a.QLoRARank)*qk) * heads
		} else {
			q = float64(h*qk) * heads
		}
		// kv_a_proj_with_mqa (replicated) + kv_a_layernorm
		replicated += h*int64(a.KVLoRARank+a.QKRopeHeadDim) + int64(a.KVLoRARank)
		kvb := float64(int64(a.KVLoRARank)*int64(a.QKNopeHeadDim+a.VHeadDim)) * heads
		o := float64(int64(a.VHeadDim)*h) * heads
		return int64(q + kvb + o), replicated
	}
	qdim := float64(m.QDim()) * headsFrac
	kvdim := int64(kvHeads * m.HeadDim)
	proj := int64(qdim)*h*2 + 2*h*kvdim // q, o, k, v
	if m.AttentionBias {
		proj += int64(qdim) + 2*kvdim
		replicated += h // o bias
	}
	return proj, replicated
}

func (m *Model) normsPerLayer() int64 { return 2 * int64(m.HiddenSize) }

func (m *Model) sharedExpertSize() int64 {
	e := m.MoE
	if e.SharedExpertIntermediateSize > 0 {
		return int64(e.SharedExpertIntermediateSize)
	}
	return int64(e.ExpertIntermediateSize)
}

func (m *Model) expertParams() int64 {
	e := m.MoE
	h, ie := int64(m.HiddenSize), int64(e.ExpertIntermediateSize)
	p := 3 * h * ie
	if e.ExpertBias {
		p += 2*ie + h
	}
	return p
}

// Params counts parameters by component, for the whole model. Multi-token
// prediction heads that engines do not load by default are not counted.
func (m *Model) Params() ParamCounts {
	h := int64(m.HiddenSize)
	L := int64(m.NumLayers)
	var c ParamCounts
	c.Embedding = int64(m.VocabSize) * h
	if !m.TieWordEmbeddings {
		c.LMHead = c.Embedding
	}
	sh, rep := m.attentionParamsPerLayer(1, m.NumKVHeads)
	c.Attention = L * (sh + rep)
	c.Norms = L*m.normsPerLayer() + h
	c.DenseMLP = int64(m.NumDenseLayers()) * 3 * h * int64(m.IntermediateSize)
	var activeExperts int64
	if e := m.MoE; e != nil {
		ml := int64(m.NumMoELayers())
		c.RoutedExperts = ml * int64(e.NumExperts) * m.expertParams()
		c.SharedExperts = ml * int64(e.NumSharedExperts) * 3 * h * m.sharedExpertSize()
		c.Router = ml * h * int64(e.NumExperts)
		if e.ExpertBias {
			c.Router += ml * int64(e.NumExperts)
		}
		activeExperts = ml * int64(e.NumExpertsPerTok) * m.expertParams()
	}
	c.Total = c.Embedding + c.LMHead + c.Attention + c.DenseMLP + c.RoutedExperts + c.SharedExperts + c.Router + c.Norms
	c.Active = c.Total - c.RoutedExperts + activeExperts
	return c
}

// Precision is the storage type of each part of a served model.
type Precision struct {
	// Weights of the linear layers. Embeddings, the LM head and norms stay in
	// Activations, as vLLM keeps them for fp8, int8 and int4 checkpoints.
	Weights hardware.DType `json:"weights"`
	// Experts is the storage type of routed experts; empty means Weights.
	Experts hardware.DType `json:"experts,omitempty"`
	// Attention is the storage type of the attention projections (q, k, v,
	// o; MLA's down- and up-projections); empty means Weights. Set when a
	// checkpoint quantises the dense MLPs but leaves attention unquantised.
	Attention hardware.DType `json:"attention,omitempty"`
	// KV is the KV-cache element type.
	KV hardware.DType `json:"kv_cache"`
	// Activations is the compute dtype (the checkpoint's torch_dtype).
	Activations hardware.DType `json:"activations"`
	// FP8Blocks says fp8 weights carry one scale per 128×128 block with
	// per-token-group activation scales (DeepSeek, Qwen3 and MiniMax FP8
	// checkpoints), which run different kernels than per-tensor fp8.
	FP8Blocks bool `json:"fp8_blocks,omitempty"`
}

// Kernel formats of the linear layers, as the measured kernel tables name
// them (sim/steptime.Format*).
const (
	FormatBF16     = "bf16"
	FormatFP8      = "fp8"
	FormatFP8Block = "fp8_block"
	FormatNVFP4    = "nvfp4"
	FormatINT4     = "int4_wo"
	FormatMXFP4    = "mxfp4"
	FormatINT8     = "int8"
)

// KernelFormat is the GEMM kernel format of weights stored in dt.
func (p Precision) KernelFormat(dt hardware.DType) string {
	switch dt {
	case hardware.FP8:
		if p.FP8Blocks {
			return FormatFP8Block
		}
		return FormatFP8
	case hardware.FP4:
		return FormatNVFP4
	case hardware.MXFP4:
		return FormatMXFP4
	case hardware.INT4:
		return FormatINT4
	case hardware.INT8:
		return FormatINT8
	}
	return FormatBF16
}

// LinearFormat is the kernel format of the dense MLP (and shared expert)
// projections.
func (p Precision) LinearFormat() string { return p.KernelFormat(p.Weights) }

// AttentionFormat is the kernel format of the attention projections.
func (p Precision) AttentionFormat() string { return p.KernelFormat(p.AttentionDType()) }

// ExpertFormat is the kernel format of the routed experts.
func (p Precision) ExpertFormat() string { return p.KernelFormat(p.ExpertDType()) }

// ExpertDType is the storage type of routed experts.
func (p Precision) ExpertDType() hardware.DType {
	if p.Experts != "" {
		return p.Experts
	}
	return p.Weights
}

// AttentionDType is the storage type of the attention projections.
func (p Precision) AttentionDType() hardware.DType {
	if p.Attention != "" {
		return p.Attention
	}
	return p.Weights
}

// DefaultPrecision is how the checkpoint is served when nothing is
// overridden: its own quantisation if it has one, else torch_dtype, and a
// KV cache in the checkpoint's KV hint (Quantization.KVCacheQuantAlgo) or
// else the activation type.
//
// A checkpoint that leaves attention unquantised keeps it in torch_dtype:
// when the routed experts are then the only other linear layers (no dense
// MLP layer, no shared expert: gpt-oss, the NVFP4 MiniMax-M2.5), Weights is
// torch_dtype and Experts the quantised type, as for experts-only
// checkpoints; otherwise Weights is the quantised type and Attention
// torch_dtype.
func (m *Model) DefaultPrecision() Precision {
	p := Precision{Weights: m.DType, KV: m.DType, Activations: m.DType}
	q := m.Quantization
	if q == nil {
		return p
	}
	if q.KVCacheQuantAlgo != "" {
		p.KV = q.KVCacheQuantAlgo
	}
	p.FP8Blocks = q.KernelScheme() == SchemeFP8Block
	switch {
	case q.ExpertsOnly || (q.AttentionUnquantized && m.onlyExpertsBesideAttention()):
		p.Experts = q.DType
	case q.AttentionUnquantized:
		p.Weights = q.DType
		p.Attention = m.DType
	default:
		p.Weights = q.DType
	}
	return p
}

// onlyExpertsBesideAttention reports whether the routed experts are the
// only linear layers outside attention (router and LM head aside).
func (m *Model) onlyExpertsBesideAttention() bool {
	return m.MoE != nil && m.NumDenseLayers() == 0 && m.MoE.NumSharedExperts == 0
}

// ResolvePrecision applies the user's choices to the checkpoint defaults.
// weights "" keeps the checkpoint's; kv "" or "auto" is vLLM's
// --kv-cache-dtype auto: the checkpoint's KV hint when its weights are
// kept (a ModelOpt kv_cache_quant_algo), else the model's activation type —
// an fp8 checkpoint without KV scales keeps a 16-bit cache.
func (m *Model) ResolvePrecision(weights, kv hardware.DType) Precision {
	p := m.DefaultPrecision()
	if weights != "" {
		p.Weights, p.Experts, p.Attention, p.FP8Blocks = weights, "", "", false
	}
	hint := hardware.DType("")
	if q := m.Quantization; q != nil && weights == "" {
		hint = q.KVCacheQuantAlgo
	}
	switch {
	case kv != "" && kv != "auto":
		p.KV = kv
	case hint != "":
		p.KV = hint
	default:
		p.KV = p.Activations
	}
	return p
}

// KVHeadsPerRank is how many KV heads each of tp ranks holds: heads are
// split while there are enough, and replicated once tp exceeds them (vLLM
// gives every rank one head then).
func (m *Model) KVHeadsPerRank(tp int) int {
	if tp <= 1 {
		return m.NumKVHeads
	}
	if m.NumKVHeads >= tp {
		return (m.NumKVHeads + tp - 1) / tp
	}
	return 1
}

// vocabPerRank is the vocabulary rows one rank holds: vLLM pads the
// vocabulary to a multiple of 64 and splits it evenly.
func (m *Model) vocabPerRank(tp int) int64 {
	v := (int64(m.VocabSize) + 63) / 64 * 64
	t := int64(max(tp, 1))
	return (v + t - 1) / t
}

// WeightBytesPerGPU is the weight memory of one tensor-parallel rank in
// bytes, including the rotary cos/sin cache vLLM allocates next to the
// weights (max_position_embeddings × rotary dim, in the activation dtype):
// what vLLM logs as "Model loading took … GiB".
func (m *Model) WeightBytesPerGPU(p Precision, tp int) float64 {
	return m.WeightBytesPerGPUEP(p, tp, 1)
}

// WeightBytesPerGPUEP is WeightBytesPerGPU with expert parallelism over ep
// GPUs (vLLM --enable-expert-parallel: ep = TP × DP): each GPU holds
// E/ep whole routed experts instead of a 1/tp slice of every expert.
func (m *Model) WeightBytesPerGPUEP(p Precision, tp, ep int) float64 {
	tp = max(tp, 1)
	h := int64(m.HiddenSize)
	act := p.Activations.Bytes()
	w := p.Weights.WeightBytes()
	frac := 1 / float64(tp)

	emb := float64(m.vocabPerRank(tp) * h)
	if !m.TieWordEmbeddings {
		emb *= 2
	}
	sh, rep := m.attentionParamsPerLayer(frac, m.KVHeadsPerRank(tp))
	L := float64(m.NumLayers)
	attention := L * float64(sh)
	dense := float64(m.NumDenseLayers()) * 3 * float64(h) * float64(m.IntermediateSize) * frac
	replicated := L*float64(rep) + float64(int64(m.NumLayers)*m.normsPerLayer()+h)
	bytes := emb*act + attention*p.AttentionDType().WeightBytes() + dense*w + replicated*act
	if e := m.MoE; e != nil {
		ml := float64(m.NumMoELayers())
		expertFrac := frac
		if ep > 1 {
			expertFrac = 1 / float64(ep)
		}
		experts := ml * float64(e.NumExperts) * float64(m.expertParams()) * expertFrac
		shared := ml * float64(e.NumSharedExperts) * 3 * float64(h) * float64(m.sharedExpertSize()) * frac
		router := ml * float64(h) * float64(e.NumExperts)
		bytes += experts*p.ExpertDType().WeightBytes() + shared*w + router*act
	}
	bytes += float64(m.MaxPositions) * float64(m.RopeDim()) * act
	return bytes
}
