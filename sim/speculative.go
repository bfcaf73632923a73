package sim

import (
	"fmt"
	"math/rand/v2"

	"github.com/headroom-sim/headroom/hardware"
	"github.com/headroom-sim/headroom/models"
	"github.com/headroom-sim/headroom/sim/steptime"
)

// Speculative decoding as vLLM V1 runs it.
//
// After every step in which a request samples a token (a decode, or the
// prefill chunk that completes its prompt), the proposer drafts K tokens
// for it: an EAGLE-style head, MTP layer or draft model in K passes on the
// GPU inside the same step (the first over every token the target ran
// this step, the others one token per drafting request), or the n-gram
// proposer on the host CPU. At the next step the scheduler gives the
// request 1 + K tokens (its last sampled token and the drafts), counted
// against the token budget and trimmed by it, with KV slots allocated for
// all of them (and, for the EAGLE-style proposers, K lookahead slots for
// the drafts the step will propose). The target verifies them in one
// forward pass: 1 + K query tokens per sequence over its KV. The
// rejection sampler accepts a prefix of the drafts (drawn here from the
// acceptance model, on a seeded stream of its own) and adds one token of
// its own, so the request receives 1 + accepted tokens at once; the
// rejected drafts' KV slots are rolled back (num_computed_tokens), to be
// overwritten by the next step, and the blocks stay with the request as
// in vLLM.

// streamSpeculative is the RNG stream of acceptance and proposal draws
// (apart from driver.go's, so turning speculation on reshuffles nothing).
const streamSpeculative uint64 = 16

// Speculative is a run's resolved speculative decoding (Config.Speculative).
type Speculative struct {
	// Method is engine.Spec* (for the report).
	Method string
	// K is num_speculative_tokens, at least 1.
	K int
	// PerPosition[i] is the probability that a proposal's draft i+1 is
	// accepted: K entries, non-increasing.
	PerPosition []float64
	// ProposalRate is the probability that a request's step proposes
	// drafts (the n-gram proposer finds no match otherwise; 1 for model
	// drafters).
	ProposalRate float64
	// Drafter prices the draft passes on the GPU; nil is the n-gram
	// proposer on the host CPU, at NgramNSPerToken per context token.
	Drafter         *models.Drafter
	NgramNSPerToken float64
	// HostSetupSec and HostPassSec are a model drafter's host (CPU) time
	// in a step that drafts: the set-up once (the drafter's inputs from
	// the verified tokens, its attention metadata), then each of the K
	// passes (the metadata of the next position, the forward's launches,
	// the logits and the argmax). The passes are launched back to back,
	// so they take the longer of their host and GPU times
	// (proposerTime).
	HostSetupSec, HostPassSec float64
	// Lookahead is the KV slots reserved beyond the scheduled tokens of a
	// running request (vLLM's num_lookahead_tokens: K for EAGLE, EAGLE-3
	// and MTP, 0 otherwise).
	Lookahead int
	// AcceptanceSource says where PerPosition comes from (for the report);
	// AcceptanceWarning, when set, that it is a published default measured
	// on another workload.
	AcceptanceSource, AcceptanceWarning string
}

