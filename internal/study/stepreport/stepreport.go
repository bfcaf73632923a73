package stepreport

import (
	"fmt"
	"math"
	"slices"

	"github.com/headroom-sim/headroom/internal/study/scenario"
	"github.com/headroom-sim/headroom/models"
	"github.com/headroom-sim/headroom/sim"
	"github.com/headroom-sim/headroom/sim/engine"
	"github.com/headroom-sim/headroom/sim/steptime"
)

// Request is a step to explain: the scenario's model, GPU, layout,
// precision, engine settings, calibration and step-time backend (its
// workload and SLA are not read), the batch, and optionally an explicit
// split of the routed experts.
type Request struct {
	Scenario scenario.Scenario
	Batch    Batch
	// MoETP × MoEEP split a MoE model's routed experts over the replica's
	// tp × dp GPUs: MoETP slices of every expert, whole experts over MoEEP
	// groups (vLLM's moe_tp_size × moe_ep_size). 0 and 0: the scenario's
	// split (expert_parallel, or every expert sliced); one of them alone:
	// the other is tp × dp divided by it.
	MoETP, MoEEP int
}

// Report explains one step. Times are of one engine rank; with data
// parallelism every rank is taken to run the same batch.
type Report struct {
	Model string `json:"model"`
	GPU   string `json:"gpu"`
	TP    int    `json:"tp"`
	DP    int    `json:"dp"`
	// GPUs is tp × dp, the replica's GPUs.
	GPUs int `json:"gpus"`
	// Experts is the routed experts' layout (MoE models only).
	Experts   *Experts         `json:"experts,omitempty"`
	Precision models.Precision `json:"precision"`
	// KernelFormats are the GEMM and fused-MoE kernel formats the step runs
	// (bf16, fp8, fp8_block, nvfp4, int4_wo, mxfp4).
	KernelFormats []string  `json:"kernel_formats"`
	Attention     Attention `json:"attention"`
	// Backend is table (measured kernels where the table covers a shape)
	// or formula.
	Backend string `json:"backend"`
	// KernelDB is the kernel database the table backend reads.
	KernelDB *KernelDB `json:"kernel_db,omitempty"`
	// ProfileSource says where the formula's coefficients come from.
	ProfileSource string    `json:"profile_source"`
	Engine        Engine    `json:"engine"`
	Batch         BatchInfo `json:"batch"`
	// Kernels lists every kernel of the step, in the order of the pass.
	Kernels []Kernel `json:"kernels"`
	// Ops sums the kernels by op kind.
	Ops []Op `json:"ops"`
	// Bounds splits the step's wall time by what limits it; launch/cpu
	// includes the engine's CPU time that is not hidden behind the GPU.
	// They sum to step_ms.
	Bounds []BoundTime `json:"bounds"`
	// GPUMS is the kernels' time, CPUMS the engine's host time for the
	// step, CPUHiddenMS the part of it async scheduling overlaps with the
	// GPU, StepMS the step's wall time: gpu_ms + cpu_ms − cpu_hidden_ms.
	GPUMS       float64 `json:"gpu_ms"`
	CPUMS       float64 `json:"cpu_ms"`
	CPUHiddenMS float64 `json:"cpu_hidden_ms"`
	StepMS      float64 `json:"step_ms"`
	// FrontendMS is the API server's time to stream the step's output
	// tokens (every data-parallel rank's: they share one API server), on
	// its own thread beside the engine; OutputTokens is those tokens (with
	// speculative decoding, at the assumed acceptance).
	FrontendMS   float64 `json:"frontend_ms"`
	OutputTokens float64 `json:"output_tokens"`
	// TokensPerS is the token rows one rank runs per second at this step
	// time, OutputTokensPerS the tokens it samples; ReplicaTokensPerS and
	// ReplicaOutputTokensPerS are the replica's (dp ranks), when dp > 1.
	TokensPerS              float64 `json:"tokens_per_s"`
	OutputTokensPerS        float64 `json:"output_tokens_per_s"`
	ReplicaTokensPerS       float64 `json:"replica_tokens_per_s,omitempty"`
	ReplicaOutputTokensPerS float64 `json:"replica_output_tokens_per_s,omitempty"`
	// TPOTMS is the time per output token a pure decode batch implies: the
	// step time (with speculative decoding, over the tokens a verification
	// yields at the assumed acceptance), or the API server's time when it
	// is the longer (absent when the batch prefills).
	TPOTMS *float64 `json:"tpot_ms,omitempty"`
	// Speculative is the speculative terms of the step, when the
	// scenario turns speculative decoding on: the kernels above are then
	// the target's verification (1 + K query tokens per decoding
	// sequence), and step_ms includes these terms.
	Speculative *Speculative `json:"speculative,omitempty"`
	// Notes say what the reader should know to read the figures.
	Notes []string `json:"notes"`
}

