package steptime

import (
	"math"
	"testing"

	"github.com/headroom-sim/headroom/hardware"
)

// The formulas by hand: a made-up GPU and profile with round numbers, so
// that every expected value below is arithmetic written in the comments.

// handHW is a GPU of 1 PFLOP/s (every format), 2 TB/s, a 100 GB/s link
// each way and 100 SMs.
func handHW() Hardware {
	return Hardware{
		PeakFLOPS:       map[string]float64{FormatBF16: 1e15, FormatFP8: 2e15},
		AttentionFLOPS:  1e15,
		BytesPerSec:     2e12,
		LinkBytesPerSec: 1e11,
		SMs:             100,
	}
}

// handProfile has one GEMM format of efficiency 0.5 with 128-row tiles,
// no half-token fall-off, no wave model, half the bandwidth, 2 µs of
// overhead and the plain maximum of the two bounds (sharpness 0).
func handProfile() Profile {
	p := BaseProfile()
	p.GEMM = map[string]GEMMCoeffs{
		FormatBF16: {Efficiency: 0.5, TileTokens: 128, BandwidthEfficiency: 0.5, OverheadUS: 2},
		FormatFP8:  {Efficiency: 0.5, TileTokens: 1, BandwidthEfficiency: 0.5, OverheadUS: 2, QuantBandwidthEfficiency: 0.5, UnalignedUS: 3},
	}
	p.Comm = CommCoeffs{
		CustomLatencyUS: 5, CustomPerGPUUS: 1, CustomLinkEfficiency: 0.5,
		CustomAllReduceMaxBytes: 8 << 20, CustomTwoShotBytes: 1 << 20,
		NCCLLatencyUS: 10, NCCLAllReduceLatencyUS: 12, NCCLPerGPUUS: 2,
		NCCLLinkEfficiency: 0.7, NCCLAllReduceEfficiency: 0.7, NCCLLLEfficiency: 0.25, NCCLSimpleExtraUS: 15,
	}
	p.Elementwise = ElementwiseCoeffs{BandwidthEfficiency: 0.5, OverheadUS: 1.5}
	return p
}

func within(got, want, rel float64) bool {
	return math.Abs(got-want) <= rel*math.Max(math.Abs(want), 1e-300)
}

func TestFormulaGEMMByHand(t *testing.T) {
	p, h := handProfile(), handHW()
	for _, c := range []struct {
		name    string
		format  string
		m, n, k int
		want    float64
		bound   Bound
	}{
		// m = 1000 rows pad to 1024 (eight 128-row tiles):
		//   compute 2·1024·4096·4096 / (1e15 · 0.5)  = 68.719476736 µs
		//   memory  (4096·4096·2 + 1000·4096·2 + 1000·4096·2) B / (2e12 · 0.5)
		//         = (33,554,432 + 8,192,000 + 8,192,000) / 1e12 = 49.938432 µs
		//   t = 2 µs + max(68.719…, 49.938…) = 70.719476736 µs, compute-bound.
		{"compute-bound, padded to the tile", FormatBF16, 1000, 4096, 4096, 70.719476736e-6, BoundCompute},
		// m = 1024 is whole tiles: the same compute as m = 1000.
		{"whole tiles", FormatBF16, 1024, 4096, 4096, 70.719476736e-6, BoundCompute},
		// m = 8 is below one tile (no padding): compute 2·8·4096·4096/5e14
		// = 0.536870912 µs; memory (33,554,432 + 65,536 + 65,536)/1e12 =
		// 33.685504 µs; t = 2 + 33.685504 = 35.685504 µs, memory-bound.
		{"memory-bound decode", FormatBF16, 8, 4096, 4096, 35.685504e-6, BoundMemory},
		// fp8 W8A8 at m = 6 (not a multiple of 4): weights 1 B, activations 1 B:
		//   memory (4096·4096 + 6·4096 + 6·4096·2) / 1e12 = 16,850,944 B → 16.850944 µs
		//   quant  6·4096·(2 + 1) B / (2e12 · 0.5) = 0.073728 µs, + 3 µs unaligned
		//   t = 2 + 0.073728 + 3 + 16.850944 = 21.924672 µs.
		{"fp8 quantises, unaligned", FormatFP8, 6, 4096, 4096, 21.924672e-6, BoundMemory},
		// m = 8 is aligned: no 3 µs. quant 8·4096·3/1e12 = 0.098304 µs;
		// memory (16,777,216 + 32,768 + 65,536)/1e12 = 16.87552 µs.
		{"fp8 aligned", FormatFP8, 8, 4096, 4096, (2 + 0.098304 + 16.87552) * 1e-6, BoundMemory},
	} {
		got, bound := FormulaGEMM(&p, h, c.format, c.m, c.n, c.k)
		if !within(got, c.want, 1e-12) || bound != c.bound {
			t.Errorf("%s: %.12g s (%s), want %.12g s (%s)", c.name, got, bound, c.want, c.bound)
		}
	}
}

