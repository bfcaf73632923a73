package steptime

import (
	"fmt"
	"math"

	"github.com/headroom-sim/headroom/models"
)

// Kernel is one kind of kernel in a step, for explanations: every call of
// it in the pass (usually one per layer) summed.
type Kernel struct {
	Op    models.OpKind
	Name  string
	Count int
	// Shape describes one call (GEMM m×n×k and format, attention batch and
	// lengths, collective bytes).
	Shape string
	Sec   float64
	Bound Bound
	// Source is where the time comes from: the kernel table (measured, or
	// interpolated between measured shapes) or the formula.
	Source string
	// MeasuredSec is one call's measured time when the table holds this
	// exact shape (0: none), to set beside the prediction.
	MeasuredSec float64
}

type visitor func(Kernel)

func (s *Model) formulaSource() string { return "formula (" + s.prof.Source + ")" }

func (s *Model) tableSource(table string, exact bool) string {
	if exact {
		return "table " + s.db.System + " " + table + " (measured shape)"
	}
	return "table " + s.db.System + " " + table + " (interpolated)"
}

// eager reports whether a step of t token rows launches its kernels from
// the host rather than replaying a CUDA graph.
func (s *Model) eager(t int) bool { return t > s.graphTokens }

// launchFloor applies the host launch time to an eagerly launched kernel.
func (s *Model) launchFloor(sec float64, calls int, eager bool) float64 {
	if !eager || s.prof.EagerLaunchUS <= 0 {
		return sec
	}
	return math.Max(sec, float64(calls)*s.prof.EagerLaunchUS*1e-6*s.prof.Scale.speed().Overhead)
}

// scaleMeasured applies the calibration scales to a measured latency,
// by the resource the kernel is bound by at that shape.
func (s *Model) scaleMeasured(sec float64, b Bound) float64 {
	sc := s.prof.Scale.speed()
	switch b {
	case BoundCompute:
		return sec / sc.Compute
	case BoundMemory:
		return sec / sc.Memory
	case BoundLink:
		return sec / sc.Link
	}
	return sec * sc.Overhead
}

// gemm is the time of one call of g with m token rows.
func (s *Model) gemm(g models.GEMMShape, m int, eager bool, visit visitor) float64 {
	sec, bound, src, measured := s.gemmCall(g.Format, m, g.N, g.K, visit != nil)
	if eager {
		sec = s.eagerGEMMFloor(sec, g.Format)
	}
	if visit != nil {
		visit(Kernel{Op: g.Op, Name: g.Name, Count: g.Count, Shape: fmt.Sprintf("m=%d n=%d k=%d %s", m, g.N, g.K, g.Format),
			Sec: sec * float64(g.Count), Bound: bound, Source: src, MeasuredSec: measured})
	}
	return sec * float64(g.Count)
}

// eagerGEMMFloor holds a GEMM of sec seconds in format, launched from the
// host, to the profile's eager floor for the format.
func (s *Model) eagerGEMMFloor(sec float64, format string) float64 {
	return math.Max(sec, s.prof.EagerFloorUS(format)*1e-6*s.prof.Scale.speed().Overhead)
}

// gemmCall is one m×k by k×n GEMM in format: the measured table where it
// covers the shape, the formula elsewhere; src and measured only when
// explain is set.
func (s *Model) gemmCall(format string, m, n, k int, explain bool) (sec float64, bound Bound, src string, measured float64) {
	sec, bound = FormulaGEMM(&s.prof, s.hw, format, m, n, k)
	if s.db != nil {
		wb, ab := FormatBytes(format)
		if t, ok := s.db.LookupGEMM(format, m, n, k, s.hw.Roof(format), wb, ab); ok {
			sec = s.scaleMeasured(t, bound)
			if explain {
				exact := s.db.hasGEMM(format, m, n, k)
				src = s.tableSource("gemm/"+format, exact)
				if exact {
					measured = t
				}
			}
			return sec, bound, src, measured
		}
	}
	return s.formulaCall(sec, bound, explain)
}

// mlaProjections are the GEMMs of an MLA attention block, which the MLA
// module rows time with the rest of the block.
var mlaProjections = map[string]bool{"q_a_proj": true, "q_b_proj": true, "q_proj": true, "kv_a_proj": true, "kv_b_proj": true, "o_proj": true}

// sharedExperts are the GEMMs of a MoE layer's shared experts.
var sharedExperts = map[string]bool{"shared_gate_up_proj": true, "shared_down_proj": true}

