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
	// SMs is the number of streaming multiprocessors a kernel's thread
	// blocks are spread over (the catalog's sm_count; DefaultSMs when the
	// catalog does not record it).
	SMs float64
}

// DefaultSMs is the SM count the formulas assume for a GPU whose catalog
// entry has none: an H100 SXM's.
const DefaultSMs = 132

// NewHardware takes the rates of g.
func NewHardware(g *hardware.GPU) Hardware {
	h := Hardware{
		PeakFLOPS:       map[string]float64{},
		AttentionFLOPS:  g.PeakTFLOPS(hardware.BF16) * 1e12,
		BytesPerSec:     g.HBMBandwidthGBps * 1e9,
		LinkBytesPerSec: g.ScaleUp.UnidirectionalGBps() * 1e9,
		SMs:             float64(g.SMCount),
	}
	if h.SMs <= 0 {
		h.SMs = DefaultSMs
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
// the scales applied, replayed in a CUDA graph (an eager launch adds the
// host floor, see Profile.EagerFloorUS). The bound says which resource
// dominates, for explanations.
func FormulaGEMM(p *Profile, h Hardware, format string, m, n, k int) (sec float64, bound Bound) {
	return formulaGEMM(p, h, format, m, n, k, 0)
}

// FormulaGEMMWarm is FormulaGEMM for a kernel benchmark that cycles over
// copies weight buffers call after call (AIConfigurator's tables: 6 copies
// for bf16 and fp8, 1 for fp8_block and nvfp4): when they fit in L2
// (cache_mb) the weight stream runs at cache_speedup × the HBM rate. A
// serving step reads each layer's weights once, cold.
func FormulaGEMMWarm(p *Profile, h Hardware, format string, m, n, k, copies int) (sec float64, bound Bound) {
	return formulaGEMM(p, h, format, m, n, k, copies)
}

func formulaGEMM(p *Profile, h Hardware, format string, m, n, k, copies int) (sec float64, bound Bound) {
	c := p.gemmCoeffs(format)
	sc := p.Scale.speed()
	wb, ab := FormatBytes(format)
	fm, fn := float64(max(m, 1)), float64(max(n, 1))
	me := fm
	if c.TileTokens > 1 && fm > c.TileTokens {
		me = math.Ceil(fm/c.TileTokens) * c.TileTokens
	}
	eff := c.Efficiency * fm / (fm + c.HalfTokens) * waveEfficiency(h.SMs, fm, fn, math.Max(c.TileTokens, 64), c.WaveTileN)
	tc := 2 * me * fn * float64(k) / (h.Roof(format).FLOPS * eff) / sc.Compute
	bw := h.BytesPerSec * c.BandwidthEfficiency
	if copies > 0 && c.CacheMB > 0 {
		// Smooth LRU cliff: the working set's hit share falls from 1 to 0
		// around the cache size.
		ws := float64(copies) * fn * float64(k) * wb / (c.CacheMB * 1e6)
		bw *= 1 + (math.Max(c.CacheSpeedup, 1)-1)/(1+ws*ws*ws*ws)
	}
	tm := GEMMBytes(m, n, k, wb, ab) / bw / sc.Memory
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

// waveEfficiency is the fraction of the SMs' time a GEMM's output tiles
// keep busy: ceil(m/tm)·ceil(n/tn) tiles run in waves of sms, and the last
// wave leaves SMs idle. tn ≤ 0 turns the wave model off.
func waveEfficiency(sms, m, n, tm, tn float64) float64 {
	if tn <= 0 || sms <= 0 {
		return 1
	}
	tiles := math.Ceil(m/tm) * math.Ceil(n/tn)
	return tiles / (math.Ceil(tiles/sms) * sms)
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

// FormulaAllReduce is the formula's time of a tensor-parallel all-reduce
// of bytes per rank over gpus GPUs: vLLM's custom kernel up to its size
// limit, NCCL above it. The custom kernel is one-shot for small messages
// (every rank reads all n−1 peers' whole buffers: (n−1)·bytes) and
// two-shot from custom_two_shot_bytes up (reduce-scatter then all-gather
// through peer memory: 2(n−1)/n·bytes, one more barrier).
func FormulaAllReduce(p *Profile, h Hardware, gpus int, bytes float64) (float64, Bound) {
	if gpus <= 1 || bytes <= 0 {
		return 0, BoundLink
	}
	c := p.Comm
	sc := p.Scale.speed()
	extra := float64(gpus - 2)
	limit := c.CustomAllReduceMaxBytes
	if v, ok := c.CustomMaxBytesByGPUs[gpus]; ok {
		limit = v
	}
	if limit > 0 && bytes <= limit && c.CustomLinkEfficiency > 0 {
		lat := (c.CustomLatencyUS + c.CustomPerGPUUS*extra) * 1e-6
		moved := bytes * float64(gpus-1)
		if c.CustomTwoShotBytes > 0 && bytes >= c.CustomTwoShotBytes {
			moved = 2 * bytes * float64(gpus-1) / float64(gpus)
			lat += c.CustomLatencyUS * 1e-6
		}
		t := moved / (h.LinkBytesPerSec * c.CustomLinkEfficiency)
		return (lat + t) / sc.Link, linkOrOverhead(t, lat)
	}
	return FormulaNCCL(p, h, "all_reduce", gpus, bytes)
}

// FormulaNCCL is the formula's time of an NCCL all-gather or
// reduce-scatter whose whole buffer is bytes (nccl-tests' convention), or
// of an all-reduce of bytes. NCCL picks the faster of two protocols: LL
// (low latency, flag-carrying 8-byte stores at a fraction of the link rate)
// for small messages and Simple (full-rate copies after a longer
// handshake) for large ones; all-reduce has its own latency and rate
// (NVLink SHARP on NVSwitch systems reduces in the switch).
func FormulaNCCL(p *Profile, h Hardware, op string, gpus int, bytes float64) (float64, Bound) {
	if gpus <= 1 || bytes <= 0 {
		return 0, BoundLink
	}
	c := p.Comm
	sc := p.Scale.speed()
	n := float64(gpus)
	factor := (n - 1) / n // all-gather, reduce-scatter: each rank moves (n-1)/n of the buffer
	lat, eff := c.NCCLLatencyUS, c.NCCLLinkEfficiency
	if op == "all_reduce" {
		factor = 2 * (n - 1) / n
		lat, eff = c.NCCLAllReduceLatencyUS, c.NCCLAllReduceEfficiency
		if eff <= 0 {
			lat, eff = c.NCCLLatencyUS, c.NCCLLinkEfficiency
		}
	}
	lat = (lat + c.NCCLPerGPUUS*(n-2)) * 1e-6
	simple := lat + c.NCCLSimpleExtraUS*1e-6 + factor*bytes/(h.LinkBytesPerSec*eff)
	t := simple
	if c.NCCLLLEfficiency > 0 {
		t = math.Min(t, lat+factor*bytes/(h.LinkBytesPerSec*c.NCCLLLEfficiency))
	}
	return t / sc.Link, linkOrOverhead(t-lat, lat)
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
