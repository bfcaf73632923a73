package models

import (
	"errors"
	"strings"
	"testing"
)

// TestValidateBounds (issue 23): dimensions past the architectural maxima
// and names that are not one printable line are refused naming the field;
// real models pass.
func TestValidateBounds(t *testing.T) {
	for _, m := range []*Model{llama31_8B(), llama2_70B(), deepseekV3()} {
		if err := m.Validate(); err != nil {
			t.Errorf("%s: %v", m.ID, err)
		}
	}
	for _, c := range []struct {
		name  string
		edit  func(*Model)
		field string
	}{
		{"1e9 layers", func(m *Model) { m.NumLayers = 1_000_000_000 }, "num_hidden_layers"},
		{"hidden 1<<20", func(m *Model) { m.HiddenSize = 1 << 20 }, "hidden_size"},
		{"vocab 1e9", func(m *Model) { m.VocabSize = 1_000_000_000 }, "vocab_size"},
		{"positions 1<<30", func(m *Model) { m.MaxPositions = 1 << 30 }, "max_position_embeddings"},
		{"head_dim 1<<20", func(m *Model) { m.HeadDim = 1 << 20 }, "head_dim"},
		{"experts 1e6", func(m *Model) { m.MoE.NumExperts = 1_000_000 }, "moe.num_experts"},
		{"kv_lora_rank 1e9", func(m *Model) { m.MLA.KVLoRARank = 1_000_000_000 }, "mla.kv_lora_rank"},
		{"an hf_id with a line break", func(m *Model) { m.HFID = "org/x\naliases: [llama-3.1-70b]" }, "hf_id"},
		{"an alias with a NUL", func(m *Model) { m.Aliases = []string{"ok", "a\x00b"} }, "aliases[1]"},
		{"an id of 300 bytes", func(m *Model) { m.ID = strings.Repeat("a", 300) }, "id"},
		{"a name that is not UTF-8", func(m *Model) { m.Name = "\xff" }, "name"},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := deepseekV3()
			c.edit(m)
			var fe *FieldError
			if err := m.Validate(); !errors.As(err, &fe) || fe.Field != c.field {
				t.Errorf("Validate = %v, want a %s error", err, c.field)
			}
		})
	}
}
