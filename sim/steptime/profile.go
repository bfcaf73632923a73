package steptime

import (
	"fmt"
	"math"
	"strings"

	"github.com/headroom-sim/headroom/hardware"
)

// ProfileSchemaVersion is bumped when Profile's fields change meaning.
const ProfileSchemaVersion = 1

// Profile holds every coefficient of the step-time model. Efficiencies are
// fractions of the GPU's catalog peak; overheads are in microseconds.
type Profile struct {
	SchemaVersion int `json:"schema_version" yaml:"schema_version"`
	// Source says where the values come from (a GPU family default, or a
	// calibration run).
	Source string `json:"source" yaml:"source"`

	// GEMMEfficiency is the fraction of dense peak FLOPs large GEMMs reach.
	GEMMEfficiency float64 `json:"gemm_efficiency" yaml:"gemm_efficiency"`
	// GEMMHalfTokens is the token count M at which a GEMM reaches half of
	// GEMMEfficiency: efficiency(M) = GEMMEfficiency × M / (M + GEMMHalfTokens).
	GEMMHalfTokens float64 `json:"gemm_half_tokens" yaml:"gemm_half_tokens"`
	// BandwidthEfficiency is the fraction of peak device-memory bandwidth
	// that weight and activation streaming reaches.
	BandwidthEfficiency float64 `json:"bandwidth_efficiency" yaml:"bandwidth_efficiency"`
	// AttentionPrefillEfficiency is the fraction of dense peak FLOPs
	// FlashAttention reaches on prefill chunks.
	AttentionPrefillEfficiency float64 `json:"attention_prefill_efficiency" yaml:"attention_prefill_efficiency"`
	// AttentionDecodeEfficiency is the fraction of peak bandwidth paged
	// decode attention reaches reading the KV cache.
	AttentionDecodeEfficiency float64 `json:"attention_decode_efficiency" yaml:"attention_decode_efficiency"`
	// KernelOverheadUS is the fixed cost per kernel (launch gaps, tails)
	// that CUDA graphs do not remove.
	KernelOverheadUS float64 `json:"kernel_overhead_us" yaml:"kernel_overhead_us"`
	// ElementwiseBandwidthEfficiency is the fraction of peak bandwidth the
	// elementwise kernels (norms, rotary embedding, activation) reach; 0
	// means BandwidthEfficiency (the behaviour before the field existed).
	ElementwiseBandwidthEfficiency float64 `json:"elementwise_bandwidth_efficiency,omitempty" yaml:"elementwise_bandwidth_efficiency,omitempty"`
	// AttentionKernelOverheadUS is the fixed cost per attention kernel
	// (prefill or decode, per layer), which is larger than other kernels'
	// because of the split-KV reduction and the paged-KV set-up; 0 means
	// KernelOverheadUS (the behaviour before the field existed).
	AttentionKernelOverheadUS float64 `json:"attention_kernel_overhead_us,omitempty" yaml:"attention_kernel_overhead_us,omitempty"`
	// ExpertBandwidthEfficiency is the fraction of peak bandwidth the fused
	// MoE kernel reaches streaming expert weights; 0 means
	// BandwidthEfficiency.
	ExpertBandwidthEfficiency float64 `json:"expert_bandwidth_efficiency,omitempty" yaml:"expert_bandwidth_efficiency,omitempty"`
	// CustomAllReduceLatencyUS is the latency of vLLM's custom all-reduce
	// (one-shot over NVLink peer-to-peer), which replaces NCCL for
	// messages up to 8 MiB on NVLink systems; 0 means NCCL's
	// AllReduceLatencyUS for every message.
	CustomAllReduceLatencyUS float64 `json:"custom_all_reduce_latency_us,omitempty" yaml:"custom_all_reduce_latency_us,omitempty"`
	// GraphKernelOverheadUS and GraphAttentionKernelOverheadUS replace the
	// two overheads above in steps the engine replays as a CUDA graph (vLLM
	// captures batches of up to 512 tokens): replay removes the launch gaps
	// between kernels that eager, per-op profiling measures. 0 means the
	// eager values.
	GraphKernelOverheadUS          float64 `json:"graph_kernel_overhead_us,omitempty" yaml:"graph_kernel_overhead_us,omitempty"`
	GraphAttentionKernelOverheadUS float64 `json:"graph_attention_kernel_overhead_us,omitempty" yaml:"graph_attention_kernel_overhead_us,omitempty"`
	// LinkEfficiency is the fraction of the scale-up link's one-way
	// bandwidth an all-reduce reaches.
	LinkEfficiency float64 `json:"link_efficiency" yaml:"link_efficiency"`
	// AllReduceLatencyUS is the fixed latency of one all-reduce.
	AllReduceLatencyUS float64 `json:"all_reduce_latency_us" yaml:"all_reduce_latency_us"`
	// StepOverheadUS is the CPU time per engine step: scheduling, input
	// preparation, sampling bookkeeping, output processing.
	StepOverheadUS float64 `json:"step_overhead_us" yaml:"step_overhead_us"`
	// PerSeqOverheadUS is the CPU time per scheduled sequence per step
	// (input tensors, detokenisation, streaming the token out).
	PerSeqOverheadUS float64 `json:"per_seq_overhead_us" yaml:"per_seq_overhead_us"`
	// PerPrefillOverheadUS is the extra CPU time per prefill chunk.
	PerPrefillOverheadUS float64 `json:"per_prefill_overhead_us" yaml:"per_prefill_overhead_us"`
	// NonTorchAdjustGiB is not used by the step-time model: it carries a
	// memory calibration with the profile. When the calibration run logged
	// its KV block count, this is the extra memory per GPU (GiB) the memory
	// model must set aside to reproduce it; scenario resolution adds it to
	// the non-torch term.
	NonTorchAdjustGiB float64 `json:"non_torch_adjust_gib,omitempty" yaml:"non_torch_adjust_gib,omitempty"`
	// AsyncOverlap is the fraction of the CPU time hidden behind the GPU
	// when the engine schedules asynchronously (0 = none, 1 = all of it
	// that fits under the GPU time).
	AsyncOverlap float64 `json:"async_overlap" yaml:"async_overlap"`
}

