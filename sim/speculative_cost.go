package sim

import (
	"fmt"

	"github.com/headroom-sim/headroom/models"
	"github.com/headroom-sim/headroom/sim/steptime"
)

// The cost of a speculative step beyond the target's forward pass, as
// vLLM 0.11's GPU model runner spends it in one engine step
// (v1/worker/gpu_model_runner.py: execute_model):
//
//  1. the target runs 1 + drafts query tokens per verifying request
//     (priced by the target's step-time model: models.Batch.AddVerify);
//  2. the rejection sampler turns the target's logits at every draft
//     position into probabilities under the request's temperature and
//     top-p and draws the accepted prefix and the recovered token
//     (v1/sample/rejection_sampler.py; RejectionSamplerTime);
//  3. the proposer drafts the next step's tokens (propose_draft_token_ids
//     → v1/spec_decode/eagle.py: EagleProposer.propose): a set-up on the
//     host (the drafter's inputs from the verified tokens, its attention
//     metadata), then K forward passes of the drafter, the first over
//     every token the target ran this step, each followed by its logits
//     and argmax. The passes are launched back to back with no host sync
//     between them, so they take the longer of their host time and their
//     GPU time; the step ends when the draft tokens are copied back for
//     the scheduler. The n-gram proposer scans on the CPU instead.
//
// vLLM 0.11 runs speculation with async scheduling off (async scheduling
// supports speculative decoding from 0.14, vllm-project/vllm#31998), so
// every term adds to the step; the simulator adds them whatever the
// engine's async setting, since the proposer's host work runs inside the
// model runner's step, after the target's outputs, on the busy-loop
// thread.

// SpecStepCost is one step's speculative terms, in seconds.
type SpecStepCost struct {
	// Drafts is the draft positions the target verified this step;
	// Drafting the requests the proposer drafts for (those that sampled a
	// token and are not done).
	Drafts, Drafting int
	// RejectionSampler is the rejection sampler's GPU time over Drafts.
	RejectionSampler float64
	// DraftGPU is the K passes of a model drafter on the GPU; FirstPass
	// the first of them, over FirstPassTokens token rows.
	DraftGPU, FirstPass float64
	FirstPassTokens     int
	// HostSetup and HostPasses are the proposer's host time: once, and
	// the K passes together.
	HostSetup, HostPasses float64
	// Ngram is the n-gram proposer's CPU scan.
	Ngram float64
	// Proposer is the proposer's share of the step: HostSetup plus the
	// longer of HostPasses and DraftGPU (model drafters), or Ngram.
	Proposer float64
}

// Total is the time the terms add to the target's step.
func (c SpecStepCost) Total() float64 { return c.RejectionSampler + c.Proposer }

// add sums another step's terms into c (for the report).
func (c *SpecStepCost) add(o SpecStepCost) {
	c.Drafts += o.Drafts
	c.Drafting += o.Drafting
	c.RejectionSampler += o.RejectionSampler
	c.DraftGPU += o.DraftGPU
	c.FirstPass += o.FirstPass
	c.FirstPassTokens += o.FirstPassTokens
	c.HostSetup += o.HostSetup
	c.HostPasses += o.HostPasses
	c.Ngram += o.Ngram
	c.Proposer += o.Proposer
}

// stepCost prices the speculative terms of the step rp has just
// scheduled.
func (p *specState) stepCost(rp *rank) SpecStepCost {
	p.ctxs = p.ctxs[:0]
	b := &p.batch
	b.Reset()
	drafts := 0
	for _, sc := range rp.sched {
		r := sc.r
		switch {
		case sc.prefill:
			last := r.computed+sc.n == r.numTokens()
			b.AddPrefill(sc.n, r.computed, p.window, last)
			if last {
				p.ctxs = append(p.ctxs, r.numTokens()+1)
			}
		default:
			// The verified tokens, rejected ones included: vLLM pads the
			// drafter's first pass rather than wait for the acceptance.
			n := 1 + int(r.verify)
			drafts += int(r.verify)
			b.AddDraftInput(r.computed+1, n, p.window)
			p.ctxs = append(p.ctxs, r.computed+n+1)
		}
	}
	return p.price(rp.model, drafts)
}

