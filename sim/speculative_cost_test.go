package sim

import (
	"math"
	"testing"

	"github.com/headroom-sim/headroom/models"
	"github.com/headroom-sim/headroom/sim/engine"
)

// With an EAGLE-style proposer vLLM gives back the last block of every
// prefix-cache hit (the drafter needs the target's hidden states of it):
// the prefix-cache table of TestPrefixCacheHits, one block less per hit.
func TestEagleDropsLastCachedBlock(t *testing.T) {
	reqs := []handReq{
		{at: 0, in: 64, out: 1, blocks: []int64{1, 2, 3, 4}},
		{at: 2, in: 64, out: 1, blocks: []int64{1, 2, 3, 5}}, // 3 shared: 2
		{at: 4, in: 64, out: 1, blocks: []int64{1, 2, 9, 4}}, // 2 shared: 1
		{at: 10, in: 48, out: 1, blocks: []int64{2, 3, 4}},   // none
	}
	for _, tc := range []struct {
		lookahead int
		steps     []string
		hits      []int
	}{
		{0, []string{"0: 0:64", "2: 1:16", "4: 2:32", "10: 3:48"}, []int{0, 48, 32, 0}},
		{1, []string{"0: 0:64", "2: 1:32", "4: 2:48", "10: 3:48"}, []int{0, 32, 16, 0}},
	} {
		cfg := withSpec(handConfig(t, reqs, handSetup{engine: caching}), []float64{0}, tc.lookahead)
		_, log, _ := handRun(t, cfg)
		checkSteps(t, log.steps, tc.steps)
		checkHits(t, log, tc.hits)
	}
}

// specCostConfig is Llama-3.1-8B on an H100 with EAGLE-3 drafting k
// tokens, the proposer's host time host seconds per part.
func specCostConfig(t *testing.T, k int, host float64) Config {
	cfg := handConfig(t, []handReq{{at: 0, in: 16, out: 2}}, handSetup{})
	cfg.Speculative = &Speculative{Method: engine.SpecEAGLE3, K: k, PerPosition: make([]float64, k), ProposalRate: 1, Lookahead: k,
		Drafter: models.EAGLE3Head(cfg.Model, cfg.Precision), HostSetupSec: host, HostPassSec: host}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	return cfg
}

// The speculative terms of a step, by hand: the rejection sampler over
// every draft position, the host set-up, then the K passes at the longer
// of their host and GPU times.
func TestSpeculativeStepCostTerms(t *testing.T) {
	for _, tc := range []struct {
		k, seqs   int
		host      float64
		hostBound bool
	}{
		{4, 1, 800e-6, true},  // one request: the passes wait on the host
		{4, 1, 0, false},      // no host time: the GPU's
		{2, 128, 1e-6, false}, // a large batch: the GPU's
	} {
		cfg := specCostConfig(t, tc.k, tc.host)
		target, err := cfg.StepModel()
		if err != nil {
			t.Fatal(err)
		}
		c, err := cfg.SpeculativeStepCost(target, SpecStepBatch{DecodeSeqs: tc.seqs, KVLen: 200})
		if err != nil {
			t.Fatal(err)
		}
		if c.Drafts != tc.k*tc.seqs || c.Drafting != tc.seqs || c.FirstPassTokens != (1+tc.k)*tc.seqs {
			t.Errorf("k %d × %d: %d drafts, %d drafting, first pass %d tokens; want %d, %d, %d", tc.k, tc.seqs, c.Drafts, c.Drafting, c.FirstPassTokens, tc.k*tc.seqs, tc.seqs, (1+tc.k)*tc.seqs)
		}
		if want := target.RejectionSamplerTime(tc.k * tc.seqs); c.RejectionSampler != want || want <= 0 {
			t.Errorf("rejection sampler %g s, want %g > 0", c.RejectionSampler, want)
		}
		if c.HostSetup != tc.host || math.Abs(c.HostPasses-float64(tc.k)*tc.host) > 1e-15 {
			t.Errorf("host %g + %g s, want %g + %d × %g", c.HostSetup, c.HostPasses, tc.host, tc.k, tc.host)
		}
		if !(c.FirstPass > 0 && c.DraftGPU > c.FirstPass) {
			t.Errorf("draft GPU %g s, first pass %g s: want 0 < first < all", c.DraftGPU, c.FirstPass)
		}
		if want := c.HostSetup + math.Max(c.HostPasses, c.DraftGPU); c.Proposer != want {
			t.Errorf("proposer %g s, want %g", c.Proposer, want)
		}
		if (c.HostPasses > c.DraftGPU) != tc.hostBound {
			t.Errorf("k %d × %d: host %g s vs GPU %g s, want host-bound %v", tc.k, tc.seqs, c.HostPasses, c.DraftGPU, tc.hostBound)
		}
		if c.Total() != c.RejectionSampler+c.Proposer {
			t.Errorf("total %g s, want %g", c.Total(), c.RejectionSampler+c.Proposer)
		}
	}
}

// A prefill chunk that completes its prompt gets drafts (the first pass
// runs over its tokens); a partial one only feeds the drafter's KV; no
// draft is verified in either.
func TestSpeculativeStepCostPrefill(t *testing.T) {
	cfg := specCostConfig(t, 4, 800e-6)
	target, _ := cfg.StepModel()
	for _, partial := range []bool{false, true} {
		c, err := cfg.SpeculativeStepCost(target, SpecStepBatch{PrefillChunks: 1, PrefillTokens: 90, PrefillContext: 112, PrefillPartial: partial})
		if err != nil {
			t.Fatal(err)
		}
		drafting := 1
		if partial {
			drafting = 0
		}
		if c.Drafts != 0 || c.RejectionSampler != 0 || c.Drafting != drafting {
			t.Errorf("partial %v: %d drafts, rejection sampler %g s, %d drafting; want 0, 0, %d", partial, c.Drafts, c.RejectionSampler, c.Drafting, drafting)
		}
		if partial && c.Proposer != 0 {
			t.Errorf("partial chunk: proposer %g s, want 0 (nothing to draft for)", c.Proposer)
		}
		if !partial && c.Proposer < 5*800e-6 {
			t.Errorf("completing chunk: proposer %g s, want at least the host's 5 × 800 µs", c.Proposer)
		}
	}
}

// The n-gram proposer costs its CPU scan only (no drafter on the GPU).
func TestSpeculativeStepCostNgram(t *testing.T) {
	cfg := specCostConfig(t, 3, 0)
	cfg.Speculative.Method, cfg.Speculative.Drafter, cfg.Speculative.Lookahead = engine.SpecNgram, nil, 0
	cfg.Speculative.NgramNSPerToken = 1
	target, _ := cfg.StepModel()
	c, err := cfg.SpeculativeStepCost(target, SpecStepBatch{DecodeSeqs: 2, KVLen: 100})
	if err != nil {
		t.Fatal(err)
	}
	// Each request's context after the step: 100 − 1 + 1 + 3 + 1 tokens.
	if want := 2 * 104e-9; math.Abs(c.Ngram-want) > 1e-18 || c.Proposer != c.Ngram || c.DraftGPU != 0 {
		t.Errorf("n-gram %+v: want a %g s scan and nothing else", c, want)
	}
}