// Validate checks every coefficient's range.
func (p *Profile) Validate() error {
	fracs := []struct {
		name string
		v    float64
	}{
		{"gemm_efficiency", p.GEMMEfficiency},
		{"bandwidth_efficiency", p.BandwidthEfficiency},
		{"attention_prefill_efficiency", p.AttentionPrefillEfficiency},
		{"attention_decode_efficiency", p.AttentionDecodeEfficiency},
		{"link_efficiency", p.LinkEfficiency},
	}
	for _, f := range fracs {
		if !(f.v > 0 && f.v <= 1) {
			return &hardware.FieldError{Field: f.name, Reason: fmt.Sprintf("%g is not in (0, 1]", f.v)}
		}
	}
	if e := p.ExpertBandwidthEfficiency; !(e >= 0 && e <= 1) {
		return &hardware.FieldError{Field: "expert_bandwidth_efficiency", Reason: fmt.Sprintf("%g is not in [0, 1]", e)}
	}
	if e := p.ElementwiseBandwidthEfficiency; !(e >= 0 && e <= 1) {
		return &hardware.FieldError{Field: "elementwise_bandwidth_efficiency", Reason: fmt.Sprintf("%g is not in [0, 1] (0 = bandwidth_efficiency)", e)}
	}
	nonneg := []struct {
		name string
		v    float64
	}{
		{"gemm_half_tokens", p.GEMMHalfTokens},
		{"kernel_overhead_us", p.KernelOverheadUS},
		{"attention_kernel_overhead_us", p.AttentionKernelOverheadUS},
		{"graph_kernel_overhead_us", p.GraphKernelOverheadUS},
		{"custom_all_reduce_latency_us", p.CustomAllReduceLatencyUS},
		{"graph_attention_kernel_overhead_us", p.GraphAttentionKernelOverheadUS},
		{"all_reduce_latency_us", p.AllReduceLatencyUS},
		{"step_overhead_us", p.StepOverheadUS},
		{"per_seq_overhead_us", p.PerSeqOverheadUS},
		{"per_prefill_overhead_us", p.PerPrefillOverheadUS},
	}
	for _, f := range nonneg {
		if !(f.v >= 0) || f.v > 1e9 {
			return &hardware.FieldError{Field: f.name, Reason: fmt.Sprintf("%g is not a non-negative number", f.v)}
		}
	}
	if math.IsNaN(p.NonTorchAdjustGiB) || math.Abs(p.NonTorchAdjustGiB) > 64 {
		return &hardware.FieldError{Field: "non_torch_adjust_gib", Reason: fmt.Sprintf("%g is not within ±64 GiB", p.NonTorchAdjustGiB)}
	}
	if !(p.AsyncOverlap >= 0 && p.AsyncOverlap <= 1) {
		return &hardware.FieldError{Field: "async_overlap", Reason: fmt.Sprintf("%g is not in [0, 1]", p.AsyncOverlap)}
	}
	return nil
}

