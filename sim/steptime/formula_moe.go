package steptime

import (
	"math"
	"sort"
)

// MoEWork is one GPU's fused-MoE work in a layer.
type MoEWork struct {
	Tokens         float64 // tokens entering the layer (all ranks' with EP)
	Pairs          float64 // token-expert pairs this GPU's experts serve
	ExpertsTouched float64 // distinct local experts with at least one token
	FLOPs          float64 // this GPU's routed-expert FLOPs
	WeightBytes    float64 // touched experts' weight bytes on this GPU
	ActBytes       float64 // activations read and written
	// Hidden and Inter are the expert GEMMs' sizes on this GPU (Inter is
	// the intermediate size over moe_tp); TopK the experts per token.
	Hidden, Inter, TopK float64
	// Loads are the tokens each local expert serves (largest first).
	Loads []float64
}

// FormulaMoE is the formula's fused-MoE layer time for w in format.
//
// vLLM's fused-MoE kernel sorts the routed pairs by expert, pads every
// expert's tokens to whole block_tokens-row blocks, and runs the two
// grouped GEMMs (gate/up: h → 2·I, down: I → h) block by block, each block
// streaming its expert's weights; the pairs of the whole batch (every
// rank's, with expert parallelism: the kernel walks all T·k routed pairs
// and skips the remote ones) are written to and summed from an
// intermediate buffer:
//
//	GEMM_g = max(2·padded·N·K / (peak·efficiency·K/(K + k_half)), touched experts' weights / (bw·eff))
//	traffic = (T·k·h·4 + T·h·2 + pairs·(h + 6·I)·2) B / (bw·eff)
//	t = overhead + GEMM_gate_up + GEMM_down + traffic
//
// k_half is the reduction depth at which a block's GEMM efficiency halves
// (a narrow expert at high TP spends its time in the block's prologue).
func FormulaMoE(p *Profile, h Hardware, format string, w MoEWork) (float64, Bound) {
	c := p.moeCoeffs(format)
	sc := p.Scale.speed()
	wb, _ := FormatBytes(format)
	bm := math.Max(c.BlockTokens, 1)
	var padded, touched, pairs float64
	for _, n := range w.Loads {
		if n > 0 {
			padded += math.Ceil(n/bm) * bm
			touched++
			pairs += n
		}
	}
	if w.Loads == nil { // a caller without the load vector: uniform loads
		touched, pairs = w.ExpertsTouched, w.Pairs
		if touched > 0 {
			padded = touched * math.Ceil(pairs/touched/bm) * bm
		}
	}
	hid, inter := w.Hidden, w.Inter
	peak := h.Roof(format).FLOPS
	e1 := c.Efficiency * hid / (hid + c.KHalf)
	e2 := c.Efficiency * inter / (inter + c.KHalf)
	bw := h.BytesPerSec * c.BandwidthEfficiency
	weights := touched * hid * inter * wb
	tc := (2*padded*hid*2*inter/(peak*e1) + 2*padded*inter*hid/(peak*e2)) / sc.Compute / sc.Experts
	tm := 3 * weights / bw / sc.Memory / sc.Experts
	t1 := math.Max(2*padded*hid*2*inter/(peak*e1)/sc.Compute, 2*weights/bw/sc.Memory)
	t2 := math.Max(2*padded*inter*hid/(peak*e2)/sc.Compute, weights/bw/sc.Memory)
	traffic := (w.Tokens*w.TopK*hid*4 + w.Tokens*hid*2 + pairs*(hid+6*inter)*2) / bw / sc.Memory
	over := c.OverheadUS * 1e-6 * sc.Overhead
	return over + (t1+t2)/sc.Experts + traffic/sc.Experts, boundOf(tc, tm+traffic, over)
}

// MoEWorkFor is one GPU's routed-expert work per MoE layer for a measured
// fused-MoE configuration with tokens tokens entering it: a (moe_tp,
// moe_ep) rank holds inter/tp of every expert (EP 1) or experts/ep whole
// experts, and serves the pairs routed to them (MoELoads).
func MoEWorkFor(k MoEKey, tokens int) MoEWork {
	fg := float64(tokens)
	wb, _ := FormatBytes(k.Format)
	h := float64(k.Hidden)
	inter := float64(k.Inter) / float64(max(k.TP, 1))
	loads := MoELoads(k, tokens)
	w := MoEWork{Tokens: fg, Hidden: h, Inter: inter, TopK: float64(k.TopK), Loads: loads}
	for _, n := range loads {
		if n > 0 {
			w.Pairs += n
			w.ExpertsTouched++
		}
	}
	w.FLOPs = 2 * 3 * h * inter * w.Pairs
	w.WeightBytes = w.ExpertsTouched * 3 * h * inter * wb
	w.ActBytes = w.Pairs * (2*h + 3*inter) * 2
	return w
}

