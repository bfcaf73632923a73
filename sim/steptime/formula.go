package steptime

import (
	"math"

	"github.com/headroom-sim/headroom/hardware"
)

// Hardware is what the formulas need of a GPU: peak rates per kernel
// format, memory bandwidth, and the scale-up link.
type Hardware struct {
	// PeakFLOPS by kernel format (FLOP/s): the tensor-core rate the format
	// computes at (weight-only formats compute in 16 bit).
	PeakFLOPS map[string]float64
	// AttentionFLOPS is the 16-bit tensor rate attention runs at.
	AttentionFLOPS float64
	// BytesPerSec is peak device-memory bandwidth.
	BytesPerSec float64
	// LinkBytesPerSec is one direction of the scale-up link (NVLink, or
	// PCIe when there is none).
	LinkBytesPerSec float64
}

// NewHardware takes the rates of g.
func NewHardware(g *hardware.GPU) Hardware {
	h := Hardware{
		PeakFLOPS:       map[string]float64{},
		AttentionFLOPS:  g.PeakTFLOPS(hardware.BF16) * 1e12,
		BytesPerSec:     g.HBMBandwidthGBps * 1e9,
		LinkBytesPerSec: g.ScaleUp.UnidirectionalGBps() * 1e9,
	}
	if g.ScaleUp.BandwidthGBps <= 0 || g.ScaleUp.Kind == "none" {
		h.LinkBytesPerSec = g.PCIe.UnidirectionalGBps() * 1e9
	}
	for f, dt := range map[string]hardware.DType{
		FormatBF16: hardware.BF16, FormatFP8: hardware.FP8, FormatFP8Block: hardware.FP8,
		FormatNVFP4: hardware.FP4, "int8": hardware.INT8,
		// Weight-only formats dequantise and multiply in 16 bit.
		FormatINT4: hardware.BF16, FormatMXFP4: hardware.BF16,
	} {
		h.PeakFLOPS[f] = g.PeakTFLOPS(dt) * 1e12
	}
	return h
}

// Roof is the format's speed-of-light roofline on this hardware.
func (h Hardware) Roof(format string) Roof {
	p := h.PeakFLOPS[format]
	if p <= 0 {
		p = h.PeakFLOPS[FormatBF16]
	}
	return Roof{FLOPS: p, BytesPerSec: h.BytesPerSec}
}

// FormatBytes is the storage size of one weight element of format, its
// scales included, and of one activation element it reads (16 bit for
// weight-only formats, which do not quantise activations).
func FormatBytes(format string) (weight, activation float64) {
	switch format {
	case FormatFP8, "int8":
		return 1, 1
	case FormatFP8Block:
		return 1 + 4.0/(128*128), 1 + 4.0/128
	case FormatNVFP4:
		return 0.5 + 1.0/16, 0.5 + 1.0/16
	case FormatMXFP4:
		return 0.5 + 1.0/32, 2
	case FormatINT4:
		return 0.5 + 2.0/128, 2
	}
	return 2, 2
}

// quantises reports whether format quantises its activations with a
// separate kernel before the GEMM (W8A8, W4A4).
func quantises(format string) bool {
	switch format {
	case FormatFP8, FormatFP8Block, FormatNVFP4, "int8":
		return true
	}
	return false
}

// smoothMax blends two bounds: (a^p + b^p)^(1/p); p ≤ 0 or large means the
// plain maximum.
func smoothMax(a, b, p float64) float64 {
	if p <= 0 || p > 32 {
		return math.Max(a, b)
	}
	hi := math.Max(a, b)
	if hi == 0 {
		return 0
	}
	return hi * math.Pow(math.Pow(a/hi, p)+math.Pow(b/hi, p), 1/p)
}

// FormulaGEMM is the formula's time of an m×k by k×n GEMM in format, with
// the scales applied. The split into compute, memory and overhead is
// returned for explanations.
func FormulaGEMM(p *Profile, h Hardware, format string, m, n, k int) (sec float64, bound Bound) {
	c := p.gemmCoeffs(format)
	sc := p.Scale.speed()
	wb, ab := FormatBytes(format)
	fm := float64(max(m, 1))
	me := fm
	if c.TileTokens > 1 && fm > c.TileTokens {
		me = math.Ceil(fm/c.TileTokens) * c.TileTokens
	}
	eff := c.Efficiency * fm / (fm + c.HalfTokens)
	tc := 2 * me * float64(n) * float64(k) / (h.Roof(format).FLOPS * eff) / sc.Compute
	tm := GEMMBytes(m, n, k, wb, ab) / (h.BytesPerSec * c.BandwidthEfficiency) / sc.Memory
	over := c.OverheadUS * 1e-6 * sc.Overhead
	if quantises(format) && c.QuantBandwidthEfficiency > 0 {
		over += fm * float64(k) * (2 + ab) / (h.BytesPerSec * c.QuantBandwidthEfficiency) / sc.Memory
		if m%4 != 0 {
			over += c.UnalignedUS * 1e-6 * sc.Overhead
		}
	}
	body := smoothMax(tc, tm, c.Sharpness)
	return over + body, boundOf(tc, tm, over)
}

