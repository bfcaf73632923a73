package api

import (
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/headroom-sim/headroom/models"
	"github.com/headroom-sim/headroom/sim/engine"
)

// TestEngineBoundsAreTheEngines: every request body that carries one of
// vLLM's engine settings bounds it as the engine does (engine.Config's
// Validate), so that no shape of the settings takes a value another
// refuses.
func TestEngineBoundsAreTheEngines(t *testing.T) {
	blocks := make([]string, len(engine.BlockSizes))
	for i, b := range engine.BlockSizes {
		blocks[i] = strconv.Itoa(b)
	}
	want := map[string][]string{
		"max_num_seqs":           {"min=1", fmt.Sprintf("max=%d", engine.MaxNumSeqs)},
		"max_num_batched_tokens": {"min=1", fmt.Sprintf("max=%d", engine.MaxNumBatchedTokens)},
		"max_model_len":          {"min=1", fmt.Sprintf("max=%d", models.MaxPositions)},
		"block_size":             {"oneof=" + strings.Join(blocks, " ")},
		"gpu_memory_utilization": {"gt=0", "lte=1"},
	}
	seen := map[string]int{}
	for _, v := range []any{CapacityEngine{}, StepTimeEngine{}, ValidateParams{}, CalibrateParams{}} {
		typ := reflect.TypeOf(v)
		for i := range typ.NumField() {
			f := typ.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			rules, ok := want[name]
			if !ok {
				continue
			}
			seen[name]++
			got := strings.Split(f.Tag.Get("binding"), ",")
			for _, r := range rules {
				if !slices.Contains(got, r) {
					t.Errorf("%s.%s: binding %q lacks the engine's %q", typ.Name(), f.Name, f.Tag.Get("binding"), r)
				}
			}
		}
	}
	// The DTOs above carry every setting: a rename would otherwise pass.
	for name := range want {
		if seen[name] == 0 {
			t.Errorf("no request body carries %s", name)
		}
	}
}