// family classifies a GPU for its default coefficients.
func family(g *hardware.GPU) string {
	id := strings.ToLower(g.ID)
	switch {
	case g.Vendor == "amd":
		return "amd"
	case g.Vendor == "intel":
		return "gaudi"
	case strings.HasPrefix(id, "a100"), strings.HasPrefix(id, "a10"):
		return "ampere"
	case strings.HasPrefix(id, "h1"), strings.HasPrefix(id, "h2"):
		return "hopper"
	case strings.HasPrefix(id, "b"), strings.HasPrefix(id, "gb"):
		return "blackwell"
	case strings.HasPrefix(g.MemoryType, "GDDR"):
		return "gddr"
	}
	return "generic"
}

// gemmHalfTokensPerRidge is GEMMHalfTokens over the GPU's ridge point
// (dense bf16 FLOP/s ÷ memory bytes/s) for GPUs without kernel
// measurements. The fits give 96.3 tokens at the A100 80GB's 153 FLOP/B
// (0.63) and 194 at the H100 SXM's 295 FLOP/B (0.66): a GEMM needs more
// rows to become compute-bound where the ridge is higher.
const gemmHalfTokensPerRidge = 0.65

// ridge is g's dense bf16 FLOPs per byte of memory bandwidth.
func ridge(g *hardware.GPU) float64 {
	if g.HBMBandwidthGBps <= 0 {
		return 0
	}
	return g.PeakTFLOPS(hardware.BF16) * 1e12 / (g.HBMBandwidthGBps * 1e9)
}