// Speculative is what speculative decoding adds to the target's pass,
// priced as the simulator prices it (sim.SpecStepCost).
type Speculative struct {
	Method               string `json:"method"`
	NumSpeculativeTokens int    `json:"num_speculative_tokens"`
	// DraftPositions is the drafts the target verifies this step;
	// DraftingSeqs the requests the proposer drafts for.
	DraftPositions int `json:"draft_positions"`
	DraftingSeqs   int `json:"drafting_seqs"`
	// RejectionSamplerUS is the rejection sampler's GPU time over the
	// draft positions.
	RejectionSamplerUS float64 `json:"rejection_sampler_us"`
	// DraftGPUUS is the drafter's K passes on the GPU, FirstPassUS the
	// first of them (over FirstPassTokens rows: every token the target
	// ran); NgramUS the n-gram proposer's CPU scan instead.
	DraftGPUUS      float64 `json:"draft_gpu_us"`
	FirstPassUS     float64 `json:"first_pass_us"`
	FirstPassTokens int     `json:"first_pass_tokens"`
	NgramUS         float64 `json:"ngram_us,omitempty"`
	// ProposerHostSetupUS and ProposerHostPassesUS are the proposer's
	// host time: once per step, and its K passes together.
	ProposerHostSetupUS  float64 `json:"proposer_host_setup_us"`
	ProposerHostPassesUS float64 `json:"proposer_host_passes_us"`
	// ProposerUS is the proposer's time in the step: the set-up plus the
	// longer of the passes' host and GPU times (they are launched back to
	// back); ProposerBound says which.
	ProposerUS    float64 `json:"proposer_us"`
	ProposerBound string  `json:"proposer_bound"`
	// AddedUS is what the step adds to the target's pass:
	// rejection_sampler_us + proposer_us.
	AddedUS float64 `json:"added_us"`
	// MeanAcceptanceLength is the tokens one verification yields at the
	// scenario's acceptance (1 + the per-position rates), and
	// AcceptanceSource where that acceptance comes from.
	MeanAcceptanceLength float64 `json:"mean_acceptance_length"`
	AcceptanceSource     string  `json:"acceptance_source"`
}

// Experts is a MoE model's routed-expert layout.
type Experts struct {
	Routed        int    `json:"routed"`
	TopK          int    `json:"top_k"`
	MoETP         int    `json:"moe_tp"`
	MoEEP         int    `json:"moe_ep"`
	PerGPU        int    `json:"per_gpu"`
	Routing       string `json:"routing"`
	ExpertsFormat string `json:"format"`
	// ActiveExperts is how many of one GPU's experts the step's tokens
	// reach in a layer under the routing (the expected draw; for expert
	// parallelism the rank timed), RoutedPairs the token-expert pairs they
	// serve, and ActiveWeightBytes the weights those experts stream: per
	// layer, one GPU.
	ActiveExperts     float64 `json:"active_experts"`
	RoutedPairs       float64 `json:"routed_pairs"`
	ActiveWeightBytes float64 `json:"active_weight_bytes_per_layer"`
	// Layers is the MoE layers of a pass.
	Layers int `json:"moe_layers"`
}

// Attention is the attention kernels' per-GPU geometry.
type Attention struct {
	HeadsPerGPU   int  `json:"heads_per_gpu"`
	KVHeadsPerGPU int  `json:"kv_heads_per_gpu"`
	HeadDim       int  `json:"head_dim"`
	FullLayers    int  `json:"full_layers"`
	SlidingLayers int  `json:"sliding_layers"`
	WindowTokens  int  `json:"window_tokens,omitempty"`
	MLA           bool `json:"mla"`
}

// KernelDB names a kernel database.
type KernelDB struct {
	System string `json:"system"`
	Source string `json:"source"`
}

