package steptime

import (
	"fmt"
	"math"

	"github.com/headroom-sim/headroom/models"
)

// equivalentLength is the prompt length s whose causal attention does
// pairs/batch query-key pairs: s(s+1)/2 = pairs/batch. A step's prefill
// chunks (each q new tokens after c cached ones) are looked up as batch
// prompts of that length: the same work on as many sequences.
func equivalentLength(pairs, batch float64) float64 {
	if batch <= 0 || pairs <= 0 {
		return 0
	}
	return (-1 + math.Sqrt(1+8*pairs/batch)) / 2
}

// attentionTime is the step's attention time over every layer.
func (s *Model) attentionTime(b *models.Batch, visit visitor) float64 {
	a := s.shapes.Attn
	var sum float64
	if b.PrefillTokens > 0 {
		chunks := float64(max(b.PrefillChunks, 1))
		if a.MLA {
			sum += s.mlaAttention(b, true, visit)
		} else {
			sum += s.prefillLayers(s.attn, a.FullLayers, chunks, b.PrefillPairs, b.PrefillKV, visit)
			if a.SlidingLayers > 0 {
				sum += s.prefillLayers(s.attnSWA, a.SlidingLayers, chunks, b.PrefillPairsSWA, b.PrefillKVSWA, visit)
			}
		}
	}
	if b.DecodeSeqs > 0 {
		seqs := float64(b.DecodeSeqs)
		q := seqs + float64(b.SpecTokens)
		if a.MLA {
			sum += s.mlaAttention(b, false, visit)
		} else {
			sum += s.decodeLayers(s.attn, a.FullLayers, seqs, b.DecodeContext, q, b.DecodeContext+b.SpecPairs, visit)
			if a.SlidingLayers > 0 {
				sum += s.decodeLayers(s.attnSWA, a.SlidingLayers, seqs, b.DecodeContextSWA, q, b.DecodeContextSWA+b.SpecPairsSWA, visit)
			}
		}
	}
	return sum
}

func (s *Model) prefillLayers(shape AttentionShape, layers int, chunks, pairs, kv float64, visit visitor) float64 {
	if layers <= 0 || pairs <= 0 {
		return 0
	}
	one, bound := FormulaContextAttention(&s.prof, s.hw, shape, chunks, pairs, kv)
	src := ""
	sEq := equivalentLength(pairs, chunks)
	if s.db != nil {
		roof := Roof{FLOPS: s.hw.AttentionFLOPS, BytesPerSec: s.hw.BytesPerSec}
		look := shape
		if look.Key.Window > 0 {
			if _, k := nearestAttention(s.db.context, look.Key); k != look.Key || s.db.context[k] == nil {
				// No windowed measurements: full attention over the
				// windowed pairs.
				look.Key.Window = 0
			}
		}
		if t, ok := s.db.LookupContextAttention(look, chunks, math.Max(sEq, 1), roof); ok {
			one = s.scaleMeasured(t, bound)
			if visit != nil {
				src = s.tableSource("context_attention", false)
			}
		}
	}
	sum := one * float64(layers)
	if visit != nil {
		if src == "" {
			src = s.formulaSource()
		}
		name := "attention prefill"
		if shape.Key.Window > 0 {
			name += fmt.Sprintf(" (window %d)", shape.Key.Window)
		}
		visit(Kernel{Op: models.OpAttnPrefill, Name: name, Count: layers,
			Shape: fmt.Sprintf("%.0f chunks ≈ %.0f-token prompts, %d/%d heads × %d, KV %s", chunks, sEq, shape.Key.Heads, shape.Key.KVHeads, shape.Key.HeadDim, shape.Key.KVDType),
			Sec:   sum, Bound: bound, Source: src})
	}
	return sum
}