// Bound names what limits a kernel.
type Bound string

// The bounds a kernel can have.
const (
	BoundCompute  Bound = "compute"
	BoundMemory   Bound = "memory"
	BoundLink     Bound = "link"
	BoundOverhead Bound = "launch/cpu"
)

func boundOf(compute, memory, overhead float64) Bound {
	switch {
	case overhead > compute && overhead > memory:
		return BoundOverhead
	case compute >= memory:
		return BoundCompute
	}
	return BoundMemory
}

// FormulaContextAttention is the formula's prefill attention time of a
// kernel over chunks whose query-key pairs total pairs (per head), with
// kvTokens tokens of KV read or written.
func FormulaContextAttention(p *Profile, h Hardware, a AttentionShape, batch, pairs, kvTokens float64) (float64, Bound) {
	c := p.Attention
	sc := p.Scale.speed()
	hd, heads, kv := float64(a.Key.HeadDim), float64(a.Key.Heads), float64(a.Key.KVHeads)
	flops := 4 * hd * heads * pairs
	eff := c.PrefillEfficiency
	if c.PrefillHalfWork > 0 {
		eff *= pairs / (pairs + c.PrefillHalfWork)
	}
	tc := flops / (h.AttentionFLOPS * eff) / sc.Compute
	bytes := kvTokens*2*kv*hd*a.KVBytes + kvTokens*4*heads*hd
	tm := bytes / (h.BytesPerSec * math.Max(c.DecodeBandwidthEfficiency, 0.05)) / sc.Memory
	over := c.PrefillOverheadUS * 1e-6 * sc.Overhead
	_ = batch
	return over + math.Max(tc, tm), boundOf(tc, tm, over)
}

// FormulaDecodeAttention is the formula's decode attention time of batch
// sequences with kvTokens cached tokens in all.
func FormulaDecodeAttention(p *Profile, h Hardware, a AttentionShape, batch, kvTokens float64) (float64, Bound) {
	c := p.Attention
	sc := p.Scale.speed()
	hd, heads, kv := float64(a.Key.HeadDim), float64(a.Key.Heads), float64(a.Key.KVHeads)
	bytes := kvTokens*2*kv*hd*a.KVBytes + batch*4*heads*hd
	eff := c.DecodeBandwidthEfficiency
	if c.DecodeHalfBatch > 0 {
		eff *= batch / (batch + c.DecodeHalfBatch)
	}
	tm := bytes / (h.BytesPerSec * eff) / sc.Memory
	tc := 4 * hd * heads * kvTokens / (h.AttentionFLOPS * math.Max(c.PrefillEfficiency, 0.05)) / sc.Compute
	over := c.DecodeOverheadUS * 1e-6 * sc.Overhead
	return over + math.Max(tm, tc), boundOf(tc, tm, over)
}

// MoEWork is one GPU's fused-MoE work in a layer.
type MoEWork struct {
	Tokens         float64 // tokens entering the layer (all ranks' with EP)
	Pairs          float64 // token-expert pairs this GPU's experts serve
	ExpertsTouched float64 // distinct local experts with at least one token
	FLOPs          float64 // this GPU's routed-expert FLOPs
	WeightBytes    float64 // touched experts' weight bytes on this GPU
	ActBytes       float64 // activations read and written
}

// FormulaMoE is the formula's fused-MoE layer time for w in format.
func FormulaMoE(p *Profile, h Hardware, format string, w MoEWork) (float64, Bound) {
	c := p.moeCoeffs(format)
	sc := p.Scale.speed()
	perExpert := w.Pairs / math.Max(w.ExpertsTouched, 1)
	eff := c.Efficiency * perExpert / (perExpert + c.HalfTokens)
	tc := w.FLOPs / (h.Roof(format).FLOPS * math.Max(eff, 1e-6)) / sc.Compute / sc.Experts
	tm := (w.WeightBytes + w.ActBytes) / (h.BytesPerSec * c.BandwidthEfficiency) / sc.Memory / sc.Experts
	over := (c.OverheadUS + c.PerTokenUS*w.Pairs) * 1e-6 * sc.Overhead
	return over + math.Max(tc, tm), boundOf(tc, tm, over)
}