// TestFormulaGEMMTileSteps: the M-tile quantisation makes the compute
// term a staircase: every m in (896, 1024] costs as much as 1024 rows,
// and the step to 1025 adds a whole tile (1152 rows).
func TestFormulaGEMMTileSteps(t *testing.T) {
	p, h := handProfile(), handHW()
	at := func(m int) float64 { s, _ := FormulaGEMM(&p, h, FormatBF16, m, 4096, 4096); return s }
	for _, m := range []int{897, 960, 1023} {
		if !within(at(m), at(1024), 1e-12) {
			t.Errorf("m=%d: %g s, want m=1024's %g s (one padded tile)", m, at(m), at(1024))
		}
	}
	// 1152 rows: 2·1152·4096²/5e14 = 77.309411328 µs, + 2 µs.
	if got, want := at(1025), 79.309411328e-6; !within(got, want, 1e-12) {
		t.Errorf("m=1025: %.12g s, want %.12g s", got, want)
	}
}

// TestFormulaGEMMHalfTokensAndWaves: the two efficiency factors by hand.
func TestFormulaGEMMHalfTokensAndWaves(t *testing.T) {
	p, h := handProfile(), handHW()
	h.BytesPerSec = 1e18 // no memory bound
	c := p.GEMM[FormatBF16]
	c.TileTokens, c.HalfTokens, c.WaveTileN = 1, 64, 128
	p.GEMM[FormatBF16] = c
	// m = 64: efficiency 0.5 · 64/(64+64) = 0.25; tiles ceil(64/64)·ceil(4096/128)
	// = 32 on 100 SMs: one wave, 32/100 busy. compute 2·64·4096·4096/(1e15·0.25·0.32)
	// = 2,147,483,648/8e13 = 26.8435456 µs; + 2 µs.
	got, _ := FormulaGEMM(&p, h, FormatBF16, 64, 4096, 4096)
	if want := 28.8435456e-6; !within(got, want, 1e-9) {
		t.Errorf("m=64: %.12g s, want %.12g s", got, want)
	}
	for _, w := range []struct{ sms, m, n, tm, tn, want float64 }{
		{132, 64, 4096, 64, 128, 32.0 / 132},    // 1·32 tiles, one wave
		{132, 512, 4096, 128, 128, 128.0 / 132}, // 4·32 tiles
		{132, 640, 4096, 128, 128, 160.0 / 264}, // 5·32 = 160 tiles, two waves of 132
		{132, 640, 4096, 128, 0, 1},             // tn 0: no wave model
	} {
		if got := waveEfficiency(w.sms, w.m, w.n, w.tm, w.tn); !within(got, w.want, 1e-15) {
			t.Errorf("waveEfficiency(%v) = %g, want %g", w, got, w.want)
		}
	}
}

