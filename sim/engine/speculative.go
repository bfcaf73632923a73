package engine

import (
	"fmt"
	"math"

	"github.com/headroom-sim/headroom/models"
)

// Speculative decoding methods: vLLM's --speculative-config method.
const (
	// SpecDraftModel: a smaller model of the same tokenizer drafts.
	SpecDraftModel = "draft_model"
	// SpecEAGLE: an EAGLE head (one decoder layer over the target's hidden
	// states and the token embeddings) drafts.
	SpecEAGLE = "eagle"
	// SpecEAGLE3: an EAGLE-3 head (fused low/mid/high target features, its
	// own draft vocabulary) drafts.
	SpecEAGLE3 = "eagle3"
	// SpecMTP: the model's own multi-token-prediction layers draft
	// (DeepSeek-V3 num_nextn_predict_layers).
	SpecMTP = "mtp"
	// SpecNgram: prompt lookup on the host CPU: the tokens that followed
	// the latest earlier occurrence of the sequence's last n-gram.
	SpecNgram = "ngram"
)

// MaxSpeculativeTokens bounds num_speculative_tokens.
const MaxSpeculativeTokens = 32

// Speculative is vLLM's --speculative-config: who proposes, how many
// tokens per step, and how often the target accepts them. A zero
// num_speculative_tokens turns speculation off (the run is the same as
// without the section).
type Speculative struct {
	Method               string `yaml:"method" json:"method"`
	NumSpeculativeTokens int    `yaml:"num_speculative_tokens" json:"num_speculative_tokens"`
	// DraftModel is the draft model's catalog id or Hugging Face id, for
	// method draft_model (EAGLE heads and MTP layers are derived from the
	// target).
	DraftModel string `yaml:"draft_model,omitempty" json:"draft_model,omitempty"`
	// Acceptance says how often drafts are accepted; nil takes the
	// method's default (DefaultAcceptance).
	Acceptance *Acceptance `yaml:"acceptance,omitempty" json:"acceptance,omitempty"`
}

// Acceptance is the acceptance model: per position, or one rate.
type Acceptance struct {
	// PerPosition[i] is the fraction of proposals whose draft i+1 is
	// accepted, as vLLM reports it (spec_decode_num_accepted_tokens_per_pos
	// ÷ num_drafts): non-increasing, since a draft counts only after every
	// draft before it was accepted. At least num_speculative_tokens
	// entries; later ones are ignored.
	PerPosition []float64 `yaml:"per_position,omitempty" json:"per_position,omitempty"`
	// Rate is the probability that a draft is accepted given that the one
	// before it was (Leviathan et al.'s α): draft i is accepted with
	// probability Rate^i.
	Rate *float64 `yaml:"rate,omitempty" json:"rate,omitempty"`
	// ProposalRate is the fraction of a request's steps in which the
	// n-gram proposer finds a match and proposes drafts (ngram only: the
	// other methods propose at every step).
	ProposalRate *float64 `yaml:"proposal_rate,omitempty" json:"proposal_rate,omitempty"`
	// Source says where the rates come from (a measured run, headroom
	// calibrate's fit); the report repeats it.
	Source string `yaml:"source,omitempty" json:"source,omitempty"`
}

// MaxAcceptanceSourceLen bounds acceptance.source.
const MaxAcceptanceSourceLen = 512

// On reports whether s turns speculation on.
func (s *Speculative) On() bool { return s != nil && s.NumSpeculativeTokens > 0 }

// UsesLookahead reports whether vLLM reserves KV slots for the next
// step's drafts beside the scheduled tokens (the scheduler's
// num_lookahead_tokens, set for the EAGLE-style proposers).
func (s *Speculative) UsesLookahead() bool {
	return s.Method == SpecEAGLE || s.Method == SpecEAGLE3 || s.Method == SpecMTP
}

