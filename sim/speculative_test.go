package sim

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/headroom-sim/headroom/models"
	"github.com/headroom-sim/headroom/sim/engine"
)

// withSpec turns speculative decoding on in a hand-computable run: k
// drafts accepted by position with the given rates, no drafter model
// (the fixed step time prices every step), lookahead slots as EAGLE's.
func withSpec(cfg Config, per []float64, lookahead int) Config {
	cfg.Speculative = &Speculative{Method: engine.SpecEAGLE, K: len(per), PerPosition: per, ProposalRate: 1, Lookahead: lookahead}
	return cfg
}

// One request of 16 prompt and 9 output tokens, three drafts per step,
// every draft accepted: the prefill samples the first token and the
// drafter proposes three; each verification then yields 3 + 1 tokens, so
// 1 + ceil(8 / 4) = 3 steps instead of 9, and the client gets the tokens
// in three chunks (ITL has 2 gaps, of one tick each).
func TestSpeculativeAllAccepted(t *testing.T) {
	cfg := withSpec(handConfig(t, []handReq{{at: 0, in: 16, out: 9}}, handSetup{}), []float64{1, 1, 1}, 3)
	_, log, rep := handRun(t, cfg)
	checkSteps(t, log.steps, []string{
		"0: 0:16",
		"1: 0:d+3",
		"2: 0:d+3",
	})
	checkEnd(t, log, 0, 1, 3)
	sp := rep.Speculative
	if sp == nil || sp.Drafts != 2 || sp.DraftTokens != 6 || sp.AcceptedTokens != 6 || sp.MeanAcceptanceLength != 4 || sp.TokensPerRequestStep != 4 || sp.AcceptanceRate != 1 {
		t.Errorf("speculative report %+v, want 2 drafts, 6 draft and 6 accepted tokens, mean length 4", sp)
	}
	tickMS := float64(tick) / 1e6
	if rep.ITLMS.Count != 2 || rep.ITLMS.Max != tickMS {
		t.Errorf("ITL %+v: want 2 gaps (one per chunk) of %g ms", rep.ITLMS, tickMS)
	}
	if want := 2 * tickMS / 8; math.Abs(rep.TPOTMS.Mean-want) > 1e-4 { // the report rounds to 4 digits
		t.Errorf("TPOT %g ms, want %g (2 ticks over 8 tokens)", rep.TPOTMS.Mean, want)
	}
	if sp.OutputTokensPerStep != 3 {
		t.Errorf("output tokens per step %g, want 9/3", sp.OutputTokensPerStep)
	}
}

// No draft accepted: the same 1 + 8 steps as without speculation, each
// verifying three drafts, and the same timestamps.
func TestSpeculativeNoneAccepted(t *testing.T) {
	reqs := []handReq{{at: 0, in: 16, out: 9}}
	_, plain, _ := handRun(t, handConfig(t, reqs, handSetup{}))
	_, log, rep := handRun(t, withSpec(handConfig(t, reqs, handSetup{}), []float64{0, 0, 0}, 3))
	want := []string{"0: 0:16"}
	for i := 1; i <= 8; i++ {
		want = append(want, fmt.Sprintf("%d: 0:d+3", i))
	}
	checkSteps(t, log.steps, want)
	checkEnd(t, log, 0, 1, 9)
	if plain.ends[0] != log.ends[0] {
		t.Errorf("end %+v, without speculation %+v", log.ends[0], plain.ends[0])
	}
	if sp := rep.Speculative; sp.Drafts != 8 || sp.DraftTokens != 24 || sp.AcceptedTokens != 0 || sp.MeanAcceptanceLength != 1 {
		t.Errorf("speculative report %+v, want 8 drafts of 3, none accepted", sp)
	}
}

// A request that needs fewer tokens than a verification yields stops at
// its output length (vLLM's stop check drops the rest): 9 − 1 = 8 → 4 +
// 3 of the second step's 4.
func TestSpeculativeStopsAtOutputLength(t *testing.T) {
	_, log, rep := handRun(t, withSpec(handConfig(t, []handReq{{at: 0, in: 16, out: 8}}, handSetup{}), []float64{1, 1, 1}, 3))
	checkSteps(t, log.steps, []string{"0: 0:16", "1: 0:d+3", "2: 0:d+3"})
	checkEnd(t, log, 0, 1, 3)
	if rep.Throughput.OutputTokensPerS == 0 || rep.Requests.Completed != 1 {
		t.Fatalf("report %+v", rep.Requests)
	}
	if got := rep.Speculative.TokensPerRequestStep; got != 3.5 {
		t.Errorf("tokens per request step %g, want (4 + 3) / 2", got)
	}
}