// TestFormulaGEMMWarm: a kernel benchmark's cycled weight copies that fit
// in L2 stream at cache_speedup × HBM; a serving step's (FormulaGEMM) do
// not.
func TestFormulaGEMMWarm(t *testing.T) {
	p, h := handProfile(), handHW()
	c := p.GEMM[FormatBF16]
	c.CacheMB, c.CacheSpeedup = 1000, 3
	p.GEMM[FormatBF16] = c
	// One copy of 4096·4096·2 B = 33.554432 MB: working set 0.033554432 of
	// the cache, hit share 1/(1 + 0.0335⁴) ≈ 0.9999987; bandwidth ≈ 3e12.
	// memory (33,554,432 + 2·65,536) B / (1e12 · (1 + 2·0.9999987)) ≈ 11.228 µs.
	warm, _ := FormulaGEMMWarm(&p, h, FormatBF16, 8, 4096, 4096, 1)
	ws := 33554432 / 1e9
	want := 2e-6 + 33685504/(1e12*(1+2/(1+ws*ws*ws*ws)))
	if !within(warm, want, 1e-12) {
		t.Errorf("warm: %.12g s, want %.12g s", warm, want)
	}
	cold, _ := FormulaGEMM(&p, h, FormatBF16, 8, 4096, 4096)
	if !within(cold, 35.685504e-6, 1e-12) {
		t.Errorf("cold: %.12g s, want 35.685504 µs", cold)
	}
}

func TestSmoothMax(t *testing.T) {
	for _, c := range []struct{ a, b, p, want float64 }{
		{3, 4, 2, 5},  // √(9 + 16)
		{3, 4, 0, 4},  // p ≤ 0: the maximum
		{3, 4, 64, 4}, // p > 32: the maximum
		{0, 0, 2, 0},  // no work
		{1, 1, 1, 2},  // p = 1: the sum
		{8, 0, 3, 8},  // one bound alone
	} {
		if got := smoothMax(c.a, c.b, c.p); !within(got, c.want, 1e-15) {
			t.Errorf("smoothMax(%g, %g, %g) = %g, want %g", c.a, c.b, c.p, got, c.want)
		}
	}
}

func TestFormatBytesAndGEMMBytes(t *testing.T) {
	for _, c := range []struct {
		format      string
		weight, act float64
	}{
		{FormatBF16, 2, 2},
		{FormatFP8, 1, 1},
		{"int8", 1, 1},
		{FormatFP8Block, 1 + 4.0/16384, 1 + 4.0/128}, // an fp32 scale per 128×128 block, per 128 activations
		{FormatNVFP4, 0.5625, 0.5625},                // 4 bit + an fp8 scale per 16
		{FormatMXFP4, 0.53125, 2},                    // 4 bit + an e8m0 scale per 32; 16-bit activations
		{FormatINT4, 0.515625, 2},                    // 4 bit + an fp16 scale per 128
	} {
		w, a := FormatBytes(c.format)
		if w != c.weight || a != c.act {
			t.Errorf("FormatBytes(%s) = %g, %g; want %g, %g", c.format, w, a, c.weight, c.act)
		}
	}
	// 64×4096 by 4096×14336 in bf16: 14336·4096·2 + 64·4096·2 + 64·14336·2
	// = 117,440,512 + 524,288 + 1,835,008 = 119,799,808 B.
	if got := GEMMBytes(64, 14336, 4096, 2, 2); got != 119799808 {
		t.Errorf("GEMMBytes = %g, want 119799808", got)
	}
}

func TestBoundOf(t *testing.T) {
	for _, c := range []struct {
		compute, memory, overhead float64
		want                      Bound
	}{
		{2, 1, 0, BoundCompute},
		{1, 2, 0, BoundMemory},
		{1, 1, 0, BoundCompute}, // a tie is compute
		{1, 2, 3, BoundOverhead},
		{1, 2, 2, BoundMemory}, // overhead must exceed both
	} {
		if got := boundOf(c.compute, c.memory, c.overhead); got != c.want {
			t.Errorf("boundOf(%g, %g, %g) = %s, want %s", c.compute, c.memory, c.overhead, got, c.want)
		}
	}
}

