package memory

import (
	"testing"

	"github.com/headroom-sim/headroom/catalogs"
	"github.com/headroom-sim/headroom/models"
)

// TestKVGroups checks vLLM's hybrid grouping: one group when every layer
// has the same attention type; otherwise groups of min(full, sliding)
// layers (max when the counts are within 25%), every block spanning one
// group's layers.
func TestKVGroups(t *testing.T) {
	cat, err := catalogs.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	synthetic := func(layers, sliding int) *models.Model {
		return &models.Model{ID: "synthetic", NumLayers: layers, SlidingWindow: 128, SlidingWindowLayers: sliding}
	}
	for _, c := range []struct {
		name       string
		model      *models.Model
		wantGroups int
		wantLayers int
	}{
		{"llama-3.1-8b: full attention only", mustModel(t, cat, "llama-3.1-8b"), 1, 32},
		{"mistral-7b: sliding window on every layer", mustModel(t, cat, "mistral-7b"), 1, 32},
		{"gemma-2-9b: 21 full + 21 sliding", mustModel(t, cat, "gemma-2-9b"), 2, 21},
		{"gpt-oss-120b: 18 full + 18 sliding", mustModel(t, cat, "gpt-oss-120b"), 2, 18},
		{"10 full + 30 sliding: groups of the smaller count", synthetic(40, 30), 1 + 3, 10},
		{"30 full + 10 sliding", synthetic(40, 10), 3 + 1, 10},
		{"20 full + 24 sliding: within 25%, groups of the larger", synthetic(44, 24), 1 + 1, 24},
		{"20 full + 25 sliding: 25% apart, groups of the smaller", synthetic(45, 25), 1 + 2, 20},
		{"8 full + 20 sliding: ceil for the remainder", synthetic(28, 20), 1 + 3, 8},
	} {
		t.Run(c.name, func(t *testing.T) {
			groups, layers := kvGroups(c.model)
			if groups != c.wantGroups || layers != c.wantLayers {
				t.Errorf("kvGroups = %d groups of %d layers, want %d of %d", groups, layers, c.wantGroups, c.wantLayers)
			}
			// Every layer has a slot: groups × layers covers them all.
			if groups*layers < c.model.NumLayers {
				t.Errorf("%d groups of %d layers hold fewer than %d layers", groups, layers, c.model.NumLayers)
			}
		})
	}
}

func mustModel(t *testing.T, cat *catalogs.Catalog, id string) *models.Model {
	t.Helper()
	m, err := cat.Model(id)
	if err != nil {
		t.Fatal(err)
	}
	return m
}