// validate checks s against the target model m (nil: no model checks)
// and the scheduler; fields are named "speculative.…".
func (s *Speculative) validate(m *models.Model, scheduler string) error {
	k := s.NumSpeculativeTokens
	switch {
	case s.Method != SpecDraftModel && s.Method != SpecEAGLE && s.Method != SpecEAGLE3 && s.Method != SpecMTP && s.Method != SpecNgram:
		return &FieldError{Field: "speculative.method", Reason: fmt.Sprintf("%q is not draft_model, eagle, eagle3, mtp or ngram", s.Method)}
	case k < 0 || k > MaxSpeculativeTokens:
		return &FieldError{Field: "speculative.num_speculative_tokens", Reason: fmt.Sprintf("%d is not in [0, %d]", k, MaxSpeculativeTokens)}
	case s.Method == SpecDraftModel && s.DraftModel == "":
		return &FieldError{Field: "speculative.draft_model", Reason: "is required by method draft_model (the draft model's catalog id)"}
	case s.Method != SpecDraftModel && s.DraftModel != "":
		return &FieldError{Field: "speculative.draft_model", Reason: fmt.Sprintf("is only read by method draft_model (%s drafts from the target model itself)", s.Method)}
	case k > 0 && scheduler == SchedulerV0:
		return &FieldError{Field: "speculative", Reason: "needs scheduler v1 (vLLM's V0 engine, which ran speculative decoding differently, is removed)"}
	case k > 0 && s.Method == SpecMTP && m != nil && m.NumNextNPredictLayers == 0:
		return &FieldError{Field: "speculative.method", Reason: fmt.Sprintf("mtp runs the model's multi-token-prediction layers, and %s has none (num_nextn_predict_layers is 0)", m.ID)}
	}
	a := s.Acceptance
	if a == nil {
		return nil
	}
	if len(a.Source) > MaxAcceptanceSourceLen {
		return &FieldError{Field: "speculative.acceptance.source", Reason: fmt.Sprintf("is %d bytes, more than %d", len(a.Source), MaxAcceptanceSourceLen)}
	}
	if a.Source != "" && len(a.PerPosition) == 0 && a.Rate == nil {
		return &FieldError{Field: "speculative.acceptance.source", Reason: "names where rates come from, and none is given (per_position or rate)"}
	}
	if len(a.PerPosition) > 0 && a.Rate != nil {
		return &FieldError{Field: "speculative.acceptance", Reason: "give per_position or rate, not both"}
	}
	if a.Rate != nil && !(*a.Rate >= 0 && *a.Rate <= 1) {
		return &FieldError{Field: "speculative.acceptance.rate", Reason: fmt.Sprintf("%g is not in [0, 1]", *a.Rate)}
	}
	if n := len(a.PerPosition); n > 0 && n < k {
		return &FieldError{Field: "speculative.acceptance.per_position", Reason: fmt.Sprintf("gives %d rates for num_speculative_tokens %d", n, k)}
	}
	if len(a.PerPosition) > MaxSpeculativeTokens {
		return &FieldError{Field: "speculative.acceptance.per_position", Reason: fmt.Sprintf("gives %d rates, more than the %d positions there can be", len(a.PerPosition), MaxSpeculativeTokens)}
	}
	for i, p := range a.PerPosition {
		field := fmt.Sprintf("speculative.acceptance.per_position[%d]", i)
		if !(p >= 0 && p <= 1) {
			return &FieldError{Field: field, Reason: fmt.Sprintf("%g is not in [0, 1]", p)}
		}
		if i > 0 && p > a.PerPosition[i-1] {
			return &FieldError{Field: field, Reason: fmt.Sprintf("%g exceeds position %d's %g: a draft is accepted only after every draft before it", p, i, a.PerPosition[i-1])}
		}
	}
	if a.ProposalRate != nil {
		switch {
		case s.Method != SpecNgram:
			return &FieldError{Field: "speculative.acceptance.proposal_rate", Reason: fmt.Sprintf("is only for method ngram (%s proposes at every step)", s.Method)}
		case !(*a.ProposalRate >= 0 && *a.ProposalRate <= 1):
			return &FieldError{Field: "speculative.acceptance.proposal_rate", Reason: fmt.Sprintf("%g is not in [0, 1]", *a.ProposalRate)}
		}
	}
	return nil
}

