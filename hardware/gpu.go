package hardware

import "fmt"

// GiB is 2^30 bytes; vLLM logs memory in GiB.
const GiB = 1 << 30

// TFLOPS holds peak tensor throughput per data type, in TFLOPS (TOPS for the
// integer types). Zero means the GPU has no tensor path for that type.
type TFLOPS struct {
	BF16 float64 `yaml:"bf16" json:"bf16"`
	FP16 float64 `yaml:"fp16" json:"fp16"`
	FP8  float64 `yaml:"fp8" json:"fp8"`
	INT8 float64 `yaml:"int8" json:"int8"`
	FP4  float64 `yaml:"fp4" json:"fp4"`
}

// Link is a data path between GPUs or between a GPU and its host.
type Link struct {
	// Kind names the technology: nvlink3, nvlink4, nvlink5, infinity_fabric,
	// roce, pcie4, pcie5, pcie6, none.
	Kind string `yaml:"kind" json:"kind"`
	// BandwidthGBps is the aggregate bidirectional bandwidth per GPU, as
	// vendors quote it (H100 NVLink4: 900 GB/s = 450 GB/s each way).
	BandwidthGBps float64 `yaml:"bandwidth_gbps" json:"bandwidth_gbps"`
}

// UnidirectionalGBps is the bandwidth in one direction: half the quoted
// bidirectional aggregate.
func (l Link) UnidirectionalGBps() float64 { return l.BandwidthGBps / 2 }

// GPU is one accelerator model.
type GPU struct {
	ID      string   `yaml:"id" json:"id"`
	Name    string   `yaml:"name" json:"name"`
	Vendor  string   `yaml:"vendor" json:"vendor"`
	Aliases []string `yaml:"aliases,omitempty" json:"aliases,omitempty"`

	// MemoryBytes is the device memory the driver reports to CUDA/ROCm
	// (cudaMemGetInfo total, torch.cuda.mem_get_info()[1]); vLLM multiplies
	// it by gpu_memory_utilization. It is below the marketing figure.
	MemoryBytes int64 `yaml:"memory_bytes" json:"memory_bytes"`
	// MemoryGB is the marketing capacity (decimal GB), for display.
	MemoryGB float64 `yaml:"memory_gb" json:"memory_gb"`
	// MemoryType is HBM2e, HBM3, HBM3e, GDDR6, GDDR6X, GDDR7 …
	MemoryType string `yaml:"memory_type" json:"memory_type"`
	// HBMBandwidthGBps is the peak device-memory bandwidth in GB/s (HBM or
	// GDDR, the name follows the common usage).
	HBMBandwidthGBps float64 `yaml:"hbm_bandwidth_gbps" json:"hbm_bandwidth_gbps"`

	// DenseTFLOPS are the peak tensor-core rates without structured sparsity.
	DenseTFLOPS TFLOPS `yaml:"dense_tflops" json:"dense_tflops"`
	// SparseTFLOPS are the 2:4 structured-sparsity rates vendors headline.
	// Headroom never uses them for timing; they are kept to show the
	// difference.
	SparseTFLOPS TFLOPS `yaml:"sparse_tflops" json:"sparse_tflops"`

	// ScaleUp is the GPU-to-GPU link inside a node (NVLink, Infinity
	// Fabric, or PCIe when there is none).
	ScaleUp Link `yaml:"scale_up" json:"scale_up"`
	// PCIe is the host link, used for KV swap to CPU memory.
	PCIe Link `yaml:"pcie" json:"pcie"`

	TDPWatts float64 `yaml:"tdp_watts" json:"tdp_watts"`
	// PricePerGPUHourUSD is an editable assumption (on-demand cloud list
	// prices vary by provider and date), not a measured fact.
	PricePerGPUHourUSD float64 `yaml:"price_per_gpu_hour_usd" json:"price_per_gpu_hour_usd"`
	// MaxGPUsPerNode bounds the tensor-parallel degree inside one scale-up
	// domain (8 on HGX, 72 on GB200 NVL72).
	MaxGPUsPerNode int `yaml:"max_gpus_per_node" json:"max_gpus_per_node"`
	// SMCount is the number of streaming multiprocessors (compute units):
	// the width over which a kernel's thread blocks run in waves. 0 means
	// not recorded (the step-time formulas then assume an H100's 132).
	SMCount int `yaml:"sm_count,omitempty" json:"sm_count,omitempty"`

	Notes string `yaml:"notes,omitempty" json:"notes,omitempty"`
}