// SharedExpertsStreamTokens is the largest step (token rows) whose shared
// experts vLLM runs on a second CUDA stream, beside the routed experts
// (fused_moe/layer.py: the shared-experts stream, used up to
// VLLM_SHARED_EXPERTS_STREAM_TOKEN_THRESHOLD, 256 by default; above it the
// input clone costs more than the overlap saves and they run in turn).
const SharedExpertsStreamTokens = 256

// sharedOverlaps reports whether a step of t token rows runs its shared
// experts beside the routed ones.
func (s *Model) sharedOverlaps(t int) bool {
	return s.shapes.MoE != nil && t <= SharedExpertsStreamTokens && s.hasShared()
}

func (s *Model) hasShared() bool {
	for _, g := range s.shapes.GEMMs {
		if sharedExperts[g.Name] {
			return true
		}
	}
	return false
}

// sharedTime is the shared experts' GEMMs at t token rows, each kernel
// passed to visit with its time scaled by keep (the share not hidden
// behind the routed experts).
func (s *Model) sharedTime(t int, eager bool, keep float64, visit visitor) float64 {
	var sum float64
	for _, g := range s.shapes.GEMMs {
		if !sharedExperts[g.Name] {
			continue
		}
		var inner visitor
		if visit != nil {
			inner = func(k Kernel) {
				k.Sec *= keep
				if keep < 1 {
					k.Name += fmt.Sprintf(" (%.0f%% hidden behind the routed experts on the shared-experts stream)", 100*(1-keep))
				}
				visit(k)
			}
		}
		sum += s.gemm(g, t, eager, inner)
	}
	return sum
}

// denseTime is the time of every kernel whose cost depends only on the
// step's token rows t: the projections and dense MLP, the router, the
// elementwise kernels and the tensor-parallel all-reduces.
func (s *Model) denseTime(t int, visit visitor) float64 {
	eager := s.eager(t)
	var sum float64
	for _, g := range s.shapes.GEMMs {
		if g.PerSampled || (s.mlaGEMM != "" && mlaProjections[g.Name]) || (sharedExperts[g.Name] && s.sharedOverlaps(t)) {
			continue
		}
		sum += s.gemm(g, t, eager, visit)
	}
	sh := &s.shapes
	elt := FormulaElementwise(&s.prof, s.hw, float64(t)*sh.ElementwiseBytesPerToken, sh.ElementwiseKernels)
	elt = s.launchFloor(elt, sh.ElementwiseKernels, eager)
	sum += elt
	if visit != nil {
		visit(Kernel{Op: models.OpElementwise, Name: "norms, rotary, residual, activation", Count: sh.ElementwiseKernels,
			Shape: fmt.Sprintf("%d tokens, %.0f B/token", t, sh.ElementwiseBytesPerToken), Sec: elt, Bound: BoundMemory, Source: s.formulaSource()})
	}
	if n := sh.AllReducesPerPass; n > 0 && s.tp > 1 {
		bytes := float64(t) * float64(sh.Hidden) * sh.ActBytes
		one, src, measured := s.allReduce(bytes, eager, visit != nil)
		sum += one * float64(n)
		if visit != nil {
			b := BoundLink
			if one < 20e-6 {
				b = BoundOverhead
			}
			visit(Kernel{Op: models.OpAllReduce, Name: "tensor-parallel all-reduce", Count: n,
				Shape: fmt.Sprintf("%.0f KiB over %d GPUs", bytes/1024, s.tp), Sec: one * float64(n), Bound: b, Source: src, MeasuredSec: measured})
		}
	}
	return sum
}

// allReduce is one tensor-parallel all-reduce of bytes per rank.
func (s *Model) allReduce(bytes float64, eager, explain bool) (sec float64, src string, measured float64) {
	if s.db != nil {
		if t, ok := s.db.LookupAllReduce(s.tp, eager, bytes); ok {
			if explain {
				exact := s.db.hasAllReduce(s.tp, eager, bytes)
				src = s.tableSource("comm/custom_allreduce", exact)
				if exact {
					measured = t
				}
			}
			return s.scaleMeasured(t, BoundLink), src, measured
		}
	}
	t, _ := FormulaAllReduce(&s.prof, s.hw, s.tp, bytes)
	if explain {
		src = s.formulaSource()
	}
	return s.launchFloor(t, 1, eager), src, 0
}