// decodeLayers is the decode attention of seqs sequences reading ctx KV
// tokens in all, with queries query tokens computing pairs query-key
// pairs (queries = seqs and pairs = ctx without speculative decoding).
func (s *Model) decodeLayers(shape AttentionShape, layers int, seqs, ctx, queries, pairs float64, visit visitor) float64 {
	if layers <= 0 || seqs <= 0 {
		return 0
	}
	one, bound := FormulaDecodeAttention(&s.prof, s.hw, shape, seqs, ctx)
	src, measured := "", 0.0
	mean := ctx / seqs
	if s.db != nil {
		roof := Roof{FLOPS: s.hw.AttentionFLOPS, BytesPerSec: s.hw.BytesPerSec}
		look := shape
		if look.Key.Window > 0 {
			if _, k := nearestAttention(s.db.decode, look.Key); k != look.Key || s.db.decode[k] == nil {
				look.Key.Window = 0
			}
		}
		if t, ok := s.db.LookupDecodeAttention(look, seqs, math.Max(mean, 1), roof); ok {
			one = s.scaleMeasured(t, bound)
			if visit != nil {
				exact := s.db.hasDecode(look.Key, int(seqs), mean)
				src = s.tableSource("generation_attention", exact)
				if exact {
					measured = t
				}
			}
		}
	}
	spec := ""
	if queries > seqs {
		one *= verifyScale(shape, Roof{FLOPS: s.hw.AttentionFLOPS, BytesPerSec: s.hw.BytesPerSec}, seqs, ctx, queries, pairs)
		spec = fmt.Sprintf(", %.0f queries (drafts verified)", queries)
		measured = 0
	}
	sum := one * float64(layers)
	if visit != nil {
		if src == "" {
			src = s.formulaSource()
		}
		name := "attention decode"
		if shape.Key.Window > 0 {
			name += fmt.Sprintf(" (window %d)", shape.Key.Window)
		}
		visit(Kernel{Op: models.OpAttnDecode, Name: name, Count: layers,
			Shape: fmt.Sprintf("%.0f seqs × %.0f KV tokens%s, %d/%d heads × %d, KV %s", seqs, mean, spec, shape.Key.Heads, shape.Key.KVHeads, shape.Key.HeadDim, shape.Key.KVDType),
			Sec:   sum, Bound: bound, Source: src, MeasuredSec: measured})
	}
	return sum
}

// mlaAttention prices multi-head latent attention with the cost model's
// FLOPs and bytes on the attention coefficients: the kernel tables'
// MHA/GQA rows do not describe it.
func (s *Model) mlaAttention(b *models.Batch, prefill bool, visit visitor) float64 {
	if s.mlaGEMM != "" {
		return s.mlaModule(b, prefill, visit)
	}
	return s.mlaFormula(b, prefill, visit)
}

// mlaFormula is mlaAttention on the formula.
func (s *Model) mlaFormula(b *models.Batch, prefill bool, visit visitor) float64 {
	cost := s.cost.Step(b)
	op := models.OpAttnDecode
	if prefill {
		op = models.OpAttnPrefill
	}
	c := cost[op]
	sc := s.prof.Scale.speed()
	pre, dec := s.prof.Attention.prefill(s.attn.Key.KVDType), s.prof.Attention.decode(s.attn.Key.KVDType)
	tc := c.FLOPs / (s.hw.AttentionFLOPS * pre.TensorEfficiency) / sc.Compute
	tm := c.Bytes() / (s.hw.BytesPerSec * dec.BandwidthEfficiency) / sc.Memory
	over := pre.OverheadUS
	if !prefill {
		over = dec.OverheadUS
	}
	t := math.Max(tc, tm) + float64(c.Count)*over*1e-6*sc.Overhead
	bound := boundOf(tc, tm, 0)
	if visit != nil {
		visit(Kernel{Op: op, Name: "MLA " + op.String(), Count: c.Count, Shape: fmt.Sprintf("%.3g FLOP, %.3g B", c.FLOPs, c.Bytes()),
			Sec: t, Bound: bound, Source: s.formulaSource()})
	}
	return t
}

// Explain lists every kernel of the step with its time, bound and source.
func (s *Model) Explain(b *models.Batch) []Kernel {
	t := b.Tokens()
	if t == 0 {
		return nil
	}
	var out []Kernel
	visit := func(k Kernel) { out = append(out, k) }
	eager := s.eager(t)
	s.denseTime(t, visit)
	if s.shapes.MoE != nil {
		moe := s.moeTime(s.groupTokens(b), eager, visit)
		if s.sharedOverlaps(t) {
			shared := s.sharedTime(t, eager, 1, nil)
			keep := 0.0
			if shared > moe {
				keep = (shared - moe) / shared
			}
			s.sharedTime(t, eager, keep, visit)
		}
	}
	s.attentionTime(b, visit)
	s.sampledTime(b.Sampled, eager, visit)
	return out
}
