package hardware

import (
	"errors"
	"testing"
)

// h100 is an H100 SXM's catalog figures.
func h100() *GPU {
	return &GPU{
		ID: "h100-sxm", MemoryBytes: 85520809984, HBMBandwidthGBps: 3350,
		DenseTFLOPS:    TFLOPS{BF16: 989.4, FP16: 989.4, FP8: 1978.9, INT8: 1978.9},
		SparseTFLOPS:   TFLOPS{BF16: 1978.9, FP16: 1978.9, FP8: 3957.8, INT8: 3957.8},
		ScaleUp:        Link{Kind: "nvlink4", BandwidthGBps: 900},
		PCIe:           Link{Kind: "pcie5", BandwidthGBps: 128},
		MaxGPUsPerNode: 8, SMCount: 132,
	}
}

func TestPeakTFLOPSFallbacks(t *testing.T) {
	g := h100()
	for _, c := range []struct {
		d    DType
		want float64
	}{
		{BF16, 989.4}, {FP16, 989.4}, {FP8, 1978.9}, {INT8, 1978.9},
		{FP4, 989.4},   // no fp4 path: 16-bit (FP4 weights dequantised)
		{MXFP4, 989.4}, // likewise
		{INT4, 989.4},  // weight-only: 16-bit maths
		{FP32, 989.4},  // the 16-bit tensor rate
	} {
		if got := g.PeakTFLOPS(c.d); got != c.want {
			t.Errorf("H100 %s: %g TFLOPS, want %g", c.d, got, c.want)
		}
	}
	// A GPU with no fp8 path (A100) computes fp8 in 16 bit; one with only
	// fp16 figures (V100-like) uses them for bf16.
	a100 := &GPU{DenseTFLOPS: TFLOPS{BF16: 312, FP16: 312, INT8: 624}}
	if a100.PeakTFLOPS(FP8) != 312 || a100.PeakTFLOPS(INT8) != 624 {
		t.Errorf("A100 fp8 %g, int8 %g", a100.PeakTFLOPS(FP8), a100.PeakTFLOPS(INT8))
	}
	fp16only := &GPU{DenseTFLOPS: TFLOPS{FP16: 125}}
	if fp16only.PeakTFLOPS(BF16) != 125 || fp16only.PeakTFLOPS(FP16) != 125 {
		t.Errorf("fp16-only GPU: bf16 %g", fp16only.PeakTFLOPS(BF16))
	}
	b200 := &GPU{DenseTFLOPS: TFLOPS{BF16: 2250, FP8: 4500, FP4: 9000}}
	if b200.PeakTFLOPS(FP4) != 9000 || b200.PeakTFLOPS(MXFP4) != 9000 {
		t.Errorf("B200 fp4 %g", b200.PeakTFLOPS(FP4))
	}
}

func TestGPUUnitsByHand(t *testing.T) {
	g := h100()
	// 85,520,809,984 B / 2^30 = 79.6474609375 GiB.
	if got := g.MemoryGiB(); got != 79.6474609375 {
		t.Errorf("MemoryGiB %g, want 79.6474609375", got)
	}
	// NVLink4's 900 GB/s is both directions: 450 each way.
	if g.ScaleUp.UnidirectionalGBps() != 450 || g.PCIe.UnidirectionalGBps() != 64 {
		t.Errorf("one-way links %g, %g GB/s", g.ScaleUp.UnidirectionalGBps(), g.PCIe.UnidirectionalGBps())
	}
	if g.TPLimit() != 8 || (&GPU{MaxGPUsPerNode: 72}).TPLimit() != 72 || (&GPU{}).TPLimit() != 8 {
		t.Error("TPLimit: max_gpus_per_node, else 8")
	}
}

func TestGPUValidateNamesTheField(t *testing.T) {
	if err := h100().Validate(); err != nil {
		t.Fatalf("H100: %v", err)
	}
	for field, bad := range map[string]func(g *GPU){
		"id":                     func(g *GPU) { g.ID = "" },
		"memory_bytes":           func(g *GPU) { g.MemoryBytes = 0 },
		"hbm_bandwidth_gbps":     func(g *GPU) { g.HBMBandwidthGBps = -1 },
		"dense_tflops.bf16":      func(g *GPU) { g.DenseTFLOPS.BF16, g.DenseTFLOPS.FP16 = 0, 0 },
		"pcie.bandwidth_gbps":    func(g *GPU) { g.PCIe.BandwidthGBps = 0 },
		"max_gpus_per_node":      func(g *GPU) { g.MaxGPUsPerNode = -1 },
		"sm_count":               func(g *GPU) { g.SMCount = 5000 },
		"price_per_gpu_hour_usd": func(g *GPU) { g.PricePerGPUHourUSD = -0.5 },
		"dense_tflops.fp8":       func(g *GPU) { g.DenseTFLOPS.FP8 = -1 },
		"sparse_tflops.int8":     func(g *GPU) { g.SparseTFLOPS.INT8 = 1000 }, // below the dense 1978.9: swapped
	} {
		g := h100()
		bad(g)
		var fe *FieldError
		if err := g.Validate(); !errors.As(err, &fe) || fe.Field != field {
			t.Errorf("%s: %v", field, err)
		}
	}
}
