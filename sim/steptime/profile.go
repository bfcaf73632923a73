package steptime

import (
	"fmt"
	"math"
	"sort"

	"github.com/headroom-sim/headroom/hardware"
)

// ProfileSchemaVersion is bumped when Profile's fields change meaning.
// Version 2 has per-format GEMM and MoE coefficients, fitted per GPU to
// measured kernels, and calibration scale factors.
const ProfileSchemaVersion = 2

// Profile holds every coefficient of the step-time formula. Efficiencies
// are fractions of the GPU's catalog peak; overheads are in microseconds.
type Profile struct {
	SchemaVersion int `json:"schema_version" yaml:"schema_version"`
	// Source says where the values come from (the kernel tables a GPU's
	// defaults were fitted to, the template GPU of an unmeasured one, or a
	// calibration run).
	Source string `json:"source" yaml:"source"`

	// GEMM holds the dense matmul coefficients per kernel format (bf16,
	// fp8, fp8_block, nvfp4, int4_wo, mxfp4, int8). A format without an
	// entry takes the nearest one's (see gemmCoeffs).
	GEMM map[string]GEMMCoeffs `json:"gemm" yaml:"gemm"`
	// MoE holds the fused-MoE coefficients per expert format.
	MoE map[string]MoECoeffs `json:"moe" yaml:"moe"`
	// Attention covers prefill (FlashAttention/FlashInfer over causal
	// chunks) and paged decode attention.
	Attention AttentionCoeffs `json:"attention" yaml:"attention"`
	// Elementwise covers the norms, rotary embedding, residual adds and
	// activation between the matmuls.
	Elementwise ElementwiseCoeffs `json:"elementwise" yaml:"elementwise"`
	// Comm covers vLLM's tensor-parallel all-reduce and the NCCL
	// collectives of expert parallelism.
	Comm CommCoeffs `json:"comm" yaml:"comm"`
	// EagerLaunchUS is the host-side launch time of one kernel outside a
	// CUDA graph: an eagerly run step's kernel takes at least this long.
	EagerLaunchUS float64 `json:"eager_launch_us" yaml:"eager_launch_us"`
	// CPU is the engine's host time per step.
	CPU CPUCoeffs `json:"cpu" yaml:"cpu"`
	// Frontend is the API server's host time: the path of a request from
	// the client to the engine and of its tokens back (one event loop per
	// API server, shared by every request it serves).
	Frontend FrontendCoeffs `json:"frontend" yaml:"frontend"`
	// Scale multiplies the time of each resource class (1 = as fitted);
	// serving-run calibration fits these.
	Scale Scales `json:"scale" yaml:"scale"`

	// NonTorchAdjustGiB is not used by the step-time model: it carries a
	// memory calibration with the profile. When the calibration run logged
	// its KV block count, this is the extra memory per GPU (GiB) the memory
	// model must set aside to reproduce it; scenario resolution adds it to
	// the non-torch term.
	NonTorchAdjustGiB float64 `json:"non_torch_adjust_gib,omitempty" yaml:"non_torch_adjust_gib,omitempty"`
}

// GEMMCoeffs model one format's matmul time:
//
//	t = overhead + quant + (tc^p + tm^p)^(1/p)
//	tc = 2·m'·n·k / (peak · efficiency · m/(m + half_tokens))
//	tm = bytes / (bandwidth · bandwidth_efficiency)
//
// where m' rounds m up to a multiple of tile_tokens above it (a partial
// tile costs a whole one), quant is the activation quantisation kernel of
// the W8A8/W4A4 formats (m·k elements read in 16 bit and written
// quantised, at quant_bandwidth_efficiency, plus unaligned_us when m is not
// a multiple of 4 and the kernel pads it), and p = sharpness blends the
// compute and memory bounds (large p: the larger one alone).
type GEMMCoeffs struct {
	Efficiency               float64 `json:"efficiency" yaml:"efficiency"`
	HalfTokens               float64 `json:"half_tokens" yaml:"half_tokens"`
	TileTokens               float64 `json:"tile_tokens" yaml:"tile_tokens"`
	BandwidthEfficiency      float64 `json:"bandwidth_efficiency" yaml:"bandwidth_efficiency"`
	OverheadUS               float64 `json:"overhead_us" yaml:"overhead_us"`
	Sharpness                float64 `json:"sharpness" yaml:"sharpness"`
	QuantBandwidthEfficiency float64 `json:"quant_bandwidth_efficiency,omitempty" yaml:"quant_bandwidth_efficiency,omitempty"`
	UnalignedUS              float64 `json:"unaligned_us,omitempty" yaml:"unaligned_us,omitempty"`
}