// sampledTime is the time of the kernels that run on the sampled
// positions only: the LM head, the logits gather over TP ranks and the
// sampler.
func (s *Model) sampledTime(n int, eager bool, visit visitor) float64 {
	if n <= 0 {
		return 0
	}
	var sum float64
	for _, g := range s.shapes.GEMMs {
		if g.PerSampled {
			sum += s.gemm(g, n, eager, visit)
			if s.tp > 1 {
				// The logits of every rank's vocabulary slice are gathered
				// (fp32) before sampling.
				bytes := float64(n) * float64(g.N) * 4 * float64(s.tp)
				t, _ := FormulaNCCL(&s.prof, s.hw, "all_gather", s.tp, bytes)
				src := s.formulaSource()
				if s.db != nil {
					if mt, ok := s.db.LookupNCCL("all_gather", s.tp, bytes); ok {
						t, src = s.scaleMeasured(mt, BoundLink), s.tableSource("comm/nccl all_gather", false)
					}
				}
				sum += t
				if visit != nil {
					visit(Kernel{Op: models.OpAllReduce, Name: "logits gather", Count: 1, Shape: fmt.Sprintf("%.0f KiB over %d GPUs", bytes/1024, s.tp),
						Sec: t, Bound: BoundLink, Source: src})
				}
			}
			// Sampling: softmax, top-k/top-p over the vocabulary, fp32.
			vocab := float64(g.N * s.tp)
			st := FormulaElementwise(&s.prof, s.hw, float64(n)*vocab*12, 4)
			st = s.launchFloor(st, 4, eager)
			sum += st
			if visit != nil {
				visit(Kernel{Op: models.OpLMHead, Name: "sampler", Count: 4, Shape: fmt.Sprintf("%d × %.0f logits", n, vocab),
					Sec: st, Bound: BoundMemory, Source: s.formulaSource()})
			}
		}
	}
	return sum
}

// moeKey is the fused-MoE configuration of this model's experts.
func (s *Model) moeKey() MoEKey {
	ms := s.shapes.MoE
	return MoEKey{Format: ms.Format, Routing: s.routing, Hidden: ms.Hidden, Inter: ms.Inter, TopK: ms.TopK, Experts: ms.Experts, TP: ms.TP, EP: ms.EP}
}

// moeTime is the routed experts' time for g tokens entering every MoE
// layer, with the expert-parallel exchange around them.
func (s *Model) moeTime(g int, eager bool, visit visitor) float64 {
	ms := s.shapes.MoE
	if ms == nil || g <= 0 {
		return 0
	}
	k := s.moeKey()
	w := MoEWorkFor(k, g)
	sec, bound, src, measured := s.fusedMoE(k, g, w, visit != nil)
	if ms.Format == FormatFP8Block && g >= DeepGEMMMinTokens {
		// vLLM moves block-fp8 MoE to DeepGEMM's grouped GEMMs for large
		// batches, where they beat Triton's kernel: the faster of the two.
		if dg, dsrc := s.deepGEMMMoE(k, w, visit != nil); dg > 0 && dg < sec {
			sec, src, measured = dg, dsrc, 0
		}
	}
	sec = s.launchFloor(sec, 2, eager)
	sum := sec * float64(ms.Layers)
	if visit != nil {
		split := fmt.Sprintf("TP%d", ms.TP)
		if ms.EP > 1 {
			split = fmt.Sprintf("EP%d", ms.EP)
		}
		visit(Kernel{Op: models.OpExperts, Name: "fused MoE (routed experts)", Count: ms.Layers,
			Shape: fmt.Sprintf("%d tokens, %d/%d experts of %d×%d, %s, %s", g, ms.TopK, ms.Experts, ms.Hidden, ms.Inter, ms.Format, split),
			Sec:   sum, Bound: bound, Source: src, MeasuredSec: measured})
	}
	if s.dp > 1 {
		// vLLM's default all2all backend (allgather_reducescatter): every
		// MoE layer all-gathers the data-parallel ranks' hidden states and
		// reduce-scatters the outputs, across the ranks.
		bytes := float64(g) * float64(ms.Hidden) * s.shapes.ActBytes
		var one float64
		src := s.formulaSource()
		for _, op := range []string{"all_gather", "reduce_scatter"} {
			t, _ := FormulaNCCL(&s.prof, s.hw, op, s.dp, bytes)
			if s.db != nil {
				if mt, ok := s.db.LookupNCCL(op, s.dp, bytes); ok {
					t, src = s.scaleMeasured(mt, BoundLink), s.tableSource("comm/nccl", false)
				}
			}
			one += s.launchFloor(t, 1, eager)
		}
		sum += one * float64(ms.Layers)
		if visit != nil {
			visit(Kernel{Op: models.OpAllToAll, Name: "data-parallel all-gather + reduce-scatter", Count: 2 * ms.Layers,
				Shape: fmt.Sprintf("%.0f KiB over %d ranks", bytes/1024, s.dp), Sec: one * float64(ms.Layers), Bound: BoundLink, Source: src})
		}
	}
	return sum
}