// Engine is the engine settings the step depends on.
type Engine struct {
	MaxNumSeqs          int `json:"max_num_seqs"`
	MaxNumBatchedTokens int `json:"max_num_batched_tokens"`
	MaxModelLen         int `json:"max_model_len"`
	BlockSize           int `json:"block_size"`
	NumGPUBlocks        int `json:"num_gpu_blocks"`
	// CUDAGraphMaxTokens is vLLM's largest captured batch; CUDAGraph says
	// whether this step replays a graph (else every kernel is launched
	// from the host).
	CUDAGraphMaxTokens int  `json:"cuda_graph_max_tokens"`
	CUDAGraph          bool `json:"cuda_graph"`
	AsyncScheduling    bool `json:"async_scheduling"`
	// AsyncOverlapRatio is the share of the CPU time async scheduling
	// hides (at most the GPU time).
	AsyncOverlapRatio float64 `json:"async_overlap_ratio"`
}

// BatchInfo is the batch as explained.
type BatchInfo struct {
	DecodeSeqs           int  `json:"decode_seqs"`
	KVLen                int  `json:"kv_len"`
	PrefillTokens        int  `json:"prefill_tokens"`
	PrefillContextTokens int  `json:"prefill_context_tokens"`
	PrefillChunks        int  `json:"prefill_chunks"`
	PrefillCompletes     bool `json:"prefill_completes"`
	// Tokens is the token rows the step runs, Sampled the tokens it
	// samples.
	Tokens  int `json:"tokens"`
	Sampled int `json:"sampled"`
	// MoEGroupTokens is the token rows every MoE layer runs: every
	// data-parallel rank's.
	MoEGroupTokens int `json:"moe_group_tokens,omitempty"`
	// KVBlocks is the KV blocks the batch's sequences hold.
	KVBlocks int `json:"kv_blocks"`
}

// Kernel is one kernel of the step, every call of it in the pass summed.
type Kernel struct {
	Op    string `json:"op"`
	Name  string `json:"name"`
	Calls int    `json:"calls"`
	// Shape describes one call.
	Shape string `json:"shape"`
	// TimeUS is all calls' time, PerCallUS one call's.
	TimeUS     float64 `json:"time_us"`
	PerCallUS  float64 `json:"per_call_us"`
	ShareRatio float64 `json:"share_ratio"`
	Bound      string  `json:"bound"`
	Source     string  `json:"source"`
	// MeasuredUS is one call's latency as the kernel table measured this
	// exact shape (absent when it holds no such row); per_call_us differs
	// from it only by a calibration's scales or the host launch floor of an
	// eager step.
	MeasuredUS *float64 `json:"measured_us,omitempty"`
}

// Op is the time of one op kind.
type Op struct {
	Op         string  `json:"op"`
	TimeUS     float64 `json:"time_us"`
	ShareRatio float64 `json:"share_ratio"`
	// Bound is what limits most of the op's time.
	Bound string `json:"bound"`
}

// BoundTime is the step time one bound limits.
type BoundTime struct {
	Bound      string  `json:"bound"`
	TimeUS     float64 `json:"time_us"`
	ShareRatio float64 `json:"share_ratio"`
}

// Explain resolves the request's scenario in env as a simulation would and
// explains the batch's step. Errors are the scenario's (see
// scenario.Resolve) or *hardware.FieldError naming a batch field
// (Field* constants) or moe_tp/moe_ep.
func Explain(req Request, env scenario.Env) (*Report, error) {
	b := req.Batch
	if err := b.validate(); err != nil {
		return nil, err
	}
	sc := req.Scenario
	// Only the serving configuration matters: the default workload stands
	// in for the scenario's, so no trace or length file is read.
	sc.Workload, sc.SLA = scenario.Default().Workload, nil
	res, err := sc.Resolve(env)
	if err != nil {
		return nil, err
	}
	cfg := res.Config
	if err := applySplit(&cfg, &sc, req.MoETP, req.MoEEP); err != nil {
		return nil, err
	}
	if err := b.check(&cfg); err != nil {
		return nil, err
	}
	sm, err := cfg.StepModel()
	if err != nil {
		return nil, fmt.Errorf("step-time profile: %w", err)
	}
	mb := b.batch(cfg.Model.SlidingWindow)
	var spec *sim.SpecStepCost
	if cfg.Speculative != nil {
		sb := b.specBatch()
		mb = cfg.TargetBatch(sb)
		c, err := cfg.SpeculativeStepCost(sm, sb)
		if err != nil {
			return nil, fmt.Errorf("speculative decoding: %w", err)
		}
		spec = &c
	}
	return assemble(&cfg, sm, &b, &mb, spec), nil
}

