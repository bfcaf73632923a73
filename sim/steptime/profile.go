package steptime

import (
	"fmt"
	"math"
	"sort"

	"github.com/headroom-sim/headroom/hardware"
)

// ProfileSchemaVersion is bumped when Profile's fields change meaning.
// Version 2 had per-format GEMM and MoE coefficients, fitted per GPU to
// measured kernels, and calibration scale factors; version 3 models the
// kernels' mechanisms (GEMM waves, attention tiles per KV type, fused-MoE
// blocks and routing, NCCL protocols).
const ProfileSchemaVersion = 3

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
	// CPUV0 is the host time per step of vLLM's V0 engine (VLLM_USE_V1=0,
	// versions before 0.11), whose engine loop schedules, prepares the
	// model's inputs and processes every sequence's output (sampling
	// bookkeeping, stop checks, incremental detokenisation) itself, in
	// Python; AsyncOverlap is then the share its asynchronous output
	// processing hides behind the next step's GPU time. Zero values take
	// CPU's.
	CPUV0 CPUCoeffs `json:"cpu_v0,omitzero" yaml:"cpu_v0,omitempty"`
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

// GEMMCoeffs model one format's matmul time (FormulaGEMM):
//
//	t = overhead + quant + (tc^p + tm^p)^(1/p)
//	tc = 2·m'·n·k / (peak · efficiency · m/(m + half_tokens) · waves)
//	tm = bytes / (bandwidth · bandwidth_efficiency)
//
// where m' rounds m up to a multiple of tile_tokens above it (a partial
// tile costs a whole one), waves is the busy fraction of the SMs when the
// ceil(m/max(tile_tokens, 64))·ceil(n/wave_tile_n) output tiles run in
// waves of one tile per SM (wave_tile_n 0: no wave model), quant is the
// activation quantisation kernel of the W8A8/W4A4 formats (m·k elements
// read in 16 bit and written quantised, at quant_bandwidth_efficiency,
// plus unaligned_us when m is not a multiple of 4 and the kernel pads it),
// and p = sharpness blends the compute and memory bounds (large p: the
// larger one alone).
type GEMMCoeffs struct {
	// Efficiency is the large-m fraction of the format's dense peak.
	Efficiency float64 `json:"efficiency" yaml:"efficiency"`
	// HalfTokens is the m (tokens) at which compute efficiency halves.
	HalfTokens float64 `json:"half_tokens" yaml:"half_tokens"`
	// TileTokens is the row tile m is padded to (1: none).
	TileTokens float64 `json:"tile_tokens" yaml:"tile_tokens"`
	// WaveTileN is the output-tile width (columns) of the wave model; 0
	// turns it off.
	WaveTileN float64 `json:"wave_tile_n,omitempty" yaml:"wave_tile_n,omitempty"`
	// BandwidthEfficiency is the fraction of peak HBM bandwidth the weight
	// and activation stream reaches.
	BandwidthEfficiency float64 `json:"bandwidth_efficiency" yaml:"bandwidth_efficiency"`
	// OverheadUS is the fixed time per call inside a CUDA graph (µs).
	OverheadUS float64 `json:"overhead_us" yaml:"overhead_us"`
	// Sharpness is the p of the compute/memory blend (dimensionless).
	Sharpness float64 `json:"sharpness" yaml:"sharpness"`
	// QuantBandwidthEfficiency is the activation-quantisation kernel's
	// fraction of peak bandwidth (W8A8/W4A4 formats).
	QuantBandwidthEfficiency float64 `json:"quant_bandwidth_efficiency,omitempty" yaml:"quant_bandwidth_efficiency,omitempty"`
	// UnalignedUS is the extra time when m is not a multiple of 4 (µs).
	UnalignedUS float64 `json:"unaligned_us,omitempty" yaml:"unaligned_us,omitempty"`
	// EagerFloorUS is the host time of launching this format's kernels
	// outside a CUDA graph (µs): an eager call takes at least this long.
	// The fp8_block tables were measured eagerly, so the fit finds it
	// there; 0 means the profile's eager_launch_us.
	EagerFloorUS float64 `json:"eager_floor_us,omitempty" yaml:"eager_floor_us,omitempty"`
	// CacheMB and CacheSpeedup describe the kernel benchmark's warm L2
	// (FormulaGEMMWarm): weight buffers of about cache_mb in all stream
	// at cache_speedup × the HBM rate. Serving steps do not use them.
	CacheMB      float64 `json:"cache_mb,omitempty" yaml:"cache_mb,omitempty"`
	CacheSpeedup float64 `json:"cache_speedup,omitempty" yaml:"cache_speedup,omitempty"`
}