// Drafts count against the token budget, and the budget trims them: with
// 6 tokens a step, two decoding requests get 1 + 3 and 1 + 1.
func TestSpeculativeTokenBudget(t *testing.T) {
	cfg := handConfig(t, []handReq{{at: 0, in: 3, out: 4}, {at: 0, in: 3, out: 4}}, handSetup{engine: func(e *engine.Config) {
		e.MaxNumBatchedTokens, e.MaxNumSeqs = 6, 2
	}})
	_, log, _ := handRun(t, withSpec(cfg, []float64{0, 0, 0}, 0))
	checkSteps(t, log.steps, []string{
		"0: 0:3 1:3",
		"1: 0:d+3 1:d+1",
		"2: 0:d+3 1:d+1",
		"3: 0:d+3 1:d+1",
	})
}

// KV slots: a verification holds blocks for its decode token, its drafts
// and (EAGLE) the lookahead slots of the drafts it will propose; a
// rejection rolls num_computed_tokens back, and the request keeps its
// blocks for the next step's tokens, as vLLM's KV cache manager does.
func TestSpeculativeKVSlots(t *testing.T) {
	for _, c := range []struct {
		name      string
		lookahead int
		want      []string // computed tokens and blocks held at each step
	}{
		// 12 + 1 + 3 + 3 = 19 slots → 2 blocks from the first verification.
		{"eagle", 3, []string{"0/1", "12/2", "13/2", "14/2"}},
		// 12 + 4 = 16 → 1 block; 13 + 4 = 17 → 2.
		{"ngram", 0, []string{"0/1", "12/1", "13/2", "14/2"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := withSpec(handConfig(t, []handReq{{at: 0, in: 12, out: 4}}, handSetup{}), []float64{0, 0, 0}, c.lookahead)
			s, _ := newHandSim(t, cfg)
			var got []string
			s.onStep = func(rp *rank, _ Time) {
				r := rp.sched[0].r
				got = append(got, fmt.Sprintf("%d/%d", r.computed, len(r.blocks)))
			}
			if err := s.loop(context.Background()); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, c.want) {
				t.Errorf("computed/blocks by step %v, want %v", got, c.want)
			}
			if kv := s.ranks[0].kv; kv.numFree != kv.total {
				t.Errorf("%d of %d blocks free at the end", kv.numFree, kv.total)
			}
		})
	}
}

// A proposer that never finds a match (n-gram, proposal rate 0) runs
// plain decodes: the same steps and report as without speculation, but
// for the speculative section.
func TestSpeculativeNoProposals(t *testing.T) {
	reqs := []handReq{{at: 0, in: 16, out: 5}, {at: 1, in: 40, out: 3}}
	_, plainLog, plain := handRun(t, handConfig(t, reqs, handSetup{}))
	cfg := withSpec(handConfig(t, reqs, handSetup{}), []float64{1, 1}, 0)
	cfg.Speculative.ProposalRate = 0
	_, log, rep := handRun(t, cfg)
	if !slices.Equal(log.steps, plainLog.steps) {
		t.Errorf("steps differ:\n%v\n%v", log.steps, plainLog.steps)
	}
	if rep.Speculative.Drafts != 0 {
		t.Errorf("%d drafts with a proposal rate of 0", rep.Speculative.Drafts)
	}
	rep.Speculative = nil
	a, _ := json.Marshal(rep)
	b, _ := json.Marshal(plain)
	if string(a) != string(b) {
		t.Errorf("reports differ:\n%s\n%s", a, b)
	}
}

// Drafts stop at max_model_len − 1 (vLLM schedules no position past it):
// a request of 250 + 6 tokens in a 256-token window gets 3, then 1.
func TestSpeculativeMaxModelLen(t *testing.T) {
	_, log, _ := handRun(t, withSpec(handConfig(t, []handReq{{at: 0, in: 250, out: 6}}, handSetup{engine: func(e *engine.Config) {
		e.MaxNumBatchedTokens = 256
	}}), []float64{1, 1, 1}, 0))
	// 250 tokens, first token sampled: 251 in the sequence; drafts ≤ 256 −
	// 1 − 251 = 4 → 3; then 255 in the sequence: ≤ 0 drafts.
	checkSteps(t, log.steps, []string{"0: 0:250", "1: 0:d+3", "2: 0:d"})
}

