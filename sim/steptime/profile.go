package steptime

import (
	"fmt"
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
	nonneg := []struct {
		name string
		v    float64
	}{
		{"gemm_half_tokens", p.GEMMHalfTokens},
		{"kernel_overhead_us", p.KernelOverheadUS},
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

// DefaultProfile returns the uncalibrated coefficients for g. Their
// derivation is in docs/steptime.md: the GEMM and bandwidth efficiencies
// are fitted to Vidur's measured per-operation times on A100 and H100
// (../shared/data/profiling/vidur), the CPU overheads to Vidur's measured
// A100 scheduler/sampler/prepare/process times; other families reuse the
// closest measured family.
func DefaultProfile(g *hardware.GPU) Profile {
	p := Profile{
		SchemaVersion:              ProfileSchemaVersion,
		GEMMEfficiency:             0.75,
		GEMMHalfTokens:             24,
		BandwidthEfficiency:        0.82,
		AttentionPrefillEfficiency: 0.55,
		AttentionDecodeEfficiency:  0.70,
		KernelOverheadUS:           2.0,
		LinkEfficiency:             0.75,
		AllReduceLatencyUS:         12,
		StepOverheadUS:             1500,
		PerSeqOverheadUS:           10,
		PerPrefillOverheadUS:       50,
		AsyncOverlap:               0.8,
	}
	switch f := family(g); f {
	case "hopper":
		p.Source = "default: hopper"
		p.GEMMEfficiency = 0.72
	case "ampere":
		p.Source = "default: ampere"
		p.GEMMEfficiency = 0.80
		p.BandwidthEfficiency = 0.85
	case "blackwell":
		p.Source = "default: blackwell (hopper coefficients; no Blackwell measurements yet)"
		p.GEMMEfficiency = 0.70
	case "gddr":
		p.Source = "default: gddr workstation/consumer cards"
		p.BandwidthEfficiency = 0.88
	case "amd":
		p.Source = "default: amd instinct (hopper coefficients, lower GEMM efficiency)"
		p.GEMMEfficiency = 0.55
		p.BandwidthEfficiency = 0.75
	case "gaudi":
		p.Source = "default: gaudi (generic coefficients)"
		p.GEMMEfficiency = 0.60
	default:
		p.Source = "default: generic"
	}
	return p
}