func (sp *Speculative) validate() error {
	switch {
	case sp.K < 1 || sp.K > 32:
		return &hardware.FieldError{Field: "engine.speculative.num_speculative_tokens", Reason: fmt.Sprintf("%d is not in [1, 32]", sp.K)}
	case len(sp.PerPosition) != sp.K:
		return &hardware.FieldError{Field: "engine.speculative.acceptance.per_position", Reason: fmt.Sprintf("has %d rates for %d drafts", len(sp.PerPosition), sp.K)}
	case !(sp.ProposalRate >= 0 && sp.ProposalRate <= 1):
		return &hardware.FieldError{Field: "engine.speculative.acceptance.proposal_rate", Reason: fmt.Sprintf("%g is not in [0, 1]", sp.ProposalRate)}
	case sp.Lookahead < 0 || sp.Lookahead > sp.K:
		return &hardware.FieldError{Field: "engine.speculative", Reason: fmt.Sprintf("lookahead %d is not in [0, %d]", sp.Lookahead, sp.K)}
	case !(sp.NgramNSPerToken >= 0 && sp.NgramNSPerToken < 1e6):
		return &hardware.FieldError{Field: "engine.speculative", Reason: fmt.Sprintf("n-gram CPU time %g ns per token is not in [0, 1e6)", sp.NgramNSPerToken)}
	case !(sp.HostSetupSec >= 0 && sp.HostSetupSec < 1) || !(sp.HostPassSec >= 0 && sp.HostPassSec < 1):
		return &hardware.FieldError{Field: "engine.speculative", Reason: fmt.Sprintf("proposer host times %g s and %g s per pass are not in [0, 1)", sp.HostSetupSec, sp.HostPassSec)}
	}
	for i, p := range sp.PerPosition {
		if !(p >= 0 && p <= 1) || (i > 0 && p > sp.PerPosition[i-1]) {
			return &hardware.FieldError{Field: fmt.Sprintf("engine.speculative.acceptance.per_position[%d]", i), Reason: fmt.Sprintf("%g is not in [0, %g]", p, min(1, sp.PerPosition[max(i-1, 0)]))}
		}
	}
	return nil
}

// decodeQueryLen is the query tokens of one decoding request per step: 1,
// or 1 + K with speculation (vLLM sizes its CUDA graphs by it).
func (c *Config) decodeQueryLen() int {
	if c.Speculative == nil {
		return 1
	}
	return 1 + c.Speculative.K
}

// DraftStepModel builds the step-time model of the drafter's passes: the
// same GPU, TP, profile, kernel database, CUDA graphs and expert split as
// the target's (nil for the n-gram proposer or without speculation).
func (c *Config) DraftStepModel() (*steptime.Model, error) {
	sp := c.Speculative
	if sp == nil || sp.Drafter == nil {
		return nil, nil
	}
	return c.stepModelOf(sp.Drafter.Model, sp.Drafter.Precision)
}

// specState is a run's speculative decoding: the proposer's cost model,
// the acceptance stream and the counts the report gives.
type specState struct {
	sp     *Speculative
	rng    *rand.Rand
	model  *steptime.Model // the drafter's passes (nil: n-gram on the CPU)
	window int             // the drafter's sliding window
	batch  models.Batch    // scratch for one draft pass
	ctxs   []int           // scratch: contexts of the drafting requests
	fc     string          // the drafter's linear format
	hidden int
	qkvN   int // EAGLE-3's wide attention projection: its output width on one GPU

	drafts, draftTokens, accepted int64
	perPos                        []int64
	decodeDeliveries, decodeToks  int64   // deliveries after the first token, and their tokens
	outToks                       int64   // every output token
	proposeSec, stepSec           float64 // the speculative terms (specCost.total) and whole steps
	cost                          SpecStepCost
}

func newSpecState(cfg *Config) (*specState, error) {
	sp := cfg.Speculative
	p := &specState{sp: sp, rng: rand.New(rand.NewPCG(cfg.Seed, streamSpeculative)), perPos: make([]int64, sp.K)}
	if sp.Drafter != nil {
		sm, err := cfg.DraftStepModel()
		if err != nil {
			return nil, fmt.Errorf("draft step-time model: %w", err)
		}
		m := sp.Drafter.Model
		p.model, p.fc, p.hidden = sm, sp.Drafter.Precision.LinearFormat(), m.HiddenSize
		if m.NumSlidingLayers() > 0 {
			p.window = m.SlidingWindow
		}
		if sp.Drafter.WideQKV {
			tp := max(cfg.TP, 1)
			p.qkvN = (m.NumHeads/tp + 2*m.KVHeadsPerRank(tp)) * m.HeadDim
		}
	}
	return p, nil
}

// proposeCap is how many drafts r may get: K, within max_model_len (vLLM
// schedules no position past max_model_len − 1).
func (p *specState) proposeCap(r *request, maxModelLen int) int {
	return max(0, min(p.sp.K, maxModelLen-1-r.numTokens()))
}