// MoECoeffs model one expert format's fused-MoE layer: the touched
// experts' weights streamed at bandwidth_efficiency, the routed FLOPs at
// efficiency × (tokens per expert)/(tokens per expert + half_tokens), the
// larger of the two, plus a fixed overhead per layer (routing, gather,
// scatter, the two grouped GEMMs' launches).
type MoECoeffs struct {
	Efficiency          float64 `json:"efficiency" yaml:"efficiency"`
	HalfTokens          float64 `json:"half_tokens" yaml:"half_tokens"`
	BandwidthEfficiency float64 `json:"bandwidth_efficiency" yaml:"bandwidth_efficiency"`
	OverheadUS          float64 `json:"overhead_us" yaml:"overhead_us"`
	// PerTokenUS is the per-token-expert pair cost outside the GEMMs
	// (alignment, permutation, the weighted sum).
	PerTokenUS float64 `json:"per_token_us" yaml:"per_token_us"`
}

// AttentionCoeffs model the attention kernels.
//
// Prefill: t = overhead + flops/(peak · prefill_efficiency · w/(w + half_work))
// with w the batch's query-key pairs per head; decode: t = overhead +
// KV bytes/(bandwidth · decode_bandwidth_efficiency · b/(b + half_batch)),
// b the batch's sequences (few sequences leave SMs idle).
type AttentionCoeffs struct {
	PrefillEfficiency         float64 `json:"prefill_efficiency" yaml:"prefill_efficiency"`
	PrefillHalfWork           float64 `json:"prefill_half_work" yaml:"prefill_half_work"`
	PrefillOverheadUS         float64 `json:"prefill_overhead_us" yaml:"prefill_overhead_us"`
	DecodeBandwidthEfficiency float64 `json:"decode_bandwidth_efficiency" yaml:"decode_bandwidth_efficiency"`
	DecodeHalfBatch           float64 `json:"decode_half_batch" yaml:"decode_half_batch"`
	DecodeOverheadUS          float64 `json:"decode_overhead_us" yaml:"decode_overhead_us"`
}

// ElementwiseCoeffs model the memory-bound kernels between the matmuls.
type ElementwiseCoeffs struct {
	BandwidthEfficiency float64 `json:"bandwidth_efficiency" yaml:"bandwidth_efficiency"`
	OverheadUS          float64 `json:"overhead_us" yaml:"overhead_us"`
}

// CommCoeffs model collectives over the scale-up link: t = latency +
// bytes × algorithm factor / (link bandwidth × efficiency). vLLM's custom
// all-reduce (one kernel over NVLink peer memory) serves tensor-parallel
// all-reduces up to custom_all_reduce_max_bytes; NCCL the rest and the
// expert-parallel all-gather and reduce-scatter. Latencies grow with the
// GPU count: latency_us + per_gpu_us × (gpus − 2).
type CommCoeffs struct {
	CustomLatencyUS         float64 `json:"custom_latency_us" yaml:"custom_latency_us"`
	CustomPerGPUUS          float64 `json:"custom_per_gpu_us" yaml:"custom_per_gpu_us"`
	CustomLinkEfficiency    float64 `json:"custom_link_efficiency" yaml:"custom_link_efficiency"`
	CustomAllReduceMaxBytes float64 `json:"custom_all_reduce_max_bytes" yaml:"custom_all_reduce_max_bytes"`
	// CustomMaxBytesByGPUs overrides the size limit per GPU count: vLLM's
	// limits of its custom and symmetric-memory all-reduce kernels depend
	// on the world size.
	CustomMaxBytesByGPUs map[int]float64 `json:"custom_max_bytes_by_gpus,omitempty" yaml:"custom_max_bytes_by_gpus,omitempty"`
	NCCLLatencyUS        float64         `json:"nccl_latency_us" yaml:"nccl_latency_us"`
	NCCLPerGPUUS         float64         `json:"nccl_per_gpu_us" yaml:"nccl_per_gpu_us"`
	NCCLLinkEfficiency   float64         `json:"nccl_link_efficiency" yaml:"nccl_link_efficiency"`
}