// DefaultProfile returns the uncalibrated coefficients for g. Their
// derivation and error tables are in docs/steptime.md.
//
//   - ampere and hopper: the kernel coefficients are fitted (package
//     internal/testkit/kernels, deterministic) to Vidur's measured
//     per-operation times on A100 80GB and H100 SXM
//     (../shared/data/profiling/vidur/{a100,h100}/*/*/mlp.csv), Vidur's
//     A100 FlashAttention times (a100-attention-tp2/attention.csv) and
//     Vidur's NCCL all-reduce times inside DGX nodes
//     (network/{a100,h100}_dgx/all_reduce.csv). Hopper has no attention
//     measurement and takes the A100's attention fractions.
//   - other families have no kernel measurements: they take the measured
//     families' fractions and fixed costs, GEMMHalfTokens scaled with the
//     GPU's ridge point, and the family adjustments below.
//
// The CPU overheads (step, per sequence, per prefill, async overlap) are
// not kernel coefficients and are the same for every family; serving-run
// calibration (internal/study/calibrate) replaces them.
func DefaultProfile(g *hardware.GPU) Profile {
	p := Profile{
		SchemaVersion:                  ProfileSchemaVersion,
		GEMMEfficiency:                 0.75,
		GEMMHalfTokens:                 math.Round(gemmHalfTokensPerRidge*ridge(g)*10) / 10,
		BandwidthEfficiency:            0.82,
		ElementwiseBandwidthEfficiency: 0.60,
		AttentionPrefillEfficiency:     0.35,
		AttentionDecodeEfficiency:      0.75,
		KernelOverheadUS:               5,
		AttentionKernelOverheadUS:      15,
		// Under CUDA-graph replay consecutive kernels start back to back:
		// about 1.5 µs of fixed time per kernel remains (launch latency and
		// tail), against the ~5 µs eager profiling measures per op;
		// attention keeps the same ratio.
		GraphKernelOverheadUS: 1.5,
		// vLLM's fused-MoE Triton kernel gathers each expert's tokens and
		// streams its weights in tiles sized for the token count; with a
		// few tokens per expert it reaches about two thirds of the bandwidth
		// dense GEMMs do (and less on GPUs without a tuned kernel config).
		ExpertBandwidthEfficiency:      0.6,
		GraphAttentionKernelOverheadUS: 5,
		LinkEfficiency:                 0.75,
		AllReduceLatencyUS:             40,
		StepOverheadUS:                 1500,
		PerSeqOverheadUS:               10,
		PerPrefillOverheadUS:           50,
		AsyncOverlap:                   0.8,
	}
	if p.GEMMHalfTokens <= 0 {
		p.GEMMHalfTokens = 100
	}
	switch f := family(g); f {
	case "hopper":
		p.Source = "default: hopper (fitted to Vidur H100 SXM kernels; attention from A100)"
		// Vidur h100/*/*/mlp.csv, 21,756 projection kernels (6 models,
		// TP 1-8, 1-4096 tokens); the MLP (up + down) is within a median
		// 4.7% for T ≥ 512 tokens and 2.5% for T ≤ 64.
		p.GEMMEfficiency = 0.764
		p.GEMMHalfTokens = math.Round(0.656*ridge(g)*10) / 10 // 194 on the H100 SXM
		p.BandwidthEfficiency = 0.900
		p.KernelOverheadUS = 4.78
		// The same files' norms, rotary, activation and add, summed per
		// layer as the model's elementwise op.
		p.ElementwiseBandwidthEfficiency = 0.664
		// No Hopper attention measurement: Vidur A100 attention.csv
		// fractions (see ampere).
		p.AttentionPrefillEfficiency = 0.353
		p.AttentionDecodeEfficiency = 0.772
		p.AttentionKernelOverheadUS = 14.9
		// Vidur network/h100_dgx/all_reduce.csv, 2, 4 and 8 GPUs,
		// 2 KiB-64 MiB (NCCL over NVLink4/NVSwitch).
		p.AllReduceLatencyUS = 32.9
		p.LinkEfficiency = 0.803
	case "ampere":
		p.Source = "default: ampere (fitted to Vidur A100 80GB kernels)"
		// Vidur a100/*/*/mlp.csv, 36,188 projection kernels (8 models,
		// TP 1-8, 1-32768 tokens); the MLP (up + down) is within a median
		// 3.1% for T ≥ 512 tokens and 2.5% for T ≤ 64. The A10 and A10G
		// (also "ampere") take these fractions unmeasured.
		p.GEMMEfficiency = 0.750
		p.GEMMHalfTokens = math.Round(0.6292*ridge(g)*10) / 10 // 96.3 on the A100 80GB
		p.BandwidthEfficiency = 0.787
		p.KernelOverheadUS = 5.13
		// The same files' norms, rotary, activation and add per layer.
		p.ElementwiseBandwidthEfficiency = 0.546
		// Vidur a100-attention-tp2/attention.csv: FlashAttention prefill
		// chunks (fitted on the q·(c+q) work the profiled kernel did) and
		// paged decode, 32 query / 4 KV heads per GPU.
		p.AttentionPrefillEfficiency = 0.353
		p.AttentionDecodeEfficiency = 0.772
		p.AttentionKernelOverheadUS = 14.9
		// Vidur network/a100_dgx/all_reduce.csv, 2, 4 and 8 GPUs in one
		// node, 2 KiB-64 MiB (NCCL over NVLink3/NVSwitch).
		p.AllReduceLatencyUS = 44.7
		p.LinkEfficiency = 0.573
	case "blackwell":
		p.Source = "default: blackwell (no measurements: lower GEMM efficiency, hopper's NVLink all-reduce)"
		p.GEMMEfficiency = 0.70
		p.AllReduceLatencyUS = 32.9
		p.LinkEfficiency = 0.80
	case "gddr":
		p.Source = "default: gddr workstation/consumer cards (no measurements)"
		p.BandwidthEfficiency = 0.88
	case "amd":
		p.Source = "default: amd instinct (no measurements: lower GEMM and bandwidth efficiency)"
		p.GEMMEfficiency = 0.55
		p.BandwidthEfficiency = 0.75
	case "gaudi":
		p.Source = "default: gaudi (no measurements)"
		p.GEMMEfficiency = 0.60
	default:
		p.Source = "default: generic (no measurements)"
	}
	switch k := g.ScaleUp.Kind; {
	case strings.HasPrefix(k, "nvlink"):
		// vLLM's custom all-reduce: one kernel that reads the peers'
		// buffers over NVLink, a few microseconds for decode-sized
		// messages (NCCL's ~30 µs is what the Vidur profiles measured).
		p.CustomAllReduceLatencyUS = 8
	case k == "none" || strings.HasPrefix(k, "pcie"):
		// No NVLink: NCCL all-reduces cross PCIe (peer-to-peer or through
		// host memory), where nccl-tests report bus bandwidths of about a
		// third of the link's one-way rate and tens of microseconds of
		// latency per collective.
		p.LinkEfficiency = 0.35
		p.AllReduceLatencyUS = 50
		p.Source += "; PCIe all-reduce"
	}
	return p
}