// applySplit sets an explicit (moe_tp, moe_ep) split of the experts.
func applySplit(cfg *sim.Config, sc *scenario.Scenario, moeTP, moeEP int) error {
	if moeTP == 0 && moeEP == 0 {
		return nil
	}
	field := FieldMoEEP
	if moeEP == 0 {
		field = FieldMoETP
	}
	gpus := cfg.TP * max(cfg.DP, 1)
	switch {
	case moeTP < 0 || moeEP < 0:
		return fieldErr(field, "must be >= 1")
	case cfg.Model.MoE == nil:
		return fieldErr(field, "%s has no routed experts", cfg.Model.ID)
	case sc.ExpertParallel:
		return fieldErr(field, "give expert_parallel (experts over all tp × dp GPUs) or moe_tp × moe_ep, not both")
	case moeTP == 0:
		if gpus%moeEP != 0 {
			return fieldErr(field, "%d does not divide tp × dp = %d GPUs", moeEP, gpus)
		}
		moeTP = gpus / moeEP
	case moeEP == 0:
		if gpus%moeTP != 0 {
			return fieldErr(field, "%d does not divide tp × dp = %d GPUs", moeTP, gpus)
		}
		moeEP = gpus / moeTP
	}
	if moeTP*moeEP != gpus {
		return fieldErr(field, "moe_tp %d × moe_ep %d must equal tp × dp = %d GPUs", moeTP, moeEP, gpus)
	}
	if n := cfg.Model.MoE.NumExperts; n%moeEP != 0 {
		return fieldErr(FieldMoEEP, "%d experts do not split evenly over moe_ep %d", n, moeEP)
	}
	cfg.MoETP, cfg.MoEEP = moeTP, moeEP
	return nil
}

