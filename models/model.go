package models

import (
	"fmt"

	"github.com/headroom-sim/headroom/hardware"
)

// FieldError is the error type for an invalid field.
type FieldError = hardware.FieldError

// Model is the architecture of one language model, with field names taken
// from Hugging Face config.json.
type Model struct {
	ID      string   `yaml:"id" json:"id"`
	Name    string   `yaml:"name" json:"name"`
	HFID    string   `yaml:"hf_id" json:"hf_id"`
	Aliases []string `yaml:"aliases,omitempty" json:"aliases,omitempty"`
	// Architecture is config.json's architectures[0] (LlamaForCausalLM …).
	Architecture string `yaml:"architecture" json:"architecture"`
	// DType is the checkpoint's torch_dtype: the activation dtype and the
	// weight dtype unless Quantization says otherwise.
	DType hardware.DType `yaml:"torch_dtype" json:"torch_dtype"`

	NumLayers         int  `yaml:"num_hidden_layers" json:"num_hidden_layers"`
	HiddenSize        int  `yaml:"hidden_size" json:"hidden_size"`
	IntermediateSize  int  `yaml:"intermediate_size" json:"intermediate_size"`
	NumHeads          int  `yaml:"num_attention_heads" json:"num_attention_heads"`
	NumKVHeads        int  `yaml:"num_key_value_heads" json:"num_key_value_heads"`
	HeadDim           int  `yaml:"head_dim" json:"head_dim"`
	VocabSize         int  `yaml:"vocab_size" json:"vocab_size"`
	MaxPositions      int  `yaml:"max_position_embeddings" json:"max_position_embeddings"`
	TieWordEmbeddings bool `yaml:"tie_word_embeddings" json:"tie_word_embeddings"`
	// AttentionBias: q, k, v (and o) projections carry biases (Qwen2,
	// gpt-oss).
	AttentionBias bool `yaml:"attention_bias,omitempty" json:"attention_bias,omitempty"`
	// RotaryDim is the number of rotated dimensions per head; 0 means the
	// whole head (head_dim, or qk_rope_head_dim for MLA).
	RotaryDim int `yaml:"rotary_dim,omitempty" json:"rotary_dim,omitempty"`

	// SlidingWindow is the attention window in tokens; 0 means none.
	SlidingWindow int `yaml:"sliding_window,omitempty" json:"sliding_window,omitempty"`
	// SlidingWindowLayers is how many layers use the window (Gemma-2 and
	// gpt-oss alternate: half of them); 0 with a window means all layers.
	SlidingWindowLayers int `yaml:"sliding_window_layers,omitempty" json:"sliding_window_layers,omitempty"`

	MoE *MoE `yaml:"moe,omitempty" json:"moe,omitempty"`
	MLA *MLA `yaml:"mla,omitempty" json:"mla,omitempty"`

	// NumNextNPredictLayers is the checkpoint's multi-token-prediction
	// layers (DeepSeek-V3 num_nextn_predict_layers = 1): extra decoder
	// layers, not counted in NumLayers and not loaded unless speculative
	// decoding uses them (vLLM's mtp method).
	NumNextNPredictLayers int `yaml:"num_nextn_predict_layers,omitempty" json:"num_nextn_predict_layers,omitempty"`

	// Quantization describes pre-quantised checkpoints (DeepSeek-V3 fp8
	// blocks, gpt-oss mxfp4 experts). Absent means all weights in DType.
	Quantization *Quantization `yaml:"quantization,omitempty" json:"quantization,omitempty"`

	// Source says where the values come from (a config.json URL or copy).
	Source string `yaml:"source,omitempty" json:"source,omitempty"`
}

// MoE describes the mixture-of-experts feed-forward layers.
type MoE struct {
	NumExperts             int `yaml:"num_experts" json:"num_experts"`
	NumExpertsPerTok       int `yaml:"num_experts_per_tok" json:"num_experts_per_tok"`
	ExpertIntermediateSize int `yaml:"moe_intermediate_size" json:"moe_intermediate_size"`
	// NumSharedExperts always-active experts per MoE layer (DeepSeek: 1).
	NumSharedExperts int `yaml:"num_shared_experts,omitempty" json:"num_shared_experts,omitempty"`
	// SharedExpertIntermediateSize is the width of one shared expert;
	// 0 means ExpertIntermediateSize.
	SharedExpertIntermediateSize int `yaml:"shared_expert_intermediate_size,omitempty" json:"shared_expert_intermediate_size,omitempty"`
	// FirstDenseLayers is how many leading layers use a dense MLP of
	// IntermediateSize instead (DeepSeek first_k_dense_replace = 3).
	FirstDenseLayers int `yaml:"first_dense_layers,omitempty" json:"first_dense_layers,omitempty"`
	// ExpertBias: expert projections carry biases (gpt-oss).
	ExpertBias bool `yaml:"expert_bias,omitempty" json:"expert_bias,omitempty"`
}