// MoECoeffs model one expert format's fused-MoE layer (FormulaMoE).
type MoECoeffs struct {
	// Efficiency is the expert GEMMs' fraction of the format's dense peak.
	Efficiency float64 `json:"efficiency" yaml:"efficiency"`
	// KHalf is the GEMM reduction depth (elements) at which efficiency
	// halves.
	KHalf float64 `json:"k_half" yaml:"k_half"`
	// BandwidthEfficiency is the fraction of peak HBM bandwidth of the
	// weight and activation streams.
	BandwidthEfficiency float64 `json:"bandwidth_efficiency" yaml:"bandwidth_efficiency"`
	// OverheadUS is the fixed time per layer (µs): routing sort, the
	// kernels' launches and tails.
	OverheadUS float64 `json:"overhead_us" yaml:"overhead_us"`
	// BlockTokens is the row block each expert's tokens are padded to
	// (tokens).
	BlockTokens float64 `json:"block_tokens" yaml:"block_tokens"`
}

// AttentionCoeffs model the attention kernels per KV-cache type ("bf16",
// "fp8"): prefill (FlashAttention/FlashInfer over causal chunks) and paged
// decode attention.
type AttentionCoeffs struct {
	Prefill map[string]PrefillCoeffs `json:"prefill" yaml:"prefill"`
	Decode  map[string]DecodeCoeffs  `json:"decode" yaml:"decode"`
}

// PrefillCoeffs model the prefill attention kernel
// (FormulaContextAttention).
type PrefillCoeffs struct {
	// TensorEfficiency is the QK and PV matmuls' rate as a fraction of the
	// 16-bit dense peak (above 1 when an fp8-KV kernel computes in fp8).
	TensorEfficiency float64 `json:"tensor_efficiency" yaml:"tensor_efficiency"`
	// ScoreRateT is the softmax rate (10¹² scores/s) of the work the
	// matmuls do not hide: 1/score_rate is added per score.
	ScoreRateT float64 `json:"score_rate_t" yaml:"score_rate_t"`
	// OverheadUS is the fixed time per call (µs).
	OverheadUS float64 `json:"overhead_us" yaml:"overhead_us"`
	// BlockUS is one thread block's fixed time on its SM (µs): loading
	// the query tile, the epilogue.
	BlockUS float64 `json:"block_us" yaml:"block_us"`
	// BandwidthEfficiency is the fraction of peak bandwidth of the query
	// and output traffic.
	BandwidthEfficiency float64 `json:"bandwidth_efficiency" yaml:"bandwidth_efficiency"`
	// TailSharpness combines the parallel time and the longest block's:
	// large (16) is their maximum (a longest-first scheduler,
	// FlashAttention 3), 1 their sum (blocks in order, the longest last).
	TailSharpness float64 `json:"tail_sharpness" yaml:"tail_sharpness"`
	// PackGQA says the query heads sharing a KV head fill one block's
	// rows together.
	PackGQA bool `json:"pack_gqa,omitempty" yaml:"pack_gqa,omitempty"`
}

// DecodeCoeffs model the paged decode attention kernel
// (FormulaDecodeAttention).
type DecodeCoeffs struct {
	// BandwidthEfficiency is the KV stream's fraction of peak bandwidth.
	BandwidthEfficiency float64 `json:"bandwidth_efficiency" yaml:"bandwidth_efficiency"`
	// OverheadUS is the fixed time per call (µs).
	OverheadUS float64 `json:"overhead_us" yaml:"overhead_us"`
	// BlockUS is one thread block's fixed time on its SM (µs).
	BlockUS float64 `json:"block_us" yaml:"block_us"`
	// BlockBandwidth is one block's streaming rate as a multiple of an
	// SM's share of the bandwidth (bandwidth/SMs): few long sequences are
	// bound by it.
	BlockBandwidth float64 `json:"block_bandwidth" yaml:"block_bandwidth"`
	// CombineUS is the split-KV combine kernel's time (µs).
	CombineUS float64 `json:"combine_us" yaml:"combine_us"`
	// SplitKV says the kernel splits long sequences' KV over idle SMs.
	SplitKV bool `json:"split_kv,omitempty" yaml:"split_kv,omitempty"`
	// CacheMB is the KV working set (MB) below which a benchmark's
	// repeated reads stay in L2 (0: never); CacheSpeedup is L2's rate over
	// HBM's then.
	CacheMB      float64 `json:"cache_mb,omitempty" yaml:"cache_mb,omitempty"`
	CacheSpeedup float64 `json:"cache_speedup,omitempty" yaml:"cache_speedup,omitempty"`
}