func TestFormulaAllReduceByHand(t *testing.T) {
	p, h := handProfile(), handHW()
	for _, c := range []struct {
		name  string
		gpus  int
		bytes float64
		want  float64
		bound Bound
	}{
		// One-shot custom kernel, 512 KiB over 4 GPUs: every rank reads 3
		// peers' buffers: 3·524,288 B / (1e11 · 0.5) = 31.45728 µs, + latency
		// 5 + 1·(4 − 2) = 7 µs: 38.45728 µs.
		{"one-shot", 4, 512 << 10, 38.45728e-6, BoundLink},
		// Two-shot from 1 MiB: 2 MiB moves 2·3/4 of the buffer: 3,145,728 B
		// / 5e10 = 62.91456 µs, + 7 µs + one more barrier of 5 µs: 74.91456 µs.
		{"two-shot", 4, 2 << 20, 74.91456e-6, BoundLink},
		// Above the 8 MiB limit, NCCL: 16 MiB, factor 2·3/4 = 1.5, latency 12 +
		// 2·2 = 16 µs. Simple: 16 + 15 + 1.5·16,777,216/(1e11·0.7) =
		// 31 + 359.511771… µs; LL: 16 + 25,165,824/2.5e10 = 1,022.63 µs.
		// Simple wins: 390.511771428… µs.
		{"NCCL above the limit", 4, 16 << 20, 31e-6 + 1.5*16777216/7e10, BoundLink},
		// Two GPUs, 1 KiB: one peer, 1024/5e10 = 0.02048 µs, + 5 µs: latency-bound.
		{"tiny", 2, 1024, 5.02048e-6, BoundOverhead},
		{"one GPU", 1, 1 << 20, 0, BoundLink},
		{"nothing", 4, 0, 0, BoundLink},
	} {
		got, bound := FormulaAllReduce(&p, h, c.gpus, c.bytes)
		if !within(got, c.want, 1e-12) || bound != c.bound {
			t.Errorf("%s: %.12g s (%s), want %.12g s (%s)", c.name, got, bound, c.want, c.bound)
		}
	}
	// A per-GPU-count limit of 0 turns the custom kernel off at that size.
	p.Comm.CustomMaxBytesByGPUs = map[int]float64{4: 0}
	got, _ := FormulaAllReduce(&p, h, 4, 512<<10)
	nccl, _ := FormulaNCCL(&p, h, "all_reduce", 4, 512<<10)
	if got != nccl {
		t.Errorf("custom kernel off for 4 GPUs: %g s, want NCCL's %g s", got, nccl)
	}
	// The link scale divides the time.
	p.Scale.Link = 2
	if half, _ := FormulaAllReduce(&p, h, 4, 512<<10); !within(half, nccl/2, 1e-12) {
		t.Errorf("scale.link 2: %g s, want %g s", half, nccl/2)
	}
}

func TestFormulaNCCLProtocols(t *testing.T) {
	p, h := handProfile(), handHW()
	// All-gather of a 64 KiB buffer over 4 GPUs: each rank moves 3/4 of it,
	// 49,152 B; latency 10 + 2·2 = 14 µs. LL: 14 + 49,152/2.5e10 = 15.96608 µs;
	// Simple: 14 + 15 + 49,152/7e10 = 29.702171… µs. LL wins, latency-bound.
	got, bound := FormulaNCCL(&p, h, "all_gather", 4, 64<<10)
	if want := 15.96608e-6; !within(got, want, 1e-12) || bound != BoundOverhead {
		t.Errorf("small all-gather: %.12g s (%s), want %.12g s (launch/cpu)", got, bound, want)
	}
	// 64 MiB: LL 14 + 50,331,648/2.5e10 = 2,027.27 µs; Simple 29 +
	// 50,331,648/7e10 = 748.023… µs. Simple wins, link-bound.
	got, bound = FormulaNCCL(&p, h, "reduce_scatter", 4, 64<<20)
	if want := 29e-6 + 0.75*(64<<20)/7e10; !within(got, want, 1e-12) || bound != BoundLink {
		t.Errorf("large reduce-scatter: %.12g s (%s), want %.12g s (link)", got, bound, want)
	}
	// An all-reduce without its own coefficients takes the all-gather's.
	p.Comm.NCCLAllReduceEfficiency = 0
	ar, _ := FormulaNCCL(&p, h, "all_reduce", 4, 64<<20)
	if want := 29e-6 + 1.5*(64<<20)/7e10; !within(ar, want, 1e-12) {
		t.Errorf("all-reduce on the all-gather's coefficients: %.12g s, want %.12g s", ar, want)
	}
}