// Resolved is the acceptance model a run uses.
type Resolved struct {
	// PerPosition[i] is the probability that a proposal's draft i+1 is
	// accepted (non-increasing), for i < num_speculative_tokens.
	PerPosition []float64
	// ProposalRate is the probability that a request's step has drafts.
	ProposalRate float64
	// Source says where the numbers come from; Extrapolated, when set,
	// says which positions go past the published measurements; Warning,
	// when set, that they are a published default measured on another
	// workload (naming its dataset).
	Source       string
	Extrapolated string
	Warning      string
}

// Resolve is the acceptance model of s (which must be on and valid): the
// user's, or the method's default.
func (s *Speculative) Resolve() Resolved {
	k := s.NumSpeculativeTokens
	out := Resolved{ProposalRate: 1}
	a := s.Acceptance
	if a != nil && a.ProposalRate != nil {
		out.ProposalRate = *a.ProposalRate
	}
	switch {
	case a != nil && len(a.PerPosition) > 0:
		out.PerPosition = append([]float64(nil), a.PerPosition[:k]...)
		out.Source = withSource("scenario (per_position)", a.Source)
		if s.Method == SpecNgram && a.ProposalRate == nil {
			out.ProposalRate = NgramAcceptance(k).ProposalRate
		}
		return out
	case a != nil && a.Rate != nil:
		out.PerPosition = Geometric(*a.Rate, k)
		out.Source = withSource("scenario (rate)", a.Source)
		if s.Method == SpecNgram && a.ProposalRate == nil {
			out.ProposalRate = NgramAcceptance(k).ProposalRate
		}
		return out
	}
	d := DefaultAcceptance(s.Method, k)
	out.PerPosition, out.Source, out.Extrapolated, out.Warning = d.PerPosition, d.Source, d.Extrapolated, d.Warning
	if a == nil || a.ProposalRate == nil {
		out.ProposalRate = d.ProposalRate
	}
	return out
}

// withSource appends the scenario's note on where its rates come from.
func withSource(kind, src string) string {
	if src == "" {
		return kind
	}
	return kind + ": " + src
}

// defaultWarning is the warning a published default carries: acceptance
// is the workload's, and the default was measured on dataset.
func defaultWarning(method, dataset string) string {
	return fmt.Sprintf("no acceptance given: %s's published default is used, measured on %s; acceptance depends on the prompts and the sampling (the shared vllm+eagle run, EAGLE-3 on synthetic prompts, accepted about 3%% of drafts where MT-bench accepts 80%%): give engine.speculative.acceptance from a run of this workload (headroom calibrate --fit acceptance)", method, dataset)
}

// Geometric is the per-position rates of one conditional rate: rate^i
// for i = 1…k.
func Geometric(rate float64, k int) []float64 {
	out := make([]float64, k)
	p := 1.0
	for i := range out {
		p *= rate
		out[i] = p
	}
	return out
}

// fromConditional turns conditional rates (draft i accepted given draft
// i−1 was) into per-position rates for k positions; past the measured
// positions the last conditional rate repeats.
func fromConditional(cond []float64, k int) (per []float64, extrapolated bool) {
	per = make([]float64, k)
	p := 1.0
	for i := range per {
		c := cond[min(i, len(cond)-1)]
		p *= c
		per[i] = p
	}
	return per, k > len(cond)
}

// MeanAcceptanceLength is the expected tokens one proposal yields: the
// bonus token plus the expected accepted drafts (Σ per-position rates).
func MeanAcceptanceLength(perPosition []float64) float64 {
	n := 1.0
	for _, p := range perPosition {
		n += p
	}
	return n
}