// prefill returns the prefill coefficients of a KV type (bf16's when the
// profile has none for it).
func (a *AttentionCoeffs) prefill(kv string) PrefillCoeffs {
	if c, ok := a.Prefill[kv]; ok {
		return c
	}
	if c, ok := a.Prefill["bf16"]; ok {
		return c
	}
	return basePrefill
}

// decode returns the decode coefficients of a KV type.
func (a *AttentionCoeffs) decode(kv string) DecodeCoeffs {
	if c, ok := a.Decode[kv]; ok {
		return c
	}
	if c, ok := a.Decode["bf16"]; ok {
		return c
	}
	return baseDecode
}

var (
	basePrefill = PrefillCoeffs{TensorEfficiency: 0.7, ScoreRateT: 5, OverheadUS: 8, BlockUS: 1, BandwidthEfficiency: 0.8, TailSharpness: 4, PackGQA: true}
	baseDecode  = DecodeCoeffs{BandwidthEfficiency: 0.8, OverheadUS: 7, BlockUS: 2, BlockBandwidth: 1, CombineUS: 2, SplitKV: true}
)

// ElementwiseCoeffs model the memory-bound kernels between the matmuls.
type ElementwiseCoeffs struct {
	BandwidthEfficiency float64 `json:"bandwidth_efficiency" yaml:"bandwidth_efficiency"`
	OverheadUS          float64 `json:"overhead_us" yaml:"overhead_us"`
}