// fusedMoE is one routed-expert layer on vLLM's fused-MoE kernel: the
// measured table for this configuration; else the table's utilisation for
// the same model shape split another way over the GPUs (or measured on the
// family's other GPU), carried to this split's and this GPU's ideal time;
// else the formula.
func (s *Model) fusedMoE(k MoEKey, g int, w MoEWork, explain bool) (sec float64, bound Bound, src string, measured float64) {
	sec, bound = FormulaMoE(&s.prof, s.hw, k.Format, w)
	if s.db == nil {
		return s.formulaCall(sec, bound, explain)
	}
	t, from, ok := s.db.LookupMoEStandIn(k, g, s.hw)
	exact := false
	if ok {
		from = "the " + from + " rows (vLLM's kernel for this format here)"
	} else {
		t, ok = s.db.LookupMoE(k, g, s.hw)
		exact = ok && s.db.hasMoE(k, g)
	}
	if !ok {
		t, from, ok = s.db.LookupMoETransfer(k, g, s.hw)
	}
	if p, pok := s.db.PredecessorMoE(k, g, s.hw); pok && (!ok || p < t) {
		t, from, exact, ok = p, s.db.Predecessor.System+" (faster than this GPU's own rows)", false, true
	}
	if ok {
		sec = s.scaleMeasured(t, bound) / s.prof.Scale.speed().Experts
		if explain {
			switch {
			case from == "" && k.Routing != measuredRouting(k.Routing):
				src = fmt.Sprintf("table %s moe/%s %s, carried to %s routing", s.db.System, k.Format, measuredRouting(k.Routing), k.Routing)
			case from == "":
				src = s.tableSource("moe/"+k.Format+" "+k.Routing, exact)
			default:
				src = fmt.Sprintf("table %s moe/%s %s, utilisation of %s", s.db.System, k.Format, k.Routing, from)
			}
			if exact {
				measured = t
			}
		}
		return sec, bound, src, measured
	}
	return s.formulaCall(sec, bound, explain)
}

// formulaCall is a kernel call priced by the formula: sec and bound, and
// the formula as its source when explain is set.
func (s *Model) formulaCall(sec float64, bound Bound, explain bool) (float64, Bound, string, float64) {
	src := ""
	if explain {
		src = s.formulaSource()
	}
	return sec, bound, src, 0
}

// DeepGEMMMinTokens is the batch from which vLLM runs block-fp8 MoE on
// DeepGEMM's grouped GEMMs instead of Triton's fused-MoE kernel
// (TritonOrDeepGemmExperts: DeepGEMM needs M ≥ its 128-row alignment).
const DeepGEMMMinTokens = 128

// deepGEMMMoE prices a block-fp8 MoE layer on DeepGEMM's contiguous
// grouped GEMMs: every touched expert's rows padded to a 128-row block,
// the gate/up and down projections as one GEMM each over the padded rows
// (the dense fp8_block GEMM's measured or fitted efficiency — the tables
// time the Triton path only), at least as long as streaming the touched
// experts' weights, plus the permutation of the hidden states around it.
func (s *Model) deepGEMMMoE(k MoEKey, w MoEWork, explain bool) (float64, string) {
	if w.ExpertsTouched < 1 || w.Pairs < 1 {
		return 0, ""
	}
	inter := k.Inter / max(k.TP, 1)
	const align = 128
	perExpert := w.Pairs / w.ExpertsTouched
	rows := int(math.Ceil(w.ExpertsTouched) * math.Ceil(perExpert/align) * align)
	t1, _, src, _ := s.gemmCall(FormatFP8Block, rows, 2*inter, k.Hidden, explain)
	t2, _, _, _ := s.gemmCall(FormatFP8Block, rows, k.Hidden, inter, false)
	wb, _ := FormatBytes(FormatFP8Block)
	c := s.prof.gemmCoeffs(FormatFP8Block)
	stream := w.ExpertsTouched * 3 * float64(k.Hidden) * float64(inter) * wb / (s.hw.BytesPerSec * c.BandwidthEfficiency) / s.prof.Scale.speed().Memory
	// Permute in, quantise, unpermute and reduce out: four passes over
	// the pairs' hidden states.
	perm := FormulaElementwise(&s.prof, s.hw, 4*w.Pairs*float64(k.Hidden)*2, 4)
	t := math.Max(t1+t2, stream) + perm
	if explain {
		src = "DeepGEMM grouped GEMMs priced by " + src
	}
	return t / s.prof.Scale.speed().Experts, src
}