// MoELoads are the tokens rank 0's local experts serve (largest first) when
// tokens tokens each pick k.TopK of k.Experts experts, as AIConfigurator's
// collector routes them:
//
//   - balanced: every expert-parallel rank gets an equal share of the
//     T·k pairs, spread evenly over its experts;
//   - power_law_α: per-expert loads drawn from a power law x^−α on
//     [1, 0.8·T] ([0.01, 2] when T·k ≤ E), scaled to T·k pairs, rounded
//     and capped at T; with expert parallelism the most loaded rank is
//     timed. The formula takes the expected draw: the loads at evenly
//     spaced quantiles, and for EP the hottest expert with an even share
//     of the rest (every ep-th of the sorted loads).
func MoELoads(k MoEKey, tokens int) []float64 {
	e := max(k.Experts, 1)
	ep := max(k.EP, 1)
	local := max(e/ep, 1)
	tk := float64(tokens * max(k.TopK, 1))
	if k.Routing == RoutingRandom {
		return everyEP(binomialLoads(tokens, min(max(k.TopK, 1), e), e), ep, local)
	}
	if k.Routing != RoutingPowerLaw && k.Routing != RoutingPowerLaw1 {
		perRank := math.Ceil(tk / float64(ep))
		out := make([]float64, local)
		base := math.Floor(perRank / float64(local))
		rem := int(perRank - base*float64(local))
		for i := range out {
			out[i] = base
			if i < rem {
				out[i]++
			}
		}
		return out
	}
	alpha := 1.2
	if k.Routing == RoutingPowerLaw1 {
		alpha = 1.01
	}
	lo, hi := 1.0, 0.8*float64(tokens)
	if tk <= float64(e) {
		lo, hi = 0.01, 2
	}
	hi = math.Max(hi, lo*1.0001)
	a := 1 - alpha
	xs := make([]float64, e)
	var sum float64
	for i := range xs {
		u := 1 - (float64(i)+0.5)/float64(e)
		xs[i] = math.Pow((math.Pow(hi, a)-math.Pow(lo, a))*u+math.Pow(lo, a), 1/a)
		sum += xs[i]
	}
	var tot float64
	for i := range xs {
		xs[i] = math.Round(xs[i] / sum * tk)
		tot += xs[i]
	}
	// The rounding remainder goes to (or comes from) the largest loads.
	for d, i := tk-tot, 0; d != 0 && e > 0; i = (i + 1) % e {
		switch {
		case d > 0:
			xs[i]++
			d--
		case xs[e-1-i] > 0:
			xs[e-1-i]--
			d++
		}
	}
	for i := range xs {
		xs[i] = math.Min(xs[i], float64(tokens))
	}
	sort.Sort(sort.Reverse(sort.Float64Slice(xs)))
	return everyEP(xs, ep, local)
}

// everyEP is the loads (largest first) of the expert-parallel rank timed:
// all of them without EP; else the hottest expert and every ep-th of the
// rest, local experts in all.
func everyEP(xs []float64, ep, local int) []float64 {
	if ep == 1 {
		return xs
	}
	out := make([]float64, 0, local)
	out = append(out, xs[0])
	for i := 1; len(out) < local && i < len(xs); i += ep {
		out = append(out, xs[i])
	}
	for len(out) < local {
		out = append(out, 0)
	}
	return out
}

// binomialLoads are the expected per-expert loads (largest first) when
// each of tokens tokens picks topK of e experts uniformly at random: an
// expert's load is Binomial(tokens, topK/e), taken at e evenly spaced
// quantiles, the rounding remainder moved onto the largest loads so that
// they sum to tokens·topK. Few tokens leave experts untouched (about
// e·(1 − topK/e)^tokens of them), which the balanced (round-robin) rows
// never do.
func binomialLoads(tokens, topK, e int) []float64 {
	n := float64(tokens)
	p := float64(topK) / float64(e)
	out := make([]float64, e)
	if p >= 1 {
		for i := range out {
			out[i] = n
		}
		return out
	}
	mean, sd := n*p, math.Sqrt(n*p*(1-p))
	lo := max(0, int(math.Floor(mean-12*sd-1)))
	hi := min(tokens, int(math.Ceil(mean+12*sd+1)))
	lgN, _ := math.Lgamma(n + 1)
	lp, lq := math.Log(p), math.Log1p(-p)
	cdf := make([]float64, 0, hi-lo+1)
	var acc float64
	for x := lo; x <= hi; x++ {
		fx := float64(x)
		a, _ := math.Lgamma(fx + 1)
		b, _ := math.Lgamma(n - fx + 1)
		acc += math.Exp(lgN - a - b + fx*lp + (n-fx)*lq)
		cdf = append(cdf, acc)
	}
	var sum float64
	j := 0
	for i := e - 1; i >= 0; i-- { // ascending quantiles fill from the smallest load
		u := (float64(e-1-i) + 0.5) / float64(e) * acc
		for j < len(cdf)-1 && cdf[j] < u {
			j++
		}
		out[i] = float64(lo + j)
		sum += out[i]
	}
	for d, i := n*float64(topK)-sum, 0; d != 0; i = (i + 1) % e {
		switch {
		case d > 0 && out[i] < n:
			out[i]++
			d--
		case d < 0 && out[e-1-i] > 0:
			out[e-1-i]--
			d++
		}
	}
	return out
}