// specDelivered settles r's verification in the step that just ended
// (its decode token is already counted): the accepted drafts, drawn from
// the acceptance model, are delivered with it; then the proposer drafts
// for r's next step.
func (s *Simulator) specDelivered(r *request, t Time) {
	p := s.spec
	first := r.generated == 1
	emitted := 1
	if v := int(r.verify); v > 0 {
		r.verify = 0
		u := p.rng.Float64()
		a := 0
		for a < v && u < p.sp.PerPosition[a] {
			p.perPos[a]++
			a++
		}
		p.drafts++
		p.draftTokens += int64(v)
		p.accepted += int64(a)
		// Tokens past max_tokens are dropped by the stop check.
		if extra := min(a, r.output-r.generated); extra > 0 {
			r.generated += extra
			r.computed += extra
			emitted += extra
			s.m.countSecond(&s.m.secOut, int(t/nsPerSecond), int64(extra))
		}
	}
	p.outToks += int64(emitted)
	if !first {
		p.decodeDeliveries++
		p.decodeToks += int64(emitted)
	}
	r.drafts = 0
	if r.generated >= r.output {
		return
	}
	if p.sp.ProposalRate < 1 && p.rng.Float64() >= p.sp.ProposalRate {
		return
	}
	r.drafts = int32(p.proposeCap(r, s.cfg.Engine.MaxModelLen))
}

// addVerify puts r's decode token and n−1 of its drafts into the step
// (n ≤ 1 + drafts: the token budget may have trimmed them); it reports
// false when r is not decoding with drafts.
func (rp *rank) addVerify(r *request, n int) bool {
	if r.computed != r.numTokens()-1 || n < 2 {
		return false
	}
	v := n - 1
	r.verify = int32(v)
	rp.sched = append(rp.sched, scheduledSeq{r, 1, false})
	rp.batch.AddVerify(r.computed+1, v, rp.window)
	return true
}

// SpeculativeReport is what speculative decoding did in a run. Counts are
// the engines' over the whole run (warm-up requests included), as vLLM's
// spec_decode counters.
type SpeculativeReport struct {
	Method               string `json:"method"`
	NumSpeculativeTokens int    `json:"num_speculative_tokens"`
	// AcceptanceSource says where the acceptance model comes from;
	// AcceptanceWarning is set when it is a method's published default,
	// measured on another workload (it names the dataset).
	AcceptanceSource  string `json:"acceptance_source"`
	AcceptanceWarning string `json:"acceptance_warning,omitempty"`
	// Drafts is the proposals verified (vLLM num_drafts): request-steps
	// that carried drafts; DraftTokens the drafts in them (after the
	// token budget's trimming); AcceptedTokens those accepted.
	Drafts         int64 `json:"drafts"`
	DraftTokens    int64 `json:"draft_tokens"`
	AcceptedTokens int64 `json:"accepted_tokens"`
	// AcceptanceRate is AcceptedTokens ÷ DraftTokens (vLLM's draft
	// acceptance rate).
	AcceptanceRate float64 `json:"acceptance_rate"`
	// MeanAcceptanceLength is 1 + AcceptedTokens ÷ Drafts: the tokens a
	// proposal yields, the target's own token included (vLLM's mean
	// acceptance length).
	MeanAcceptanceLength float64 `json:"mean_acceptance_length"`
	// PerPositionAcceptanceRate[i] is the fraction of proposals whose
	// draft i+1 was accepted.
	PerPositionAcceptanceRate []float64 `json:"per_position_acceptance_rate"`
	// TokensPerRequestStep is the output tokens a decoding request
	// received per step (steps without drafts included): what divides
	// TPOT.
	TokensPerRequestStep float64 `json:"tokens_per_request_step"`
	// OutputTokensPerStep is all output tokens over all engine steps.
	OutputTokensPerStep float64 `json:"output_tokens_per_step"`
	// ProposerTimeRatio is the proposer's share of the engines' step
	// time (with the rejection sampler: the speculative terms' share).
	ProposerTimeRatio float64 `json:"proposer_time_ratio"`
	// Verdict is the planner's answer (speed-up and break-even
	// acceptance), when the command that ran the report asked for it; the
	// simulator itself leaves it nil.
	Verdict *SpeculationVerdict `json:"verdict,omitempty"`
}