// assemble prices the step and lays the report out.
func assemble(cfg *sim.Config, sm *steptime.Model, b *Batch, mb *models.Batch, spec *sim.SpecStepCost) *Report {
	m, prof := cfg.Model, sm.Profile()
	shapes := sm.Shapes()
	dp := max(cfg.DP, 1)
	graph := cfg.CUDAGraphTokens()
	r := &Report{
		Model: m.ID, GPU: cfg.GPU.ID, TP: cfg.TP, DP: dp, GPUs: cfg.TP * dp,
		Precision: cfg.Precision, Backend: sm.Backend(), ProfileSource: prof.Source,
		Attention: Attention{HeadsPerGPU: shapes.Attn.Heads, KVHeadsPerGPU: shapes.Attn.KVHeads, HeadDim: shapes.Attn.HeadDim,
			FullLayers: shapes.Attn.FullLayers, SlidingLayers: shapes.Attn.SlidingLayers, MLA: shapes.Attn.MLA},
		Engine: Engine{MaxNumSeqs: cfg.Engine.MaxNumSeqs, MaxNumBatchedTokens: cfg.Engine.MaxNumBatchedTokens,
			MaxModelLen: cfg.Engine.MaxModelLen, BlockSize: cfg.Engine.BlockSize, NumGPUBlocks: cfg.NumGPUBlocks,
			CUDAGraphMaxTokens: graph, CUDAGraph: mb.Tokens() <= graph,
			AsyncScheduling: cfg.Engine.AsyncScheduling, AsyncOverlapRatio: prof.CPU.AsyncOverlap},
		Batch: BatchInfo{DecodeSeqs: b.DecodeSeqs, KVLen: b.KVLen, PrefillTokens: b.PrefillTokens,
			PrefillContextTokens: b.PrefillContextTokens, PrefillChunks: b.chunks(), PrefillCompletes: b.chunks() > 0 && !b.PrefillPartial,
			Tokens: mb.Tokens(), Sampled: mb.Sampled, KVBlocks: b.kvBlocks(cfg)},
		Notes: []string{},
	}
	if shapes.Attn.SlidingLayers > 0 {
		r.Attention.WindowTokens = shapes.Attn.Window
	}
	if !cfg.Engine.AsyncScheduling {
		r.Engine.AsyncOverlapRatio = 0
	}
	for _, g := range shapes.GEMMs {
		if !slices.Contains(r.KernelFormats, g.Format) {
			r.KernelFormats = append(r.KernelFormats, g.Format)
		}
	}
	if ms := shapes.MoE; ms != nil {
		if !slices.Contains(r.KernelFormats, ms.Format) {
			r.KernelFormats = append(r.KernelFormats, ms.Format)
		}
		routing := cfg.MoERouting
		if routing == "" {
			routing = steptime.RoutingPowerLaw
		}
		r.Experts = &Experts{Routed: ms.Experts, TopK: ms.TopK, MoETP: ms.TP, MoEEP: ms.EP, PerGPU: ms.Experts / max(ms.EP, 1),
			Routing: routing, ExpertsFormat: ms.Format, Layers: ms.Layers}
		if _, w, ok := sm.MoEStep(mb); ok {
			r.Experts.ActiveExperts, r.Experts.RoutedPairs, r.Experts.ActiveWeightBytes = round(w.ExpertsTouched, 1), w.Pairs, math.Round(w.WeightBytes)
		}
		r.Batch.MoEGroupTokens = mb.Tokens() * dp
	}
	if db := cfg.KernelDB; db != nil {
		r.KernelDB = &KernelDB{System: db.System, Source: db.Source}
	}

	bd := sm.Predict(mb)
	kernels := sm.Explain(mb)
	step := bd.Total
	tokensPerSeq := 1.0
	if spec != nil {
		step += spec.Total()
		r.Speculative = specReport(cfg.Speculative, spec)
		tokensPerSeq = r.Speculative.MeanAcceptanceLength
	}
	share := func(sec float64) float64 { return round(sec/step, 4) }
	var ops [models.NumOpKinds]float64
	var opBound [models.NumOpKinds]map[steptime.Bound]float64
	bounds := map[steptime.Bound]float64{}
	for _, k := range kernels {
		row := Kernel{Op: k.Op.String(), Name: k.Name, Calls: k.Count, Shape: k.Shape,
			TimeUS: us(k.Sec), PerCallUS: us(k.Sec / float64(max(k.Count, 1))), ShareRatio: share(k.Sec),
			Bound: string(k.Bound), Source: k.Source}
		if k.MeasuredSec > 0 {
			v := us(k.MeasuredSec)
			row.MeasuredUS = &v
		}
		r.Kernels = append(r.Kernels, row)
		ops[k.Op] += k.Sec
		if opBound[k.Op] == nil {
			opBound[k.Op] = map[steptime.Bound]float64{}
		}
		opBound[k.Op][k.Bound] += k.Sec
		bounds[k.Bound] += k.Sec
	}
	hidden := bd.GPU + bd.CPU - bd.Total
	bounds[steptime.BoundOverhead] += bd.CPU - hidden
	if spec != nil {
		// The rejection sampler and the draft passes stream memory; the
		// proposer's host time beyond its passes' GPU time is the host's.
		bounds[steptime.BoundMemory] += spec.RejectionSampler + min(spec.DraftGPU, spec.Proposer)
		bounds[steptime.BoundOverhead] += spec.Proposer - min(spec.DraftGPU, spec.Proposer)
	}
	for op, sec := range ops {
		if sec > 0 {
			r.Ops = append(r.Ops, Op{Op: models.OpKind(op).String(), TimeUS: us(sec), ShareRatio: share(sec), Bound: string(top(opBound[op]))})
		}
	}
	for _, bnd := range []steptime.Bound{steptime.BoundCompute, steptime.BoundMemory, steptime.BoundLink, steptime.BoundOverhead} {
		if sec := bounds[bnd]; sec > 0 {
			r.Bounds = append(r.Bounds, BoundTime{Bound: string(bnd), TimeUS: us(sec), ShareRatio: share(sec)})
		}
	}
	r.GPUMS, r.CPUMS, r.CPUHiddenMS, r.StepMS = ms(bd.GPU), ms(bd.CPU), ms(hidden), ms(step)
	scale := prof.Scale.Overhead
	if scale == 0 {
		scale = 1
	}
	// Output tokens: one per sampling sequence, a decoding sequence's
	// verification yielding the mean acceptance length with speculation.
	sampled := float64(b.DecodeSeqs)*tokensPerSeq + float64(mb.Sampled-b.DecodeSeqs-mb.SpecTokens)
	front := (prof.Frontend.PerStepUS + prof.Frontend.PerOutputTokenUS*sampled*float64(dp)) * 1e-6 * scale
	r.FrontendMS, r.OutputTokens = ms(front), round(sampled*float64(dp), 2)
	r.TokensPerS = round(float64(mb.Tokens())/step, 1)
	r.OutputTokensPerS = round(sampled/step, 1)
	if dp > 1 {
		r.ReplicaTokensPerS = round(float64(mb.Tokens()*dp)/step, 1)
		r.ReplicaOutputTokensPerS = round(sampled*float64(dp)/step, 1)
	}
	if b.chunks() == 0 {
		t := ms(math.Max(step, front) / tokensPerSeq)
		r.TPOTMS = &t
	}
	r.Notes = notes(r, cfg, sm, front > step)
	return r
}