// The published measurements behind the defaults, as conditional
// acceptance rates by position (draft i accepted given draft i−1 was).
// docs/speculative.md lists and discusses each.
var (
	// eagleConditional: EAGLE (Li et al., "EAGLE: Speculative Sampling
	// Requires Rethinking Feature Uncertainty", ICML 2024,
	// arXiv:2401.15077), the n-α acceptance rates of chain drafts on
	// MT-bench, Vicuna-7B, greedy: 0-α … 4-α. Uncertain for vLLM: vLLM's
	// documentation says its EAGLE speedups fall short of the reference
	// implementation's (vllm-project/vllm#9565).
	eagleConditional = []float64{0.79, 0.74, 0.72, 0.73, 0.67}
	// eagle3Conditional: EAGLE-3 (Li et al., "EAGLE-3: Scaling up
	// Inference Acceleration of Large Language Models via Training-Time
	// Test", arXiv:2503.01840), the n-α acceptance rates on MT-bench with
	// LLaMA-Instruct-3.1-8B, which training-time test keeps nearly flat
	// over n = 0…6: about 0.8. Uncertain: read off the paper's figure, not
	// a table.
	eagle3Conditional = []float64{0.80, 0.80, 0.80, 0.80, 0.80, 0.80, 0.80}
	// mtpConditional: DeepSeek-V3 Technical Report (arXiv:2412.19437,
	// §5.4.3): "the acceptance rate of the second token prediction ranges
	// between 85% and 90%"; the lower end. One MTP layer predicts one
	// token; vLLM reuses it for more, which the report did not measure.
	mtpConditional = []float64{0.85}
	// draftModelConditional: Leviathan, Kalman and Matias, "Fast Inference
	// from Transformers via Speculative Decoding" (ICML 2023,
	// arXiv:2211.17192), Table 3: α = 0.71 for LaMDA 137B drafted by LaMDA
	// 2B (a draft 1.5% of the target's size, as Llama-3.2-1B is of
	// Llama-3.1-70B), under the paper's i.i.d. model. Uncertain: 2023
	// models on dialog; a modern pair of one family may accept more.
	draftModelConditional = []float64{0.71}
)

// DefaultAcceptance is the method's acceptance model for k drafts from
// the published measurements above (ngram: Headroom's own, see
// NgramAcceptance).
func DefaultAcceptance(method string, k int) Resolved {
	var cond []float64
	var src, dataset string
	switch method {
	case SpecNgram:
		out := NgramAcceptance(k)
		out.Warning = defaultWarning(method, "300 ShareGPT chat conversations (Headroom's replay of vLLM's proposer; prompts that are copied from accept far more)")
		return out
	case SpecEAGLE:
		cond, src, dataset = eagleConditional, "EAGLE (arXiv:2401.15077), MT-bench Vicuna-7B n-α", "MT-bench (Vicuna-7B, greedy, the paper's implementation)"
	case SpecEAGLE3:
		cond, src, dataset = eagle3Conditional, "EAGLE-3 (arXiv:2503.01840), MT-bench LLaMA-3.1-8B n-α ≈ 0.8", "MT-bench (LLaMA-Instruct-3.1-8B, the paper's figure)"
	case SpecMTP:
		cond, src, dataset = mtpConditional, "DeepSeek-V3 report (arXiv:2412.19437) §5.4.3: 85–90% for the second token", "DeepSeek-V3's own generation (its report's evaluation, second token only)"
	default:
		cond, src, dataset = draftModelConditional, "Leviathan et al. (arXiv:2211.17192) Table 3: LaMDA 137B with a 2B draft, α = 0.71", "LaMDA dialog (137B target, 2B draft)"
	}
	per, extra := fromConditional(cond, k)
	out := Resolved{PerPosition: per, ProposalRate: 1, Source: src, Warning: defaultWarning(method, dataset)}
	if extra && method != SpecDraftModel {
		out.Extrapolated = fmt.Sprintf("positions %d–%d repeat the last measured conditional rate %g (no published measurement; likely optimistic): give engine.speculative.acceptance for a measured model", len(cond)+1, k, cond[len(cond)-1])
	}
	return out
}

// NgramPromptLookup is vLLM's default prompt_lookup_min and
// prompt_lookup_max when neither is given (vllm/config/speculative.py).
const NgramPromptLookup = 5

// MaxMeasuredNgramTokens is the largest num_speculative_tokens the n-gram
// table was measured for; larger k takes its proposal rate and repeats
// its last conditional rate.
const MaxMeasuredNgramTokens = 10