// specRandomConfig is randomConfig with speculative decoding: a method,
// 1–6 drafts, random non-increasing acceptance, on the V1 scheduler.
func specRandomConfig(t *testing.T, seed uint64) Config {
	cfg := randomConfig(t, seed)
	r := rand.New(rand.NewPCG(seed, 7))
	cfg.Engine.Scheduler = engine.SchedulerV1
	k := 1 + r.IntN(6)
	per := make([]float64, k)
	p := 1.0
	for i := range per {
		p *= r.Float64()
		per[i] = p
	}
	sp := &Speculative{K: k, PerPosition: per, ProposalRate: 1, NgramNSPerToken: engine.NgramNSPerToken}
	switch r.IntN(3) {
	case 0:
		sp.Method, sp.ProposalRate = engine.SpecNgram, r.Float64()
	case 1:
		sp.Method, sp.Drafter, sp.Lookahead = engine.SpecEAGLE, models.EAGLEHead(cfg.Model, cfg.Precision), k
	default:
		sp.Method, sp.Drafter, sp.Lookahead = engine.SpecEAGLE3, models.EAGLE3Head(cfg.Model, cfg.Precision), k
	}
	if sp.Drafter != nil {
		sp.HostSetupSec, sp.HostPassSec = engine.ProposerHostUS*1e-6, engine.ProposerHostUS*1e-6
	}
	cfg.Speculative = sp
	return cfg
}

// The simulator's invariants hold with speculation on, and a running
// request never holds more blocks than its sequence, its drafts and the
// lookahead need, nor verifies more than k drafts.
func TestInvariantsWithSpeculation(t *testing.T) {
	n := 40
	if testing.Short() {
		n = 10
	}
	for seed := uint64(1); seed <= uint64(n); seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			cfg := specRandomConfig(t, seed)
			sp := cfg.Speculative
			checkInvariants(t, cfg, func(rp *rank, now Time) {
				for _, r := range rp.running {
					if int(r.verify) > sp.K || int(r.drafts) > sp.K || r.computed > r.numTokens() {
						t.Fatalf("t=%d: request %d verifies %d, holds %d drafts, %d computed of %d tokens", now, r.serial, r.verify, r.drafts, r.computed, r.numTokens())
					}
					if most := rp.kv.units(r.numTokens() + sp.K + sp.Lookahead); len(r.blocks) > most {
						t.Fatalf("t=%d: request %d holds %d blocks, more than the %d its %d tokens, drafts and lookahead need", now, r.serial, len(r.blocks), most, r.numTokens())
					}
				}
			})
		})
	}
}

// Acceptance draws come from a stream of their own: turning speculation
// on leaves every request's arrival and lengths as they were.
func TestSpeculationKeepsOtherDraws(t *testing.T) {
	for seed := uint64(1); seed <= 6; seed++ {
		var plain, spec []string
		for _, c := range []struct {
			cfg Config
			out *[]string
		}{{randomConfig(t, seed), &plain}, {specRandomConfig(t, seed), &spec}} {
			c.cfg.Engine.Scheduler = engine.SchedulerV1
			s, err := newSimulator(&c.cfg)
			if err != nil {
				t.Fatal(err)
			}
			s.onIssue = func(r *request) { *c.out = append(*c.out, fmt.Sprintf("%d:%d/%d", r.serial, r.input, r.output)) }
			if err := s.loop(context.Background()); err != nil {
				t.Fatal(err)
			}
		}
		// Closed loops issue in a different order when requests finish
		// sooner: compare the requests, not the order.
		slices.Sort(plain)
		slices.Sort(spec)
		if !slices.Equal(plain, spec) {
			t.Fatalf("seed %d: speculation changed the requests drawn", seed)
		}
	}
}

// Over many proposals the accepted drafts follow the acceptance model:
// each position's rate within 4 standard errors, and the same seed gives
// the same report.
func TestSpeculativeAcceptanceModel(t *testing.T) {
	reqs := make([]handReq, 40)
	for i := range reqs {
		reqs[i] = handReq{at: i, in: 16, out: 200}
	}
	per := []float64{0.8, 0.5, 0.2}
	run := func() *Report {
		cfg := withSpec(handConfig(t, reqs, handSetup{engine: func(e *engine.Config) { e.MaxModelLen = 1024 }}), per, 3)
		cfg.Seed = 11
		_, _, rep := handRun(t, cfg)
		return rep
	}
	rep := run()
	sp := rep.Speculative
	if sp.Drafts < 1000 {
		t.Fatalf("only %d drafts", sp.Drafts)
	}
	for i, want := range per {
		se := math.Sqrt(want * (1 - want) / float64(sp.Drafts))
		if got := sp.PerPositionAcceptanceRate[i]; math.Abs(got-want) > 4*se+1e-4 {
			t.Errorf("position %d accepted at %g, want %g ± %g", i+1, got, want, 4*se)
		}
	}
	if want := 1 + 0.8 + 0.5 + 0.2; math.Abs(sp.MeanAcceptanceLength-want) > 0.05 {
		t.Errorf("mean acceptance length %g, want about %g", sp.MeanAcceptanceLength, want)
	}
	a, _ := json.Marshal(rep)
	b, _ := json.Marshal(run())
	if string(a) != string(b) {
		t.Error("the same seed gave two reports")
	}
}