// specReport lays out a step's speculative terms.
func specReport(sp *sim.Speculative, c *sim.SpecStepCost) *Speculative {
	bound := string(steptime.BoundMemory)
	switch {
	case sp.Drafter == nil:
		bound = "cpu"
	case c.HostPasses > c.DraftGPU:
		bound = string(steptime.BoundOverhead)
	}
	return &Speculative{Method: sp.Method, NumSpeculativeTokens: sp.K, DraftPositions: c.Drafts, DraftingSeqs: c.Drafting,
		RejectionSamplerUS: us(c.RejectionSampler), DraftGPUUS: us(c.DraftGPU), FirstPassUS: us(c.FirstPass), FirstPassTokens: c.FirstPassTokens,
		NgramUS: us(c.Ngram), ProposerHostSetupUS: us(c.HostSetup), ProposerHostPassesUS: us(c.HostPasses),
		ProposerUS: us(c.Proposer), ProposerBound: bound, AddedUS: us(c.Total()),
		MeanAcceptanceLength: round(sp.ProposalRate*(engine.MeanAcceptanceLength(sp.PerPosition)-1)+1, 4), AcceptanceSource: sp.AcceptanceSource}
}

// top is the bound with the most time (ties: the first of compute,
// memory, link, launch/cpu).
func top(m map[steptime.Bound]float64) steptime.Bound {
	var best steptime.Bound
	bestT := -1.0
	for _, b := range []steptime.Bound{steptime.BoundCompute, steptime.BoundMemory, steptime.BoundLink, steptime.BoundOverhead} {
		if t, ok := m[b]; ok && t > bestT {
			best, bestT = b, t
		}
	}
	return best
}

// notes are what a reader needs to read the figures right.
func notes(r *Report, cfg *sim.Config, sm *steptime.Model, frontendBound bool) []string {
	var out []string
	switch {
	case r.Backend == steptime.BackendFormula:
		out = append(out, "formula backend: every kernel time is the fitted formula's, and no measured value is set beside it (the table backend reads measured kernels where they cover a shape)")
	default:
		measured := 0
		for _, k := range r.Kernels {
			if k.MeasuredUS != nil {
				measured++
			}
		}
		out = append(out, fmt.Sprintf("table backend: %d of %d kernels at a shape the table measured; measured_us is one call's measured latency, unscaled", measured, len(r.Kernels)))
	}
	if !r.Engine.CUDAGraph {
		out = append(out, fmt.Sprintf("eager step: its %d tokens exceed the %d-token CUDA-graph capture size, so every kernel is launched from the host (at least %.1f µs a launch)",
			r.Batch.Tokens, r.Engine.CUDAGraphMaxTokens, sm.Profile().EagerLaunchUS))
	}
	if cfg.Model.MoE != nil && r.DP > 1 {
		out = append(out, fmt.Sprintf("data parallel: each of the %d ranks is taken to run this batch, so the MoE layers run %d token rows", r.DP, r.Batch.MoEGroupTokens))
	}
	if r.Attention.MLA {
		out = append(out, "multi-head latent attention is priced by the formula: the kernel tables' attention rows are MHA/GQA")
	}
	if r.TPOTMS != nil {
		if frontendBound {
			out = append(out, fmt.Sprintf("the API server's %.3f ms to stream the step's tokens exceeds the step: TPOT follows the API server", r.FrontendMS))
		} else if sp := r.Speculative; sp != nil {
			out = append(out, fmt.Sprintf("tpot_ms: each decoding sequence verifies %d drafts and receives %.2f tokens per step at the acceptance assumed (%s), so TPOT is the step time over %.2f", sp.NumSpeculativeTokens, sp.MeanAcceptanceLength, sp.AcceptanceSource, sp.MeanAcceptanceLength))
		} else {
			out = append(out, "tpot_ms: a pure decode batch gives every sequence one token per step, so TPOT is the step time")
		}
	}
	return out
}

func us(sec float64) float64 { return round(sec*1e6, 3) }
func ms(sec float64) float64 { return round(sec*1e3, 6) }

// round keeps d decimals (the figures are estimates; this keeps the
// output stable across platforms' last-bit differences).
func round(v float64, d int) float64 {
	p := math.Pow(10, float64(d))
	return math.Round(v*p) / p
}