// MemoryGiB is MemoryBytes in GiB.
func (g *GPU) MemoryGiB() float64 { return float64(g.MemoryBytes) / GiB }

// PeakTFLOPS is the dense peak for a matmul whose inputs are in dt. A type
// the GPU has no tensor path for computes in 16 bit (fp4, mxfp4, fp8 and
// int8 → bf16, as the dequantising weight-only kernels serving engines fall
// back to do; int4 always: weight-only); fp16 and bf16 stand in for each
// other.
func (g *GPU) PeakTFLOPS(dt DType) float64 {
	t := g.DenseTFLOPS
	switch dt {
	case FP4, MXFP4:
		if t.FP4 > 0 {
			return t.FP4
		}
		return g.PeakTFLOPS(BF16)
	case FP8:
		if t.FP8 > 0 {
			return t.FP8
		}
		return g.PeakTFLOPS(BF16)
	case INT8:
		if t.INT8 > 0 {
			return t.INT8
		}
		return g.PeakTFLOPS(BF16)
	case FP16:
		if t.FP16 > 0 {
			return t.FP16
		}
		return t.BF16
	case FP32, INT4, BF16:
		if t.BF16 > 0 {
			return t.BF16
		}
		return t.FP16
	}
	return t.BF16
}

// Validate checks the fields every computation relies on.
func (g *GPU) Validate() error {
	switch {
	case g.ID == "":
		return &FieldError{Field: "id", Reason: "is required"}
	case g.MemoryBytes <= 0:
		return &FieldError{Field: "memory_bytes", Reason: "must be > 0"}
	case g.HBMBandwidthGBps <= 0:
		return &FieldError{Field: "hbm_bandwidth_gbps", Reason: "must be > 0"}
	case g.DenseTFLOPS.BF16 <= 0 && g.DenseTFLOPS.FP16 <= 0:
		return &FieldError{Field: "dense_tflops.bf16", Reason: "must be > 0 (or give fp16)"}
	case g.PCIe.BandwidthGBps <= 0:
		return &FieldError{Field: "pcie.bandwidth_gbps", Reason: "must be > 0"}
	case g.MaxGPUsPerNode < 0:
		return &FieldError{Field: "max_gpus_per_node", Reason: "must be >= 0"}
	case g.SMCount < 0 || g.SMCount > 4096:
		return &FieldError{Field: "sm_count", Reason: "must be in [0, 4096]"}
	case g.PricePerGPUHourUSD < 0:
		return &FieldError{Field: "price_per_gpu_hour_usd", Reason: "must be >= 0"}
	}
	for _, p := range []struct {
		name         string
		dense, spars float64
	}{
		{"bf16", g.DenseTFLOPS.BF16, g.SparseTFLOPS.BF16},
		{"fp16", g.DenseTFLOPS.FP16, g.SparseTFLOPS.FP16},
		{"fp8", g.DenseTFLOPS.FP8, g.SparseTFLOPS.FP8},
		{"int8", g.DenseTFLOPS.INT8, g.SparseTFLOPS.INT8},
		{"fp4", g.DenseTFLOPS.FP4, g.SparseTFLOPS.FP4},
	} {
		if p.dense < 0 || p.spars < 0 {
			return &FieldError{Field: "dense_tflops." + p.name, Reason: "must be >= 0"}
		}
		if p.spars > 0 && p.dense > p.spars {
			return &FieldError{Field: "sparse_tflops." + p.name, Reason: fmt.Sprintf("%.1f is below the dense figure %.1f: dense and sparse swapped?", p.spars, p.dense)}
		}
	}
	return nil
}

// FieldError says which field of a value is wrong and why.
type FieldError struct {
	Field  string
	Reason string
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Reason }

// TPLimit is the largest tensor-parallel degree one scale-up domain allows.
func (g *GPU) TPLimit() int {
	if g.MaxGPUsPerNode > 0 {
		return g.MaxGPUsPerNode
	}
	return 8
}