// FormulaAllReduce is the formula's time of a tensor-parallel all-reduce
// of bytes per rank over gpus GPUs: vLLM's custom kernel up to its size
// limit, NCCL's ring above it.
func FormulaAllReduce(p *Profile, h Hardware, gpus int, bytes float64) (float64, Bound) {
	if gpus <= 1 || bytes <= 0 {
		return 0, BoundLink
	}
	c := p.Comm
	sc := p.Scale.speed()
	extra := float64(gpus - 2)
	ring := 2 * float64(gpus-1) / float64(gpus)
	limit := c.CustomAllReduceMaxBytes
	if v, ok := c.CustomMaxBytesByGPUs[gpus]; ok {
		limit = v
	}
	if limit > 0 && bytes <= limit && c.CustomLinkEfficiency > 0 {
		lat := (c.CustomLatencyUS + c.CustomPerGPUUS*extra) * 1e-6
		// One-shot: every rank reads all peers' buffers.
		t := bytes * float64(gpus-1) / (h.LinkBytesPerSec * c.CustomLinkEfficiency) / sc.Link
		return lat*sc.Link + t, linkOrOverhead(t, lat)
	}
	lat := (c.NCCLLatencyUS + c.NCCLPerGPUUS*extra) * 1e-6
	t := ring * bytes / (h.LinkBytesPerSec * c.NCCLLinkEfficiency) / sc.Link
	return lat*sc.Link + t, linkOrOverhead(t, lat)
}

// FormulaNCCL is the formula's time of an NCCL all-gather or
// reduce-scatter whose whole buffer is bytes (nccl-tests' convention), or
// of an all-reduce of bytes.
func FormulaNCCL(p *Profile, h Hardware, op string, gpus int, bytes float64) (float64, Bound) {
	if gpus <= 1 || bytes <= 0 {
		return 0, BoundLink
	}
	c := p.Comm
	sc := p.Scale.speed()
	n := float64(gpus)
	factor := (n - 1) / n // all-gather, reduce-scatter: each rank moves (n-1)/n of the buffer
	if op == "all_reduce" {
		factor = 2 * (n - 1) / n
	}
	lat := (c.NCCLLatencyUS + c.NCCLPerGPUUS*(n-2)) * 1e-6
	t := factor * bytes / (h.LinkBytesPerSec * c.NCCLLinkEfficiency) / sc.Link
	return lat*sc.Link + t, linkOrOverhead(t, lat)
}

func linkOrOverhead(t, lat float64) Bound {
	if lat > t {
		return BoundOverhead
	}
	return BoundLink
}

// FormulaElementwise is the formula's time of the elementwise kernels of a
// pass: bytes of traffic over kernels launches.
func FormulaElementwise(p *Profile, h Hardware, bytes float64, kernels int) float64 {
	sc := p.Scale.speed()
	return bytes/(h.BytesPerSec*p.Elementwise.BandwidthEfficiency)/sc.Memory + float64(kernels)*p.Elementwise.OverheadUS*1e-6*sc.Overhead
}

// MoEWorkFor is one GPU's routed-expert work per MoE layer for a measured
// fused-MoE configuration with tokens tokens entering it, with uniform
// routing: a (moe_tp, moe_ep) rank holds inter/tp of every expert (EP 1)
// or experts/ep whole experts, and serves the token-expert pairs routed
// to them.
func MoEWorkFor(k MoEKey, tokens int) MoEWork {
	fg := float64(tokens)
	wb, _ := FormatBytes(k.Format)
	h := float64(k.Hidden)
	e, topk := float64(k.Experts), float64(k.TopK)
	w := MoEWork{Tokens: fg}
	touchedFrac := 1 - math.Pow(1-topk/e, fg)
	inter := float64(k.Inter) / float64(max(k.TP, 1))
	ep := float64(max(k.EP, 1))
	w.Pairs = fg * topk / ep
	w.ExpertsTouched = e / ep * touchedFrac
	w.FLOPs = 2 * 3 * h * inter * w.Pairs
	w.WeightBytes = w.ExpertsTouched * 3 * h * inter * wb
	w.ActBytes = w.Pairs * (2*h + 3*inter) * 2
	return w
}