// SpeculationVerdict is whether speculation pays for a scenario: at low
// load and at the scenario's own load (the SLA's), its speed-up at the
// assumed acceptance and the acceptance below which it is slower than
// the same scenario without speculation.
type SpeculationVerdict struct {
	// MeanAcceptanceLength is the tokens a verification yields at the
	// assumed acceptance (1 + Σ per-position rates, times the proposal
	// rate for n-gram); AcceptanceSource where it comes from.
	MeanAcceptanceLength float64 `json:"mean_acceptance_length"`
	AcceptanceSource     string  `json:"acceptance_source"`
	// LowLoad is one request in flight at a time (absent for trace and
	// multi-turn workloads, whose lengths come with their arrivals);
	// AtLoad the scenario's workload as given.
	LowLoad *SpeculationAt `json:"low_load,omitempty"`
	AtLoad  *SpeculationAt `json:"at_load"`
	Notes   []string       `json:"notes,omitempty"`
}

// SpeculationAt is speculation's effect at one load.
type SpeculationAt struct {
	// Load says what the load is.
	Load string `json:"load"`
	// E2EP50MS and TPOTP50MS are with speculation at the assumed
	// acceptance, E2EP50PlainMS and TPOTP50PlainMS without (the same
	// scenario, num_speculative_tokens 0).
	E2EP50MS       float64 `json:"e2e_p50_ms"`
	E2EP50PlainMS  float64 `json:"e2e_p50_plain_ms"`
	TPOTP50MS      float64 `json:"tpot_p50_ms"`
	TPOTP50PlainMS float64 `json:"tpot_p50_plain_ms"`
	// SpeedupRatio is E2EP50PlainMS ÷ E2EP50MS (above 1: speculation is
	// faster), TPOTSpeedupRatio the same for TPOT.
	SpeedupRatio     float64 `json:"speedup_ratio"`
	TPOTSpeedupRatio float64 `json:"tpot_speedup_ratio"`
	// BreakEvenRate is the conditional acceptance rate (draft i accepted
	// with probability rate^i) at which the E2E P50 with speculation
	// equals the one without, and BreakEvenMeanAcceptanceLength its mean
	// acceptance length; both absent when speculation is slower at any
	// acceptance or faster even with none (BreakEven says which).
	BreakEvenRate                 *float64 `json:"break_even_rate,omitempty"`
	BreakEvenMeanAcceptanceLength *float64 `json:"break_even_mean_acceptance_length,omitempty"`
	BreakEven                     string   `json:"break_even"`
}

// report is the run's speculative decoding summary over the engines'
// steps.
func (p *specState) report(steps int64) *SpeculativeReport {
	r := &SpeculativeReport{Method: p.sp.Method, NumSpeculativeTokens: p.sp.K, AcceptanceSource: p.sp.AcceptanceSource, AcceptanceWarning: p.sp.AcceptanceWarning,
		Drafts: p.drafts, DraftTokens: p.draftTokens, AcceptedTokens: p.accepted,
		PerPositionAcceptanceRate: make([]float64, p.sp.K)}
	if p.draftTokens > 0 {
		r.AcceptanceRate = round(float64(p.accepted)/float64(p.draftTokens), 4)
	}
	if p.drafts > 0 {
		r.MeanAcceptanceLength = round(1+float64(p.accepted)/float64(p.drafts), 4)
		for i, n := range p.perPos {
			r.PerPositionAcceptanceRate[i] = round(float64(n)/float64(p.drafts), 4)
		}
	}
	if p.decodeDeliveries > 0 {
		r.TokensPerRequestStep = round(float64(p.decodeToks)/float64(p.decodeDeliveries), 4)
	}
	if steps > 0 {
		r.OutputTokensPerStep = round(float64(p.outToks)/float64(steps), 4)
	}
	if p.stepSec > 0 {
		r.ProposerTimeRatio = round(p.proposeSec/p.stepSec, 4)
	}
	return r
}