// CPUCoeffs are the engine's host costs per step: scheduling, input
// preparation, sampling bookkeeping and output processing.
type CPUCoeffs struct {
	StepOverheadUS       float64 `json:"step_overhead_us" yaml:"step_overhead_us"`
	PerSeqOverheadUS     float64 `json:"per_seq_overhead_us" yaml:"per_seq_overhead_us"`
	PerPrefillOverheadUS float64 `json:"per_prefill_overhead_us" yaml:"per_prefill_overhead_us"`
	// AsyncOverlap is the fraction of the CPU time hidden behind the GPU
	// when the engine schedules asynchronously (0 = none, 1 = all of it
	// that fits under the GPU time).
	AsyncOverlap float64 `json:"async_overlap" yaml:"async_overlap"`
}

// FrontendCoeffs are vLLM's API-server costs (vllm-request-path.md): per
// request, HTTP parsing, validation, chat template, tokenisation (per
// prompt token, on one shared thread) and the hand-off to the engine; per
// engine step, decoding its output message; per output token, incremental
// detokenisation, the streamed event's JSON and its socket write.
type FrontendCoeffs struct {
	RequestUS        float64 `json:"request_us" yaml:"request_us"`
	PerPromptTokenUS float64 `json:"per_prompt_token_us" yaml:"per_prompt_token_us"`
	PerStepUS        float64 `json:"per_step_us" yaml:"per_step_us"`
	PerOutputTokenUS float64 `json:"per_output_token_us" yaml:"per_output_token_us"`
}

// Scales multiply the predicted time of each resource class: a compute
// scale of 0.9 makes compute-bound kernels 1/0.9 as long. 0 means 1.
type Scales struct {
	Compute  float64 `json:"compute,omitempty" yaml:"compute,omitempty"`
	Memory   float64 `json:"memory,omitempty" yaml:"memory,omitempty"`
	Overhead float64 `json:"overhead,omitempty" yaml:"overhead,omitempty"`
	Experts  float64 `json:"experts,omitempty" yaml:"experts,omitempty"`
	Link     float64 `json:"link,omitempty" yaml:"link,omitempty"`
}

func orOne(v float64) float64 {
	if v == 0 {
		return 1
	}
	return v
}

// speed returns the scales with zeros read as 1.
func (s Scales) speed() Scales {
	return Scales{orOne(s.Compute), orOne(s.Memory), orOne(s.Overhead), orOne(s.Experts), orOne(s.Link)}
}

// formatFallback is the format whose coefficients stand in for one a
// profile has none for: the nearest kernel family.
var formatFallback = map[string][]string{
	FormatFP8Block: {FormatFP8},
	FormatFP8:      {FormatFP8Block},
	FormatNVFP4:    {FormatFP8, FormatFP8Block},
	FormatINT4:     {FormatMXFP4, FormatBF16},
	FormatMXFP4:    {FormatINT4, FormatBF16},
	"int8":         {FormatFP8, FormatFP8Block},
}

// gemmCoeffs returns the coefficients of format (or its stand-in).
func (p *Profile) gemmCoeffs(format string) GEMMCoeffs {
	if c, ok := p.GEMM[format]; ok {
		return c
	}
	for _, f := range formatFallback[format] {
		if c, ok := p.GEMM[f]; ok {
			return c
		}
	}
	return p.GEMM[FormatBF16]
}

// moeCoeffs returns the fused-MoE coefficients of format (or its
// stand-in).
func (p *Profile) moeCoeffs(format string) MoECoeffs {
	if c, ok := p.MoE[format]; ok {
		return c
	}
	for _, f := range formatFallback[format] {
		if c, ok := p.MoE[f]; ok {
			return c
		}
	}
	if c, ok := p.MoE[FormatBF16]; ok {
		return c
	}
	// No MoE measurement: the dense bf16 GEMM's efficiencies.
	g := p.gemmCoeffs(format)
	return MoECoeffs{Efficiency: g.Efficiency, HalfTokens: math.Max(g.HalfTokens, 16), BandwidthEfficiency: g.BandwidthEfficiency, OverheadUS: 4 * g.OverheadUS}
}

// Formats lists the GEMM formats the profile has coefficients for.
func (p *Profile) Formats() []string {
	out := make([]string, 0, len(p.GEMM))
	for f := range p.GEMM {
		out = append(out, f)
	}
	sort.Strings(out)
	return out
}