func TestFormulaElementwiseByHand(t *testing.T) {
	p, h := handProfile(), handHW()
	// 1 GB at 2e12 · 0.5 B/s = 1,000 µs, + 10 launches of 1.5 µs = 1,015 µs.
	if got := FormulaElementwise(&p, h, 1e9, 10); !within(got, 1015e-6, 1e-12) {
		t.Errorf("elementwise: %g s, want 1,015 µs", got)
	}
	// Memory scale 2 halves the stream (500 µs), overhead scale 0.5 halves
	// the launches (7.5 µs): the scales multiply speed and time respectively.
	p.Scale = Scales{Memory: 2, Overhead: 0.5}
	if got := FormulaElementwise(&p, h, 1e9, 10); !within(got, 507.5e-6, 1e-12) {
		t.Errorf("elementwise, scaled: %g s, want 507.5 µs", got)
	}
}

// TestNewHardware: the rates the formulas take from a catalog GPU.
func TestNewHardware(t *testing.T) {
	g := &hardware.GPU{
		ID: "x", HBMBandwidthGBps: 3350,
		DenseTFLOPS: hardware.TFLOPS{BF16: 989.5, FP8: 1979},
		ScaleUp:     hardware.Link{Kind: "nvlink4", BandwidthGBps: 900},
		PCIe:        hardware.Link{Kind: "pcie5", BandwidthGBps: 128},
		SMCount:     132,
	}
	h := NewHardware(g)
	if h.BytesPerSec != 3.35e12 || h.LinkBytesPerSec != 450e9 || h.SMs != 132 || h.AttentionFLOPS != 989.5e12 {
		t.Errorf("rates %+v", h)
	}
	for f, want := range map[string]float64{
		FormatBF16: 989.5e12, FormatFP8: 1979e12, FormatFP8Block: 1979e12, "int8": 989.5e12, // no int8 path: 16 bit
		FormatNVFP4: 989.5e12,                        // no fp4 path: 16 bit
		FormatINT4:  989.5e12, FormatMXFP4: 989.5e12, // weight-only: 16-bit maths
	} {
		if h.PeakFLOPS[f] != want {
			t.Errorf("peak %s = %g, want %g", f, h.PeakFLOPS[f], want)
		}
	}
	if r := h.Roof("unknown"); r.FLOPS != 989.5e12 || r.BytesPerSec != 3.35e12 {
		t.Errorf("unknown format's roof %+v, want bf16's", r)
	}
	// No scale-up link: PCIe, one way; no SM count: an H100's.
	g.ScaleUp, g.SMCount = hardware.Link{Kind: "none"}, 0
	h = NewHardware(g)
	if h.LinkBytesPerSec != 64e9 || h.SMs != DefaultSMs {
		t.Errorf("PCIe-only GPU: link %g B/s, SMs %g", h.LinkBytesPerSec, h.SMs)
	}
	// Roof.time: the larger of the two.
	if got := (Roof{FLOPS: 1e15, BytesPerSec: 1e12}).time(2e12, 1e9); got != 2e-3 {
		t.Errorf("roof time %g, want 2 ms (compute)", got)
	}
}