// CommCoeffs model collectives over the scale-up link (FormulaAllReduce,
// FormulaNCCL). vLLM's custom all-reduce (one kernel over NVLink peer
// memory) serves tensor-parallel all-reduces up to its size limit; NCCL
// the rest and the expert-parallel all-gather and reduce-scatter.
type CommCoeffs struct {
	// CustomLatencyUS + CustomPerGPUUS·(gpus−2) is the custom kernel's
	// fixed time (µs); one more CustomLatencyUS for the two-shot barrier.
	CustomLatencyUS float64 `json:"custom_latency_us" yaml:"custom_latency_us"`
	CustomPerGPUUS  float64 `json:"custom_per_gpu_us" yaml:"custom_per_gpu_us"`
	// CustomLinkEfficiency is the custom kernel's fraction of the one-way
	// link rate.
	CustomLinkEfficiency float64 `json:"custom_link_efficiency" yaml:"custom_link_efficiency"`
	// CustomTwoShotBytes is the message size (bytes per rank) from which
	// the custom kernel runs two-shot (0: always one-shot).
	CustomTwoShotBytes      float64 `json:"custom_two_shot_bytes,omitempty" yaml:"custom_two_shot_bytes,omitempty"`
	CustomAllReduceMaxBytes float64 `json:"custom_all_reduce_max_bytes" yaml:"custom_all_reduce_max_bytes"`
	// CustomMaxBytesByGPUs overrides the size limit per GPU count: vLLM's
	// limits of its custom and symmetric-memory all-reduce kernels depend
	// on the world size.
	CustomMaxBytesByGPUs map[int]float64 `json:"custom_max_bytes_by_gpus,omitempty" yaml:"custom_max_bytes_by_gpus,omitempty"`
	// NCCLLatencyUS + NCCLPerGPUUS·(gpus−2) is an all-gather's or
	// reduce-scatter's fixed time (µs); NCCLAllReduceLatencyUS replaces
	// the first term for all-reduce.
	NCCLLatencyUS          float64 `json:"nccl_latency_us" yaml:"nccl_latency_us"`
	NCCLAllReduceLatencyUS float64 `json:"nccl_all_reduce_latency_us,omitempty" yaml:"nccl_all_reduce_latency_us,omitempty"`
	NCCLPerGPUUS           float64 `json:"nccl_per_gpu_us" yaml:"nccl_per_gpu_us"`
	// NCCLLinkEfficiency and NCCLAllReduceEfficiency are the Simple
	// protocol's fraction of the one-way link rate (of the ring's bus
	// traffic, so NVLink SHARP's in-switch reduction may exceed 1).
	NCCLLinkEfficiency      float64 `json:"nccl_link_efficiency" yaml:"nccl_link_efficiency"`
	NCCLAllReduceEfficiency float64 `json:"nccl_all_reduce_efficiency,omitempty" yaml:"nccl_all_reduce_efficiency,omitempty"`
	// NCCLLLEfficiency is the LL (low-latency) protocol's fraction of the
	// link rate; NCCLSimpleExtraUS the Simple protocol's extra fixed time
	// (µs). NCCL takes the faster.
	NCCLLLEfficiency  float64 `json:"nccl_ll_efficiency,omitempty" yaml:"nccl_ll_efficiency,omitempty"`
	NCCLSimpleExtraUS float64 `json:"nccl_simple_extra_us,omitempty" yaml:"nccl_simple_extra_us,omitempty"`
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

// FrontendCoeffs are the costs of a request's path outside the engine
// (vllm-request-path.md, vllm-frontend-timing.md): the client's send and
// receive paths and, in a closed loop, its turnaround; the API server's
// event loop per request (HTTP parsing, validation, chat template, input
// processing, the hand-off to the engine), per engine step (decoding its
// output message) and per output token (incremental detokenisation, the
// streamed event's JSON and its socket write); and the tokenizer thread
// per prompt token, fed in micro-batches.
//
// The per-request times are medians of lognormal distributions: a
// request's time is median·exp(sigma·z), z standard normal and drawn per
// request, so two requests sent together do not take the same path to
// the engine. A sigma of 0 makes that time a constant.
type FrontendCoeffs struct {
	// ClientUS is the client's send path, from its send timestamp to the
	// request reaching the API server's event loop: building the request,
	// opening the connection, the network one way and the HTTP server's
	// accept (the round trip of network_rtt_ms comes on top).
	ClientUS float64 `json:"client_us" yaml:"client_us"`
	// ClientReceiveUS is the client's receive path, from the API server's
	// socket write of an event to the client's timestamp of it; one draw
	// per request.
	ClientReceiveUS float64 `json:"client_receive_us,omitempty" yaml:"client_receive_us,omitempty"`
	// TurnaroundUS is a closed-loop client's time from receiving a
	// request's last event to sending the user's next request (the
	// benchmark tool's bookkeeping and the next task's wake-up); it is not
	// part of any latency the client reports.
	TurnaroundUS float64 `json:"turnaround_us,omitempty" yaml:"turnaround_us,omitempty"`
	// ClientSigma is the log-spread of the three client times.
	ClientSigma float64 `json:"client_sigma,omitempty" yaml:"client_sigma,omitempty"`
	// RequestUS is the API server's event-loop time per request.
	RequestUS float64 `json:"request_us" yaml:"request_us"`
	// RequestSigma is its log-spread.
	RequestSigma float64 `json:"request_sigma,omitempty" yaml:"request_sigma,omitempty"`
	// PerPromptTokenUS is the tokenizer thread's time per prompt token.
	PerPromptTokenUS float64 `json:"per_prompt_token_us" yaml:"per_prompt_token_us"`
	// TokenizerWindowUS is how long the tokenizer thread collects prompts
	// into one batch after the first one arrives (vLLM's
	// AsyncMicrobatchTokenizer: 2 ms, up to TokenizerBatch prompts);
	// the batch is encoded in one call and its prompts reach the engine
	// together. 0: every prompt is encoded as it comes.
	TokenizerWindowUS float64 `json:"tokenizer_window_us,omitempty" yaml:"tokenizer_window_us,omitempty"`
	// TokenizerBatch is the most prompts one batch takes (0: 32).
	TokenizerBatch int     `json:"tokenizer_batch,omitempty" yaml:"tokenizer_batch,omitempty"`
	PerStepUS      float64 `json:"per_step_us" yaml:"per_step_us"`
	// PerOutputTokenUS is the event loop's time per streamed token.
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
	// No MoE measurement: the dense GEMM's efficiencies, a 64-row block.
	g := p.gemmCoeffs(format)
	return MoECoeffs{Efficiency: g.Efficiency, KHalf: 128, BandwidthEfficiency: g.BandwidthEfficiency, OverheadUS: 8 * g.OverheadUS, BlockTokens: 64}
}

// EagerFloorUS is the least time (µs) one eagerly launched call of a
// format's GEMM takes: the format's measured floor, else the profile's
// per-kernel launch time.
func (p *Profile) EagerFloorUS(format string) float64 {
	if c := p.gemmCoeffs(format); c.EagerFloorUS > 0 {
		return c.EagerFloorUS
	}
	return p.EagerLaunchUS
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
			rangeCheck{pre + "quant_bandwidth_efficiency", c.QuantBandwidthEfficiency, 0, 16, false}, usec(pre+"unaligned_us", c.UnalignedUS),
			rangeCheck{pre + "wave_tile_n", c.WaveTileN, 0, 1 << 12, false}, usec(pre+"eager_floor_us", c.EagerFloorUS),
			rangeCheck{pre + "cache_mb", c.CacheMB, 0, 1 << 20, false}, rangeCheck{pre + "cache_speedup", c.CacheSpeedup, 0, 100, false})
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
			rangeCheck{pre + "k_half", c.KHalf, 0, 1 << 20, false}, usec(pre+"overhead_us", c.OverheadUS),
			rangeCheck{pre + "block_tokens", c.BlockTokens, 0, 1 << 12, false})
	}
	for _, kv := range sortedKeysOf(p.Attention.Prefill) {
		c := p.Attention.Prefill[kv]
		pre := "attention.prefill." + kv + "."
		checks = append(checks, rangeCheck{pre + "tensor_efficiency", c.TensorEfficiency, 0, 4, true},
			rangeCheck{pre + "score_rate_t", c.ScoreRateT, 0, 1e6, false}, usec(pre+"overhead_us", c.OverheadUS), usec(pre+"block_us", c.BlockUS),
			frac(pre+"bandwidth_efficiency", c.BandwidthEfficiency), rangeCheck{pre + "tail_sharpness", c.TailSharpness, 0, 64, false})
	}
	for _, kv := range sortedKeysOf(p.Attention.Decode) {
		c := p.Attention.Decode[kv]
		pre := "attention.decode." + kv + "."
		checks = append(checks, frac(pre+"bandwidth_efficiency", c.BandwidthEfficiency), usec(pre+"overhead_us", c.OverheadUS),
			usec(pre+"block_us", c.BlockUS), rangeCheck{pre + "block_bandwidth", c.BlockBandwidth, 0, 1 << 12, false},
			usec(pre+"combine_us", c.CombineUS), rangeCheck{pre + "cache_mb", c.CacheMB, 0, 1 << 20, false},
			rangeCheck{pre + "cache_speedup", c.CacheSpeedup, 0, 100, false})
	}
	e, cm, cpu, s := p.Elementwise, p.Comm, p.CPU, p.Scale
	checks = append(checks,
		frac("elementwise.bandwidth_efficiency", e.BandwidthEfficiency), usec("elementwise.overhead_us", e.OverheadUS),
		usec("comm.custom_latency_us", cm.CustomLatencyUS), usec("comm.custom_per_gpu_us", cm.CustomPerGPUUS),
		rangeCheck{"comm.custom_link_efficiency", cm.CustomLinkEfficiency, 0, 4, false},
		rangeCheck{"comm.custom_all_reduce_max_bytes", cm.CustomAllReduceMaxBytes, 0, 1 << 40, false},
		rangeCheck{"comm.custom_two_shot_bytes", cm.CustomTwoShotBytes, 0, 1 << 40, false},
		usec("comm.nccl_latency_us", cm.NCCLLatencyUS), usec("comm.nccl_per_gpu_us", cm.NCCLPerGPUUS),
		usec("comm.nccl_all_reduce_latency_us", cm.NCCLAllReduceLatencyUS), usec("comm.nccl_simple_extra_us", cm.NCCLSimpleExtraUS),
		rangeCheck{"comm.nccl_link_efficiency", cm.NCCLLinkEfficiency, 0, 4, true},
		rangeCheck{"comm.nccl_all_reduce_efficiency", cm.NCCLAllReduceEfficiency, 0, 4, false},
		rangeCheck{"comm.nccl_ll_efficiency", cm.NCCLLLEfficiency, 0, 4, false},
		usec("eager_launch_us", p.EagerLaunchUS),
		usec("cpu.step_overhead_us", cpu.StepOverheadUS), usec("cpu.per_seq_overhead_us", cpu.PerSeqOverheadUS),
		usec("cpu.per_prefill_overhead_us", cpu.PerPrefillOverheadUS), rangeCheck{"cpu.async_overlap", cpu.AsyncOverlap, 0, 1, false},
		usec("cpu_v0.step_overhead_us", p.CPUV0.StepOverheadUS), usec("cpu_v0.per_seq_overhead_us", p.CPUV0.PerSeqOverheadUS),
		usec("cpu_v0.per_prefill_overhead_us", p.CPUV0.PerPrefillOverheadUS), rangeCheck{"cpu_v0.async_overlap", p.CPUV0.AsyncOverlap, 0, 1, false},
		usec("frontend.client_us", p.Frontend.ClientUS), usec("frontend.request_us", p.Frontend.RequestUS), usec("frontend.per_prompt_token_us", p.Frontend.PerPromptTokenUS),
		usec("frontend.per_step_us", p.Frontend.PerStepUS), usec("frontend.per_output_token_us", p.Frontend.PerOutputTokenUS),
		usec("frontend.client_receive_us", p.Frontend.ClientReceiveUS), usec("frontend.turnaround_us", p.Frontend.TurnaroundUS),
		usec("frontend.tokenizer_window_us", p.Frontend.TokenizerWindowUS),
		rangeCheck{"frontend.client_sigma", p.Frontend.ClientSigma, 0, 2, false},
		rangeCheck{"frontend.request_sigma", p.Frontend.RequestSigma, 0, 2, false},
		rangeCheck{"frontend.tokenizer_batch", float64(p.Frontend.TokenizerBatch), 0, 4096, false},
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
	q.Attention.Prefill = make(map[string]PrefillCoeffs, len(p.Attention.Prefill))
	for k, v := range p.Attention.Prefill {
		q.Attention.Prefill[k] = v
	}
	q.Attention.Decode = make(map[string]DecodeCoeffs, len(p.Attention.Decode))
	for k, v := range p.Attention.Decode {
		q.Attention.Decode[k] = v
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
//   - CPU and Frontend: the host costs (HostCosts), fitted to measured
//     serving runs rather than kernel tables.
func BaseProfile() Profile {
	h := HostCosts()
	return Profile{
		SchemaVersion: ProfileSchemaVersion,
		Source:        "base",
		GEMM: map[string]GEMMCoeffs{FormatBF16: {Efficiency: 0.75, HalfTokens: 64, BandwidthEfficiency: 0.82,
			OverheadUS: 3, Sharpness: 3, TileTokens: 1}},
		MoE: map[string]MoECoeffs{},
		Attention: AttentionCoeffs{Prefill: map[string]PrefillCoeffs{"bf16": basePrefill},
			Decode: map[string]DecodeCoeffs{"bf16": baseDecode}},
		Elementwise: ElementwiseCoeffs{BandwidthEfficiency: 0.664, OverheadUS: 1.5},
		Comm: CommCoeffs{CustomLatencyUS: 5, CustomPerGPUUS: 0.5, CustomLinkEfficiency: 0.5, CustomAllReduceMaxBytes: 8 << 20,
			NCCLLatencyUS: 10, NCCLPerGPUUS: 2, NCCLLinkEfficiency: 0.7, NCCLAllReduceLatencyUS: 12, NCCLAllReduceEfficiency: 0.7,
			NCCLLLEfficiency: 0.25, NCCLSimpleExtraUS: 15},
		EagerLaunchUS: 4.8,
		CPU:           h.CPU,
		CPUV0:         h.CPUV0,
		Frontend:      h.Frontend,
	}
}

func sortedKeysOf[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