type rangeCheck struct {
	name   string
	v      float64
	lo, hi float64
	loOpen bool
}

func (r rangeCheck) err() error {
	ok := r.v <= r.hi && (r.v > r.lo || (!r.loOpen && r.v == r.lo))
	if ok && !math.IsNaN(r.v) {
		return nil
	}
	br := "["
	if r.loOpen {
		br = "("
	}
	return &hardware.FieldError{Field: r.name, Reason: fmt.Sprintf("%g is not in %s%g, %g]", r.v, br, r.lo, r.hi)}
}

func frac(name string, v float64) rangeCheck { return rangeCheck{name, v, 0, 1, true} }
func usec(name string, v float64) rangeCheck { return rangeCheck{name, v, 0, 1e7, false} }

// Validate checks every coefficient's range.
func (p *Profile) Validate() error {
	if p.SchemaVersion != ProfileSchemaVersion {
		return &hardware.FieldError{Field: "schema_version", Reason: fmt.Sprintf("%d is not %d (a profile from another Headroom version: run headroom calibrate again)", p.SchemaVersion, ProfileSchemaVersion)}
	}
	if _, ok := p.GEMM[FormatBF16]; !ok {
		return &hardware.FieldError{Field: "gemm.bf16", Reason: "is required (the other formats fall back to it)"}
	}
	var checks []rangeCheck
	for _, f := range p.Formats() {
		c := p.GEMM[f]
		pre := "gemm." + f + "."
		checks = append(checks, frac(pre+"efficiency", c.Efficiency), frac(pre+"bandwidth_efficiency", c.BandwidthEfficiency),
			rangeCheck{pre + "half_tokens", c.HalfTokens, 0, 1 << 20, false}, rangeCheck{pre + "tile_tokens", c.TileTokens, 0, 1 << 16, false},
			usec(pre+"overhead_us", c.OverheadUS), rangeCheck{pre + "sharpness", c.Sharpness, 0, 64, false},
			rangeCheck{pre + "quant_bandwidth_efficiency", c.QuantBandwidthEfficiency, 0, 16, false}, usec(pre+"unaligned_us", c.UnalignedUS))
	}
	moe := make([]string, 0, len(p.MoE))
	for f := range p.MoE {
		moe = append(moe, f)
	}
	sort.Strings(moe)
	for _, f := range moe {
		c := p.MoE[f]
		pre := "moe." + f + "."
		checks = append(checks, frac(pre+"efficiency", c.Efficiency), frac(pre+"bandwidth_efficiency", c.BandwidthEfficiency),
			rangeCheck{pre + "half_tokens", c.HalfTokens, 0, 1 << 20, false}, usec(pre+"overhead_us", c.OverheadUS), usec(pre+"per_token_us", c.PerTokenUS))
	}
	a, e, cm, cpu, s := p.Attention, p.Elementwise, p.Comm, p.CPU, p.Scale
	checks = append(checks,
		frac("attention.prefill_efficiency", a.PrefillEfficiency), rangeCheck{"attention.prefill_half_work", a.PrefillHalfWork, 0, 1e15, false},
		usec("attention.prefill_overhead_us", a.PrefillOverheadUS), frac("attention.decode_bandwidth_efficiency", a.DecodeBandwidthEfficiency),
		rangeCheck{"attention.decode_half_batch", a.DecodeHalfBatch, 0, 1 << 20, false}, usec("attention.decode_overhead_us", a.DecodeOverheadUS),
		frac("elementwise.bandwidth_efficiency", e.BandwidthEfficiency), usec("elementwise.overhead_us", e.OverheadUS),
		usec("comm.custom_latency_us", cm.CustomLatencyUS), usec("comm.custom_per_gpu_us", cm.CustomPerGPUUS),
		rangeCheck{"comm.custom_link_efficiency", cm.CustomLinkEfficiency, 0, 4, false},
		rangeCheck{"comm.custom_all_reduce_max_bytes", cm.CustomAllReduceMaxBytes, 0, 1 << 40, false},
		usec("comm.nccl_latency_us", cm.NCCLLatencyUS), usec("comm.nccl_per_gpu_us", cm.NCCLPerGPUUS),
		rangeCheck{"comm.nccl_link_efficiency", cm.NCCLLinkEfficiency, 0, 4, true},
		usec("eager_launch_us", p.EagerLaunchUS),
		usec("cpu.step_overhead_us", cpu.StepOverheadUS), usec("cpu.per_seq_overhead_us", cpu.PerSeqOverheadUS),
		usec("cpu.per_prefill_overhead_us", cpu.PerPrefillOverheadUS), rangeCheck{"cpu.async_overlap", cpu.AsyncOverlap, 0, 1, false},
		usec("frontend.request_us", p.Frontend.RequestUS), usec("frontend.per_prompt_token_us", p.Frontend.PerPromptTokenUS),
		usec("frontend.per_step_us", p.Frontend.PerStepUS), usec("frontend.per_output_token_us", p.Frontend.PerOutputTokenUS),
		rangeCheck{"scale.compute", s.Compute, 0, 100, false}, rangeCheck{"scale.memory", s.Memory, 0, 100, false},
		rangeCheck{"scale.overhead", s.Overhead, 0, 100, false}, rangeCheck{"scale.experts", s.Experts, 0, 100, false},
		rangeCheck{"scale.link", s.Link, 0, 100, false},
		rangeCheck{"non_torch_adjust_gib", p.NonTorchAdjustGiB, -64, 64, false},
	)
	for _, c := range checks {
		if err := c.err(); err != nil {
			return err
		}
	}
	return nil
}

