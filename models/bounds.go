package models

import (
	"fmt"
	"unicode"
	"unicode/utf8"
)

// Architectural maxima: every dimension a model may state is bounded far
// above the largest served model (the built-in catalog's largest values
// are 126 layers, hidden 16,384, intermediate 53,248, 128 heads, head_dim
// 256, a 256,000-token vocabulary, 1M positions, 256 experts), so that a
// hostile or mistyped config.json cannot size the memory model, the
// step-time model or the simulator's tables past what a GPU could hold.
const (
	MaxLayers          = 1 << 10 // num_hidden_layers
	MaxHiddenSize      = 1 << 17 // hidden_size
	MaxIntermediate    = 1 << 20 // intermediate_size, moe_intermediate_size, shared_expert_intermediate_size
	MaxHeads           = 1 << 10 // num_attention_heads (and so num_key_value_heads)
	MaxHeadDim         = 1 << 10 // head_dim, MLA head dims, rotary_dim
	MaxVocab           = 1 << 22 // vocab_size
	MaxPositions       = 1 << 24 // max_position_embeddings, sliding_window
	MaxExperts         = 1 << 12 // moe.num_experts
	MaxSharedExperts   = 1 << 6  // moe.num_shared_experts
	MaxLoRARank        = 1 << 16 // mla.kv_lora_rank, mla.q_lora_rank
	maxTextBytes       = 256     // id, name, hf_id, architecture, an alias
	maxSourceTextBytes = 2048    // source (a URL or a file path)
)

// dim is one dimension and its maximum.
type dim struct {
	name string
	v    int
	max  int
}

// validateMaxima refuses dimensions past the architectural maxima.
func (m *Model) validateMaxima() error {
	dims := []dim{
		{"num_hidden_layers", m.NumLayers, MaxLayers},
		{"hidden_size", m.HiddenSize, MaxHiddenSize},
		{"intermediate_size", m.IntermediateSize, MaxIntermediate},
		{"num_attention_heads", m.NumHeads, MaxHeads},
		{"num_key_value_heads", m.NumKVHeads, MaxHeads},
		{"head_dim", m.HeadDim, MaxHeadDim},
		{"vocab_size", m.VocabSize, MaxVocab},
		{"max_position_embeddings", m.MaxPositions, MaxPositions},
		{"rotary_dim", m.RotaryDim, MaxHeadDim},
		{"sliding_window", m.SlidingWindow, MaxPositions},
	}
	if e := m.MoE; e != nil {
		dims = append(dims,
			dim{"moe.num_experts", e.NumExperts, MaxExperts},
			dim{"moe.moe_intermediate_size", e.ExpertIntermediateSize, MaxIntermediate},
			dim{"moe.num_shared_experts", e.NumSharedExperts, MaxSharedExperts},
			dim{"moe.shared_expert_intermediate_size", e.SharedExpertIntermediateSize, MaxIntermediate})
	}
	if a := m.MLA; a != nil {
		dims = append(dims,
			dim{"mla.kv_lora_rank", a.KVLoRARank, MaxLoRARank},
			dim{"mla.q_lora_rank", a.QLoRARank, MaxLoRARank},
			dim{"mla.qk_nope_head_dim", a.QKNopeHeadDim, MaxHeadDim},
			dim{"mla.qk_rope_head_dim", a.QKRopeHeadDim, MaxHeadDim},
			dim{"mla.v_head_dim", a.VHeadDim, MaxHeadDim})
	}
	for _, d := range dims {
		if d.v > d.max {
			return &FieldError{Field: d.name, Reason: fmt.Sprintf("%d is past %d, the most Headroom takes (the largest served models stay far below it)", d.v, d.max)}
		}
	}
	return nil
}

// validateText refuses names that are not one line of printable text:
// they go into catalog files, logs and error messages.
func (m *Model) validateText() error {
	type text struct {
		name, v string
		max     int
	}
	texts := []text{
		{"id", m.ID, maxTextBytes}, {"name", m.Name, maxTextBytes}, {"hf_id", m.HFID, maxTextBytes},
		{"architecture", m.Architecture, maxTextBytes}, {"source", m.Source, maxSourceTextBytes},
	}
	for i, a := range m.Aliases {
		texts = append(texts, text{fmt.Sprintf("aliases[%d]", i), a, maxTextBytes})
	}
	for _, t := range texts {
		if r := textReason(t.v, t.max); r != "" {
			return &FieldError{Field: t.name, Reason: r}
		}
	}
	return nil
}

// textReason says why s is not one line of at most max bytes of printable
// UTF-8 ("" when it is).
func textReason(s string, max int) string {
	if len(s) > max {
		return fmt.Sprintf("is %d bytes long, more than %d", len(s), max)
	}
	if !utf8.ValidString(s) {
		return "is not valid UTF-8"
	}
	for _, r := range s {
		if !unicode.IsPrint(r) {
			return fmt.Sprintf("holds the character %U (a line break or another control character)", r)
		}
	}
	return ""
}