// MLA describes multi-head latent attention (DeepSeek-V2/V3): keys and
// values are cached as one compressed latent per token and layer.
type MLA struct {
	// QLoRARank 0 means queries use a plain projection.
	QLoRARank     int `yaml:"q_lora_rank" json:"q_lora_rank"`
	KVLoRARank    int `yaml:"kv_lora_rank" json:"kv_lora_rank"`
	QKNopeHeadDim int `yaml:"qk_nope_head_dim" json:"qk_nope_head_dim"`
	QKRopeHeadDim int `yaml:"qk_rope_head_dim" json:"qk_rope_head_dim"`
	VHeadDim      int `yaml:"v_head_dim" json:"v_head_dim"`
}

// Quantization says which weights a checkpoint stores in a narrower type,
// how they are scaled, and what the serving kernels do with the activations.
// Field names follow the Hugging Face quantization_config where one exists.
// Build one by importing a config.json (catalogs.ImportHF) or write it by
// hand; KernelScheme and ActivationDType fill in what an entry leaves out.
type Quantization struct {
	// Method is the checkpoint's quant_method as config.json names it (fp8,
	// fbgemm_fp8, mxfp4, awq, gptq, compressed-tensors, modelopt).
	Method string `yaml:"method" json:"method"`
	// DType is the storage type of the quantised weights.
	DType hardware.DType `yaml:"dtype" json:"dtype"`
	// ExpertsOnly: only the routed experts are quantised (gpt-oss, the
	// NVFP4 MiniMax-M2.5, Kimi-K2 int4); the attention, dense MLPs, shared
	// experts, embeddings and router stay in the model dtype. It implies
	// AttentionUnquantized.
	ExpertsOnly bool `yaml:"experts_only,omitempty" json:"experts_only,omitempty"`
	// Scheme is the kernel family the quantised linear layers run on (see
	// QuantScheme): per-tensor, per-channel or block fp8, int8 W8A8, int4
	// weight-only, NVFP4 W4A4, MXFP4. Empty means the default for DType and
	// Method (KernelScheme).
	Scheme QuantScheme `yaml:"scheme,omitempty" json:"scheme,omitempty"`
	// WeightBlockSize is [rows, columns] of the weight block that shares
	// one scale (quantization_config.weight_block_size; [128, 128] for the
	// block fp8 of DeepSeek-V3, Qwen3-FP8 and MiniMax-M2). Set only for
	// scheme fp8_block.
	WeightBlockSize []int `yaml:"weight_block_size,omitempty" json:"weight_block_size,omitempty"`
	// GroupSize is how many consecutive weights along the input dimension
	// share one scale (quantization_config.group_size): 128 for most GPTQ
	// and AWQ checkpoints, 32 for Kimi-K2 int4 and MXFP4, 16 for NVFP4.
	// 0 means no groups: one scale per tensor or per output channel.
	GroupSize int `yaml:"group_size,omitempty" json:"group_size,omitempty"`
	// ActivationScheme is how the activations' scales are found when the
	// scheme quantises them: dynamic (per token at run time) or static
	// (calibrated into the checkpoint), quantization_config.activation_scheme.
	// Empty: not stated, or a weight-only scheme.
	ActivationScheme string `yaml:"activation_scheme,omitempty" json:"activation_scheme,omitempty"`
	// AttentionUnquantized: the attention projections (q, k, v, o) of every
	// layer stay in the model dtype, because the checkpoint excludes them
	// (modules_to_not_convert, ignore or exclude_modules naming self_attn).
	AttentionUnquantized bool `yaml:"attention_unquantized,omitempty" json:"attention_unquantized,omitempty"`
	// ModulesToNotConvert is the checkpoint's list of modules left
	// unquantised (modules_to_not_convert, compressed-tensors ignore, ModelOpt
	// exclude_modules), with layer numbers folded into "*" where every layer
	// is listed. It records where ExpertsOnly and AttentionUnquantized come
	// from; the simulator reads those two flags, not this list.
	ModulesToNotConvert []string `yaml:"modules_to_not_convert,omitempty" json:"modules_to_not_convert,omitempty"`
	// KVCacheQuantAlgo is the checkpoint's KV-cache hint (ModelOpt
	// kv_cache_quant_algo, compressed-tensors kv_cache_scheme): the KV cache
	// was calibrated for this type and the checkpoint ships its scales.
	// Empty means no hint (the KV cache follows the activations).
	KVCacheQuantAlgo hardware.DType `yaml:"kv_cache_quant_algo,omitempty" json:"kv_cache_quant_algo,omitempty"`
}