// Clone returns a deep copy (the maps are not shared).
func (p Profile) Clone() Profile {
	q := p
	q.GEMM = make(map[string]GEMMCoeffs, len(p.GEMM))
	for k, v := range p.GEMM {
		q.GEMM[k] = v
	}
	q.MoE = make(map[string]MoECoeffs, len(p.MoE))
	for k, v := range p.MoE {
		q.MoE[k] = v
	}
	if p.Comm.CustomMaxBytesByGPUs != nil {
		q.Comm.CustomMaxBytesByGPUs = make(map[int]float64, len(p.Comm.CustomMaxBytesByGPUs))
		for k, v := range p.Comm.CustomMaxBytesByGPUs {
			q.Comm.CustomMaxBytesByGPUs[k] = v
		}
	}
	return q
}

// BaseProfile is the starting point of every GPU's profile: the
// coefficients no kernel table determines, and neutral values for the
// rest (which a fit or a template replaces).
//
//   - Elementwise kernels (norms, rotary, residual adds, activation): Vidur's
//     H100 per-op measurements (profiling/vidur/h100, fitted in the previous
//     step-time model) reach 0.664 of peak bandwidth; under CUDA-graph replay
//     about 1.5 µs of fixed time per kernel remains.
//   - EagerLaunchUS: the same measurements' eager per-kernel cost, 4.8 µs.
//   - CPU: 1500 µs per step + 10 µs per sequence + 50 µs per prefill chunk,
//     80% hidden under the GPU with async scheduling; these are host costs,
//     not kernel coefficients.
func BaseProfile() Profile {
	return Profile{
		SchemaVersion: ProfileSchemaVersion,
		Source:        "base",
		GEMM: map[string]GEMMCoeffs{FormatBF16: {Efficiency: 0.75, HalfTokens: 64, BandwidthEfficiency: 0.82,
			OverheadUS: 3, Sharpness: 3, TileTokens: 1}},
		MoE: map[string]MoECoeffs{},
		Attention: AttentionCoeffs{PrefillEfficiency: 0.5, PrefillHalfWork: 1e6, PrefillOverheadUS: 10,
			DecodeBandwidthEfficiency: 0.7, DecodeHalfBatch: 4, DecodeOverheadUS: 5},
		Elementwise: ElementwiseCoeffs{BandwidthEfficiency: 0.664, OverheadUS: 1.5},
		Comm: CommCoeffs{CustomLatencyUS: 5, CustomPerGPUUS: 0.5, CustomLinkEfficiency: 0.5, CustomAllReduceMaxBytes: 8 << 20,
			NCCLLatencyUS: 10, NCCLPerGPUUS: 2, NCCLLinkEfficiency: 0.7},
		EagerLaunchUS: 4.8,
		CPU:           CPUCoeffs{StepOverheadUS: 1500, PerSeqOverheadUS: 10, PerPrefillOverheadUS: 50, AsyncOverlap: 0.8},
		Frontend:      FrontendCoeffs{RequestUS: 1000, PerPromptTokenUS: 1, PerStepUS: 100, PerOutputTokenUS: 30},
	}
}
