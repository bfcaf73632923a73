package steptime

import (
	"fmt"
	"math"

	"github.com/headroom-sim/headroom/models"
)

// mlaModule prices a step's MLA attention blocks from the kernel tables'
// MLA module rows (the whole block: projections, norms, rotary, the MLA
// kernel): the step's prefill chunks as prompts of the same causal work
// on the context rows, its decodes at their mean KV length on the
// generation rows. The rows are looked up at the query heads one GPU
// holds, the model's heads over TP, as vLLM shards them; the MLA kernels'
// own handling of few heads (FlashMLA's 64-head tiles, CUTLASS MLA's
// padding to 128 on SM100) is in the rows, which were measured at 1-128
// local heads. A step that replays a CUDA graph sheds the launch floor the
// collector's eagerly run smallest rows show (mlaGraphTime).
func (s *Model) mlaModule(b *models.Batch, prefill bool, visit visitor) float64 {
	a := s.shapes.Attn
	k := MLAKey{KVDType: s.attn.Key.KVDType, GEMM: s.mlaGEMM, Heads: a.Heads}
	var batch, length float64
	if prefill {
		batch = float64(max(b.PrefillChunks, 1))
		length = math.Max(equivalentLength(b.PrefillPairs, batch), 1)
	} else {
		batch = float64(b.DecodeSeqs)
		length = math.Max(b.DecodeContext/batch, 1)
	}
	wb, _ := FormatBytes(s.mlaGEMM)
	t, ok := s.db.LookupMLAModule(prefill, k, batch, length, s.hw.Roof(s.mlaGEMM), wb)
	if !ok {
		return s.mlaFormula(b, prefill, visit)
	}
	eager := s.eager(b.Tokens())
	if !eager {
		t = s.mlaGraphTime(prefill, t)
	}
	bound, op, table, what := BoundMemory, models.OpAttnDecode, "mla_generation_module", fmt.Sprintf("%.0f seqs × %.0f KV tokens", batch, length)
	if prefill {
		bound, op, table, what = BoundCompute, models.OpAttnPrefill, "mla_context_module", fmt.Sprintf("%.0f chunks ≈ %.0f-token prompts", batch, length)
	}
	one := s.scaleMeasured(t, bound)
	sum := one * float64(a.FullLayers)
	if visit != nil {
		src := "table " + s.db.System + " " + table + " (DeepSeek-V3 dimensions, interpolated)"
		if !eager {
			src += ", eager launch floor removed"
		}
		visit(Kernel{Op: op, Name: "MLA attention block (projections, rotary, MLA kernel)", Count: a.FullLayers,
			Shape: fmt.Sprintf("%s, %d heads per GPU, KV %s, projections %s", what, a.Heads, k.KVDType, s.mlaGEMM),
			Sec:   sum, Bound: bound, Source: src})
	}
	return sum
}

// mlaGraphTime is a module row's time t when the step replays a CUDA
// graph. The collector ran the module eagerly (its smallest shapes all
// take the same ~75-85 µs, the host launching about fifteen kernels),
// so a row is max(GPU time, launch time): near the table's floor the
// launch time is what was timed, well above it the GPU's. The launch
// floor less the block's graph-replay floor (its projections at one row
// and the formula's MLA kernel, at their fitted overheads) is taken off
// in full at the floor and not at all from twice the floor up, linearly
// between.
func (s *Model) mlaGraphTime(prefill bool, t float64) float64 {
	floor := s.db.MLAModuleFloor(prefill, s.attn.Key.KVDType, s.mlaGEMM)
	if !(floor > 0) {
		return t
	}
	excess := floor - s.mlaGraphFloor(prefill)
	if excess <= 0 {
		return t
	}
	w := math.Min(math.Max((2*floor-t)/floor, 0), 1)
	return t - excess*w
}

// mlaGraphFloor is one MLA block's time at one token in a CUDA graph:
// its projection GEMMs at one row and its MLA kernel, on the formula's
// coefficients fitted to graph-replayed rows. Block-fp8 projections take
// the per-tensor fp8 coefficients (the same weight bytes): the block-fp8
// GEMM table was timed eagerly too, and its fit's small-row terms carry
// that launch floor.
func (s *Model) mlaGraphFloor(prefill bool) float64 {
	var sum float64
	for _, g := range s.shapes.GEMMs {
		if mlaProjections[g.Name] {
			f := g.Format
			if f == FormatFP8Block {
				f = FormatFP8
			}
			t, _ := FormulaGEMM(&s.prof, s.hw, f, 1, g.N, g.K)
			sum += t
		}
	}
	var one models.Batch
	if prefill {
		one.AddPrefill(1, 0, 0, true)
	} else {
		one.AddDecode(1, 0)
	}
	return sum + s.mlaFormula(&one, prefill, nil)/float64(max(s.shapes.Attn.FullLayers, 1))
}