// Validate checks that the shape is complete and self-consistent.
func (m *Model) Validate() error {
	req := []struct {
		name string
		v    int
	}{
		{"num_hidden_layers", m.NumLayers},
		{"hidden_size", m.HiddenSize},
		{"num_attention_heads", m.NumHeads},
		{"num_key_value_heads", m.NumKVHeads},
		{"head_dim", m.HeadDim},
		{"vocab_size", m.VocabSize},
		{"max_position_embeddings", m.MaxPositions},
	}
	if m.ID == "" {
		return &FieldError{Field: "id", Reason: "is required"}
	}
	if err := m.validateText(); err != nil {
		return err
	}
	for _, r := range req {
		if r.v <= 0 {
			return &FieldError{Field: r.name, Reason: "is required and must be > 0"}
		}
	}
	if err := m.validateMaxima(); err != nil {
		return err
	}
	if m.IntermediateSize <= 0 && (m.MoE == nil || m.MoE.FirstDenseLayers > 0) {
		return &FieldError{Field: "intermediate_size", Reason: "is required and must be > 0 for dense layers"}
	}
	if m.NumHeads%m.NumKVHeads != 0 {
		return &FieldError{Field: "num_key_value_heads", Reason: fmt.Sprintf("%d does not divide num_attention_heads %d", m.NumKVHeads, m.NumHeads)}
	}
	if !m.DType.Valid() {
		return &FieldError{Field: "torch_dtype", Reason: fmt.Sprintf("unknown data type %q", m.DType)}
	}
	if m.SlidingWindow < 0 || m.SlidingWindowLayers < 0 || m.SlidingWindowLayers > m.NumLayers {
		return &FieldError{Field: "sliding_window_layers", Reason: fmt.Sprintf("must be between 0 and num_hidden_layers (%d)", m.NumLayers)}
	}
	if m.SlidingWindowLayers > 0 && m.SlidingWindow == 0 {
		return &FieldError{Field: "sliding_window", Reason: "is required when sliding_window_layers is set"}
	}
	if m.NumNextNPredictLayers < 0 || m.NumNextNPredictLayers > 64 {
		return &FieldError{Field: "num_nextn_predict_layers", Reason: fmt.Sprintf("%d is not in [0, 64]", m.NumNextNPredictLayers)}
	}
	if e := m.MoE; e != nil {
		switch {
		case e.NumExperts <= 0:
			return &FieldError{Field: "moe.num_experts", Reason: "must be > 0"}
		case e.NumExpertsPerTok <= 0 || e.NumExpertsPerTok > e.NumExperts:
			return &FieldError{Field: "moe.num_experts_per_tok", Reason: fmt.Sprintf("must be between 1 and num_experts (%d)", e.NumExperts)}
		case e.ExpertIntermediateSize <= 0:
			return &FieldError{Field: "moe.moe_intermediate_size", Reason: "must be > 0"}
		case e.FirstDenseLayers < 0 || e.FirstDenseLayers >= m.NumLayers:
			return &FieldError{Field: "moe.first_dense_layers", Reason: "must be between 0 and num_hidden_layers-1"}
		case e.NumSharedExperts < 0 || e.SharedExpertIntermediateSize < 0:
			return &FieldError{Field: "moe.num_shared_experts", Reason: "must be >= 0"}
		}
	}
	if a := m.MLA; a != nil {
		switch {
		case a.KVLoRARank <= 0:
			return &FieldError{Field: "mla.kv_lora_rank", Reason: "must be > 0"}
		case a.QKRopeHeadDim <= 0:
			return &FieldError{Field: "mla.qk_rope_head_dim", Reason: "must be > 0"}
		case a.QKNopeHeadDim <= 0 || a.VHeadDim <= 0:
			return &FieldError{Field: "mla.qk_nope_head_dim", Reason: "qk_nope_head_dim and v_head_dim must be > 0"}
		case a.QLoRARank < 0:
			return &FieldError{Field: "mla.q_lora_rank", Reason: "must be >= 0"}
		}
	}
	if q := m.Quantization; q != nil {
		if err := q.Validate(); err != nil {
			return err
		}
		if q.ExpertsOnly && m.MoE == nil {
			return &FieldError{Field: "quantization.experts_only", Reason: "needs routed experts (moe)"}
		}
	}
	return nil
}

// IsMoE reports whether the model has routed experts.
func (m *Model) IsMoE() bool { return m.MoE != nil }

// NumMoELayers is the number of layers with routed experts.
func (m *Model) NumMoELayers() int {
	if m.MoE == nil {
		return 0
	}
	return m.NumLayers - m.MoE.FirstDenseLayers
}

// NumDenseLayers is the number of layers with a dense MLP.
func (m *Model) NumDenseLayers() int { return m.NumLayers - m.NumMoELayers() }

// NumSlidingLayers is the number of layers that attend within a window.
func (m *Model) NumSlidingLayers() int {
	if m.SlidingWindow <= 0 {
		return 0
	}
	if m.SlidingWindowLayers == 0 {
		return m.NumLayers
	}
	return m.SlidingWindowLayers
}

// NumFullLayers is the number of layers with full (global) attention.
func (m *Model) NumFullLayers() int { return m.NumLayers - m.NumSlidingLayers() }

// QDim is the width of the query projection output (heads × head_dim).
func (m *Model) QDim() int {
	if m.MLA != nil {
		return m.NumHeads * (m.MLA.QKNopeHeadDim + m.MLA.QKRopeHeadDim)
	}
	return m.NumHeads * m.HeadDim
}

// RopeDim is the rotated width per head that the rotary cache stores.
func (m *Model) RopeDim() int {
	if m.RotaryDim > 0 {
		return m.RotaryDim
	}
	if m.MLA != nil {
		return m.MLA.QKRopeHeadDim
	}
	return m.HeadDim
}