// price is the speculative terms of a step whose first draft pass is
// p.batch, whose drafting requests have the contexts p.ctxs and whose
// target (priced by target) verified drafts draft positions.
func (p *specState) price(target *steptime.Model, drafts int) SpecStepCost {
	c := SpecStepCost{Drafts: drafts, Drafting: len(p.ctxs), RejectionSampler: target.RejectionSamplerTime(drafts)}
	if len(p.ctxs) == 0 {
		return c
	}
	if p.model == nil {
		tokens := 0
		for _, n := range p.ctxs {
			tokens += n
		}
		c.Ngram = float64(tokens) * p.sp.NgramNSPerToken * 1e-9
		c.Proposer = c.Ngram
		return c
	}
	c.FirstPassTokens = p.batch.Tokens()
	c.FirstPass, c.DraftGPU = p.draftGPUTime()
	c.HostSetup, c.HostPasses = p.sp.HostSetupSec, float64(p.sp.K)*p.sp.HostPassSec
	c.Proposer = c.HostSetup + max(c.HostPasses, c.DraftGPU)
	return c
}

// draftGPUTime is the GPU time of the first draft pass (p.batch) and of
// all K (the later ones one token per drafting request of p.ctxs).
func (p *specState) draftGPUTime() (first, all float64) {
	b := &p.batch
	d := p.sp.Drafter
	first = p.model.GPUTime(b) + p.fcTime(b.Tokens(), d.FCInputs+d.FirstFCInputs)
	all = first
	for j := 1; j < p.sp.K; j++ {
		b.Reset()
		for _, c := range p.ctxs {
			b.AddDecode(c+j-1, p.window)
		}
		all += p.model.GPUTime(b) + p.fcTime(len(p.ctxs), d.FCInputs)
	}
	return first, all
}

// fcTime is a draft pass's input projections over m tokens: inputs
// hidden sizes into one (replicated on every GPU, as vLLM's fc and
// eh_proj are), and EAGLE-3's wider attention input.
func (p *specState) fcTime(m, inputs int) float64 {
	t := 0.0
	if inputs > 0 {
		t = p.model.GEMMTime(p.fc, m, p.hidden, inputs*p.hidden)
	}
	if p.qkvN > 0 {
		t += p.model.GEMMTime(p.fc, m, p.qkvN, p.hidden)
	}
	return t
}

// withProposer adds the speculative terms to a step of rp whose target
// pass takes target seconds, and tallies both for the report.
func (p *specState) withProposer(rp *rank, target float64) float64 {
	c := p.stepCost(rp)
	t := c.Total()
	p.cost.add(c)
	p.proposeSec += t
	p.stepSec += target + t
	return target + t
}

// SpecStepBatch is a step to price as speculative decoding runs it:
// DecodeSeqs requests verifying K drafts each over KVLen tokens of
// context (their last sampled token included), and PrefillChunks chunks
// of PrefillTokens new tokens after PrefillContext cached ones, which
// complete their prompts unless PrefillPartial.
type SpecStepBatch struct {
	DecodeSeqs, KVLen                            int
	PrefillChunks, PrefillTokens, PrefillContext int
	PrefillPartial                               bool
}

// TargetBatch is the target's forward pass of b: every decoding request
// verifies K drafts.
func (c *Config) TargetBatch(b SpecStepBatch) models.Batch {
	var mb models.Batch
	k := 0
	if c.Speculative != nil {
		k = c.Speculative.K
	}
	for range b.DecodeSeqs {
		mb.AddVerify(b.KVLen, k, c.Model.SlidingWindow)
	}
	for range b.PrefillChunks {
		mb.AddPrefill(b.PrefillTokens, b.PrefillContext, c.Model.SlidingWindow, !b.PrefillPartial)
	}
	return mb
}

// SpeculativeStepCost prices the speculative terms of step b with the
// target's step-time model target (headroom steptime shows them). c
// must have speculation on and be validated.
func (c *Config) SpeculativeStepCost(target *steptime.Model, b SpecStepBatch) (SpecStepCost, error) {
	if c.Speculative == nil {
		return SpecStepCost{}, fmt.Errorf("speculative decoding is off")
	}
	p, err := newSpecState(c)
	if err != nil {
		return SpecStepCost{}, err
	}
	k := c.Speculative.K
	p.batch.Reset()
	for range b.DecodeSeqs {
		// The verifying request's context before this step: KVLen − 1
		// tokens, then its sampled token and K drafts.
		p.batch.AddDraftInput(b.KVLen, 1+k, p.window)
		p.ctxs = append(p.ctxs, b.KVLen+k+1)
	}
	for range b.PrefillChunks {
		p.batch.AddPrefill(b.PrefillTokens, b.PrefillContext, p.window, !b.PrefillPartial)
		if !b.PrefillPartial {
			p.ctxs = append(p.ctxs, b.PrefillContext+b.PrefillTokens+1)
		}
	}
	return p.price(target, b.DecodeSeqs*k), nil
}