// ngramTable[k−1] is vLLM's n-gram proposer (prompt_lookup_min = max = 5)
// replayed over the 300 ShareGPT conversations of the LLMServingSim
// reference run (Llama-3.1-8B token ids of prompt and answer), greedy
// verification against the answer: the fraction of decode steps with a
// proposal, and the per-position acceptance of the proposals. Measured by
// sim/engine TestNgramDefaultsMeasured (which fails if this table and the
// data disagree). Chat answers repeat their prompt rarely; summarisation,
// code editing or retrieval-grounded answers repeat it far more, so this
// default is the low end: give acceptance for such workloads.
var ngramTable = []struct {
	proposal float64
	per      []float64
}{
	{0.189, []float64{0.8}},
	{0.147, []float64{0.793, 0.646}},
	{0.125, []float64{0.785, 0.636, 0.534}},
	{0.111, []float64{0.784, 0.628, 0.522, 0.442}},
	{0.102, []float64{0.776, 0.618, 0.511, 0.43, 0.371}},
	{0.096, []float64{0.77, 0.605, 0.498, 0.418, 0.36, 0.32}},
	{0.091, []float64{0.766, 0.599, 0.489, 0.41, 0.351, 0.308, 0.277}},
	{0.087, []float64{0.763, 0.592, 0.482, 0.4, 0.34, 0.3, 0.267, 0.243}},
	{0.085, []float64{0.758, 0.586, 0.474, 0.392, 0.334, 0.294, 0.262, 0.237, 0.215}},
	{0.082, []float64{0.756, 0.583, 0.469, 0.388, 0.328, 0.288, 0.255, 0.231, 0.209, 0.191}},
}

// NgramAcceptance is the n-gram default for k drafts (ngramTable).
func NgramAcceptance(k int) Resolved {
	row := ngramTable[min(k, len(ngramTable))-1]
	out := Resolved{ProposalRate: row.proposal,
		Source: "Headroom's replay of vLLM's n-gram proposer over 300 ShareGPT conversations (prompt_lookup 5)"}
	if k <= len(row.per) {
		out.PerPosition = append([]float64(nil), row.per[:k]...)
		return out
	}
	last, cond := row.per[len(row.per)-1], row.per[0]
	if n := len(row.per); n > 1 {
		cond = last / math.Max(row.per[n-2], 1e-9)
	}
	out.PerPosition = append([]float64(nil), row.per...)
	for len(out.PerPosition) < k {
		last *= cond
		out.PerPosition = append(out.PerPosition, last)
	}
	out.Extrapolated = fmt.Sprintf("positions %d–%d repeat the last measured conditional rate %.3f", len(row.per)+1, k, cond)
	return out
}

// NgramNSPerToken is the host CPU time the n-gram proposer spends per
// context token of each request it proposes for: vLLM's numba-compiled
// KMP scan (one thread: vLLM caps its numba threads at 1), timed as its Go
// port: 0.77 ns per token, the median of 3 runs of BenchmarkNgramPropose
// on an AMD EPYC core. Uncertain: the Go port stands in for the numba
// code (which compiles the same loop through LLVM), and the Python work
// around it per request is not counted.
const NgramNSPerToken = 0.77

// ProposerHostUS is the host time of a model drafter's proposer in vLLM
// 0.11 (v1/spec_decode/eagle.py: EagleProposer.propose), for its set-up
// and for each of its K passes alike: K + 1 parts of about the same
// Python (attention metadata for the next position, positions and slot
// mapping, a piecewise-CUDA-graph forward whose attention is launched
// from the host, the logits and the argmax). Fitted, not read off the
// code: the shared vllm+eagle run (EAGLE-3, K = 4, Llama-3.1-8B on one
// H100) streams at 11.9 ms a step at 1 request/s (the median gap between
// its SSE events, inference-perf's inter-token latency p75, its p50 being
// the zero gaps inside an event), against 7.0 ms without speculation
// (vllm+quantization, the same vLLM); of that difference the target's
// verification, the rejection sampler and the draft passes' GPU time
// explain about 1.4 ms, and the 4 ms left over five parts is 800 µs each.
// The same figure reproduces the run's cadence at 14–66 requests in
// flight (13.3, 15.2 and 21.9 ms measured) and its saturation throughput
// (docs/speculative.md). Uncertain for other vLLM releases: later ones
// capture the drafter in full CUDA graphs and overlap the step with
// async scheduling, which should cost less host time (not measured here).
const ProposerHostUS = 800
