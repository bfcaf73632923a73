package scenario_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/headroom-sim/headroom/internal/study/scenario"
	"github.com/headroom-sim/headroom/sim"
	"github.com/headroom-sim/headroom/sim/engine"
	"github.com/headroom-sim/headroom/sim/memory"
)

func ptr(x float64) *float64 { return &x }

// run resolves and simulates s, returning the report's JSON.
func run(t *testing.T, s scenario.Scenario) (*scenario.Resolved, *sim.Report, []byte) {
	t.Helper()
	res, err := s.Resolve(scenario.Env{Catalog: builtin(t)})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := sim.Run(context.Background(), res.Config)
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	return res, rep, b
}

// num_speculative_tokens 0 is no speculation: the same memory, KV blocks
// and report, byte for byte, whatever the method.
func TestSpeculativeZeroTokensIsOff(t *testing.T) {
	base := scenario.Default()
	base.Workload.Requests = 200
	plainRes, _, plain := run(t, base)
	for _, sp := range []engine.Speculative{
		{Method: engine.SpecEAGLE},
		{Method: engine.SpecEAGLE3, Acceptance: &engine.Acceptance{Rate: ptr(0.5)}},
		{Method: engine.SpecNgram},
		{Method: engine.SpecDraftModel, DraftModel: "llama-3.2-1b"},
	} {
		t.Run(sp.Method, func(t *testing.T) {
			s := base
			s.Engine.Speculative = &sp
			res, _, got := run(t, s)
			if res.Config.Speculative != nil || !reflect.DeepEqual(res.Memory, plainRes.Memory) {
				t.Errorf("k = 0 resolved to %+v, memory %+v (want none, %+v)", res.Config.Speculative, res.Memory, plainRes.Memory)
			}
			if !bytes.Equal(got, plain) {
				t.Errorf("k = 0 changed the report:\n%s\nwant\n%s", got, plain)
			}
		})
	}
}

func TestSpeculativeFieldErrors(t *testing.T) {
	spec := func(sp engine.Speculative) func(*scenario.Scenario) {
		return func(s *scenario.Scenario) { s.Engine.Speculative = &sp }
	}
	for _, c := range []struct {
		name     string
		edit     func(*scenario.Scenario)
		field    string
		inReason string
	}{
		{"unknown method", spec(engine.Speculative{Method: "medusa", NumSpeculativeTokens: 2}), "engine.speculative.method", `"medusa" is not draft_model, eagle, eagle3, mtp or ngram`},
		{"too many tokens", spec(engine.Speculative{Method: "eagle", NumSpeculativeTokens: 33}), "engine.speculative.num_speculative_tokens", "not in [0, 32]"},
		{"negative tokens", spec(engine.Speculative{Method: "eagle", NumSpeculativeTokens: -1}), "engine.speculative.num_speculative_tokens", "not in [0, 32]"},
		{"draft model missing", spec(engine.Speculative{Method: "draft_model", NumSpeculativeTokens: 2}), "engine.speculative.draft_model", "is required by method draft_model"},
		{"draft model for eagle", spec(engine.Speculative{Method: "eagle", NumSpeculativeTokens: 2, DraftModel: "llama-3.2-1b"}), "engine.speculative.draft_model", "only read by method draft_model"},
		{"unknown draft model", spec(engine.Speculative{Method: "draft_model", NumSpeculativeTokens: 2, DraftModel: "llama-9"}), "engine.speculative.draft_model", "llama-9"},
		{"draft model of another tokenizer", spec(engine.Speculative{Method: "draft_model", NumSpeculativeTokens: 2, DraftModel: "qwen3-8b"}), "engine.speculative.draft_model", "tokenizer"},
		{"draft model not splitting over tp", func(s *scenario.Scenario) {
			s.Model, s.TP = "qwen2.5-72b", 8
			s.Engine.Speculative = &engine.Speculative{Method: "draft_model", NumSpeculativeTokens: 2, DraftModel: "qwen2.5-7b"}
		}, "engine.speculative.draft_model", "tp 8 does not divide qwen2.5-7b's 28 attention heads"},
		{"mtp without MTP layers", spec(engine.Speculative{Method: "mtp", NumSpeculativeTokens: 1}), "engine.speculative.method", "llama-3.1-8b has none (num_nextn_predict_layers is 0)"},
		{"both acceptance forms", spec(engine.Speculative{Method: "eagle", NumSpeculativeTokens: 2, Acceptance: &engine.Acceptance{PerPosition: []float64{0.5, 0.4}, Rate: ptr(0.5)}}), "engine.speculative.acceptance", "not both"},
		{"rate above 1", spec(engine.Speculative{Method: "eagle", NumSpeculativeTokens: 2, Acceptance: &engine.Acceptance{Rate: ptr(1.2)}}), "engine.speculative.acceptance.rate", "1.2 is not in [0, 1]"},
		{"too few positions", spec(engine.Speculative{Method: "eagle", NumSpeculativeTokens: 3, Acceptance: &engine.Acceptance{PerPosition: []float64{0.5, 0.4}}}), "engine.speculative.acceptance.per_position", "gives 2 rates for num_speculative_tokens 3"},
		{"increasing positions", spec(engine.Speculative{Method: "eagle", NumSpeculativeTokens: 3, Acceptance: &engine.Acceptance{PerPosition: []float64{0.5, 0.6, 0.1}}}), "engine.speculative.acceptance.per_position[1]", "0.6 exceeds position 1's 0.5"},
		{"negative position", spec(engine.Speculative{Method: "eagle", NumSpeculativeTokens: 1, Acceptance: &engine.Acceptance{PerPosition: []float64{-0.1}}}), "engine.speculative.acceptance.per_position[0]", "not in [0, 1]"},
		{"NaN position", spec(engine.Speculative{Method: "eagle", NumSpeculativeTokens: 1, Acceptance: &engine.Acceptance{PerPosition: []float64{math.NaN()}}}), "engine.speculative.acceptance.per_position[0]", "not in [0, 1]"},
		{"proposal rate for a model drafter", spec(engine.Speculative{Method: "eagle", NumSpeculativeTokens: 1, Acceptance: &engine.Acceptance{ProposalRate: ptr(0.5)}}), "engine.speculative.acceptance.proposal_rate", "only for method ngram"},
		{"proposal rate above 1", spec(engine.Speculative{Method: "ngram", NumSpeculativeTokens: 1, Acceptance: &engine.Acceptance{ProposalRate: ptr(2)}}), "engine.speculative.acceptance.proposal_rate", "not in [0, 1]"},
		{"source without rates", spec(engine.Speculative{Method: "eagle", NumSpeculativeTokens: 1, Acceptance: &engine.Acceptance{Source: "a run"}}), "engine.speculative.acceptance.source", "none is given"},
		{"source too long", spec(engine.Speculative{Method: "eagle", NumSpeculativeTokens: 1, Acceptance: &engine.Acceptance{Rate: ptr(0.5), Source: strings.Repeat("x", 513)}}), "engine.speculative.acceptance.source", "more than 512"},
		{"the v0 scheduler", func(s *scenario.Scenario) {
			s.Engine.Scheduler, s.Engine.EnableChunkedPrefill = engine.SchedulerV0, false
			s.Engine.Speculative = &engine.Speculative{Method: "ngram", NumSpeculativeTokens: 2}
		}, "engine.speculative", "needs scheduler v1"},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := scenario.Default()
			c.edit(&s)
			_, err := s.Resolve(scenario.Env{Catalog: builtin(t)})
			var fe *scenario.FieldError
			if !errors.As(err, &fe) {
				t.Fatalf("Resolve error %v (%T) is not a *FieldError", err, err)
			}
			if fe.Field != c.field || !strings.Contains(fe.Reason, c.inReason) {
				t.Errorf("error %q: want field %s with %q in the reason", err, c.field, c.inReason)
			}
		})
	}
}

// EAGLE on the default scenario: three drafts at the EAGLE paper's
// rates, lookahead slots, and the head's weights and KV taken from the KV
// cache as vLLM does (one more layer in every block).
func TestSpeculativeResolveEAGLE(t *testing.T) {
	s := scenario.Default()
	s.Engine.Speculative = &engine.Speculative{Method: engine.SpecEAGLE, NumSpeculativeTokens: 3}
	res, err := s.Resolve(scenario.Env{Catalog: builtin(t)})
	if err != nil {
		t.Fatal(err)
	}
	sp := res.Config.Speculative
	want := []float64{0.79, 0.79 * 0.74, 0.79 * 0.74 * 0.72}
	if sp.K != 3 || sp.Lookahead != 3 || sp.ProposalRate != 1 || sp.Drafter == nil || len(sp.PerPosition) != 3 {
		t.Fatalf("resolved %+v", sp)
	}
	for i := range want {
		if math.Abs(sp.PerPosition[i]-want[i]) > 1e-12 {
			t.Errorf("per position %v, want %v", sp.PerPosition, want)
		}
	}
	// The published default comes with its warning (and only that).
	if !strings.Contains(sp.AcceptanceSource, "arXiv:2401.15077") || len(res.Warning) != 1 || !strings.Contains(res.Warning[0], "published default") {
		t.Errorf("source %q, warnings %v", sp.AcceptanceSource, res.Warning)
	}
	def := scenario.Default()
	plain, err := def.Resolve(scenario.Env{Catalog: builtin(t)})
	if err != nil {
		t.Fatal(err)
	}
	// The head: one Llama-3.1-8B layer and fc, 251,670,528 bf16 weights;
	// a block of 16 tokens now holds 33 layers' KV instead of 32.
	const headBytes = 2 * 251670528
	if got := res.Memory.WeightsBytes - plain.Memory.WeightsBytes; got != headBytes || res.Memory.DraftWeightsBytes != headBytes {
		t.Errorf("the head adds %g bytes of weights (draft %g), want %d", got, res.Memory.DraftWeightsBytes, headBytes)
	}
	if got, want := res.Memory.BlockBytes, plain.Memory.BlockBytes*33/32; got != want {
		t.Errorf("block of %g bytes, want %g", got, want)
	}
	if got, want := res.Memory.NumGPUBlocks, int((plain.Memory.KVCacheBytes-headBytes)/(plain.Memory.BlockBytes*33/32)); got != want {
		t.Errorf("%d KV blocks, want %d", got, want)
	}
	// Past the EAGLE paper's five positions the rates are extrapolated,
	// and the run says so.
	s.Engine.Speculative.NumSpeculativeTokens = 7
	res, err = s.Resolve(scenario.Env{Catalog: builtin(t)})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Warning) != 2 || !strings.Contains(res.Warning[0], "positions 6–7") || !strings.Contains(res.Config.Speculative.AcceptanceSource, "likely optimistic") {
		t.Errorf("warnings %v, source %q", res.Warning, res.Config.Speculative.AcceptanceSource)
	}
}

// The acceptance forms a scenario can give, and the methods' drafters.
func TestSpeculativeResolveForms(t *testing.T) {
	for _, c := range []struct {
		name  string
		model string
		tp    int
		sp    engine.Speculative
		check func(t *testing.T, sp *sim.Speculative, mem memory.Profile)
	}{
		{"rate", "llama-3.1-8b", 1, engine.Speculative{Method: "eagle3", NumSpeculativeTokens: 3, Acceptance: &engine.Acceptance{Rate: ptr(0.5)}},
			func(t *testing.T, sp *sim.Speculative, _ memory.Profile) {
				if !reflect.DeepEqual(sp.PerPosition, []float64{0.5, 0.25, 0.125}) || sp.Drafter.Model.VocabSize != 32000 {
					t.Errorf("%+v", sp)
				}
			}},
		{"per position, longer than k", "llama-3.1-8b", 1, engine.Speculative{Method: "eagle", NumSpeculativeTokens: 2, Acceptance: &engine.Acceptance{PerPosition: []float64{0.9, 0.6, 0.3}}},
			func(t *testing.T, sp *sim.Speculative, _ memory.Profile) {
				if !reflect.DeepEqual(sp.PerPosition, []float64{0.9, 0.6}) || sp.AcceptanceSource != "scenario (per_position)" {
					t.Errorf("%+v", sp)
				}
			}},
		{"ngram defaults", "llama-3.1-8b", 1, engine.Speculative{Method: "ngram", NumSpeculativeTokens: 3},
			func(t *testing.T, sp *sim.Speculative, mem memory.Profile) {
				if !reflect.DeepEqual(sp.PerPosition, []float64{0.785, 0.636, 0.534}) || sp.ProposalRate != 0.125 || sp.Drafter != nil || sp.Lookahead != 0 || mem.DraftWeightsBytes != 0 {
					t.Errorf("%+v", sp)
				}
			}},
		{"ngram with a proposal rate", "llama-3.1-8b", 1, engine.Speculative{Method: "ngram", NumSpeculativeTokens: 2, Acceptance: &engine.Acceptance{Rate: ptr(0.9), ProposalRate: ptr(0.6)}},
			func(t *testing.T, sp *sim.Speculative, _ memory.Profile) {
				if sp.ProposalRate != 0.6 || math.Abs(sp.PerPosition[1]-0.81) > 1e-12 {
					t.Errorf("%+v", sp)
				}
			}},
		{"mtp on DeepSeek-V3", "deepseek-v3", 8, engine.Speculative{Method: "mtp", NumSpeculativeTokens: 1},
			func(t *testing.T, sp *sim.Speculative, mem memory.Profile) {
				if sp.Drafter.Model.MoE == nil || sp.PerPosition[0] != 0.85 || sp.Lookahead != 1 || !(mem.DraftWeightsBytes > 1e9) {
					t.Errorf("%+v, draft weights %g", sp, mem.DraftWeightsBytes)
				}
			}},
		{"draft model", "llama-3.1-70b", 4, engine.Speculative{Method: "draft_model", NumSpeculativeTokens: 4, DraftModel: "meta-llama/Llama-3.2-1B-Instruct"},
			func(t *testing.T, sp *sim.Speculative, mem memory.Profile) {
				if sp.Drafter.Model.ID != "llama-3.2-1b" || sp.Lookahead != 0 || math.Abs(sp.PerPosition[3]-math.Pow(0.71, 4)) > 1e-12 {
					t.Errorf("%+v", sp)
				}
				if mem.DraftWeightsBytes < 0.6e9 || mem.DraftWeightsBytes > 0.7e9 { // 2.47 GB over 4 GPUs, embeddings split too
					t.Errorf("draft weights %g bytes per GPU", mem.DraftWeightsBytes)
				}
			}},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := scenario.Default()
			s.Model, s.TP = c.model, c.tp
			if c.model == "deepseek-v3" {
				s.GPU = "h200"
			}
			s.Engine.Speculative = &c.sp
			res, err := s.Resolve(scenario.Env{Catalog: builtin(t)})
			if err != nil {
				t.Fatal(err)
			}
			c.check(t, res.Config.Speculative, res.Memory)
		})
	}
}

// A published default acceptance is used only with a warning that names
// the dataset it was measured on (in the resolved scenario and the
// report); acceptance the scenario gives carries its source and no
// warning.
func TestSpeculativeAcceptanceSource(t *testing.T) {
	for _, c := range []struct {
		name        string
		sp          engine.Speculative
		source      string
		warnDataset string // "" = no warning
	}{
		{"eagle3 default", engine.Speculative{Method: "eagle3", NumSpeculativeTokens: 4}, "EAGLE-3 (arXiv:2503.01840)", "MT-bench (LLaMA-Instruct-3.1-8B"},
		{"eagle default", engine.Speculative{Method: "eagle", NumSpeculativeTokens: 2}, "EAGLE (arXiv:2401.15077)", "MT-bench (Vicuna-7B"},
		{"ngram default", engine.Speculative{Method: "ngram", NumSpeculativeTokens: 2}, "Headroom's replay", "300 ShareGPT chat conversations"},
		{"draft model default", engine.Speculative{Method: "draft_model", NumSpeculativeTokens: 2, DraftModel: "llama-3.2-1b"}, "Leviathan et al.", "LaMDA dialog"},
		{"a measured rate", engine.Speculative{Method: "eagle3", NumSpeculativeTokens: 4, Acceptance: &engine.Acceptance{Rate: ptr(0.11), Source: "headroom calibrate on vllm+eagle stage 0"}},
			"scenario (rate): headroom calibrate on vllm+eagle stage 0", ""},
		{"per position, no source", engine.Speculative{Method: "eagle3", NumSpeculativeTokens: 2, Acceptance: &engine.Acceptance{PerPosition: []float64{0.1, 0.01}}}, "scenario (per_position)", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := scenario.Default()
			s.Workload.Requests = 20
			s.Engine.Speculative = &c.sp
			res, rep, _ := run(t, s)
			got := rep.Speculative
			if !strings.HasPrefix(got.AcceptanceSource, c.source) {
				t.Errorf("acceptance_source %q, want it to start %q", got.AcceptanceSource, c.source)
			}
			warned := slices.ContainsFunc(res.Warning, func(w string) bool { return strings.Contains(w, "published default") })
			switch {
			case c.warnDataset == "" && (got.AcceptanceWarning != "" || warned):
				t.Errorf("warning %q (resolved: %q) for acceptance the scenario gave", got.AcceptanceWarning, res.Warning)
			case c.warnDataset != "" && (!strings.Contains(got.AcceptanceWarning, c.warnDataset) || !warned):
				t.Errorf("warning %q (resolved: %q), want one naming %q", got.AcceptanceWarning, res.Warning, c.warnDataset)
			}
		})
	}
}

// The speculative section decodes from YAML, unknown keys are refused,
// and it survives encoding.
func TestSpeculativeDecode(t *testing.T) {
	doc := head + "engine:\n  speculative:\n    method: eagle3\n    num_speculative_tokens: 4\n    acceptance: {per_position: [0.8, 0.6, 0.45, 0.3]}\n"
	s, err := decode(t, doc)
	if err != nil {
		t.Fatal(err)
	}
	if sp := s.Engine.Speculative; sp == nil || sp.Method != "eagle3" || sp.NumSpeculativeTokens != 4 || len(sp.Acceptance.PerPosition) != 4 {
		t.Fatalf("decoded %+v", s.Engine.Speculative)
	}
	if s.Engine.MaxNumSeqs != 0 || !s.Engine.EnablePrefixCaching {
		t.Error("the section reset other engine defaults")
	}
	var enc bytes.Buffer
	if err := scenario.Encode(&enc, s); err != nil {
		t.Fatal(err)
	}
	again, err := scenario.Decode(&enc, "again")
	if err != nil || !reflect.DeepEqual(again.Engine.Speculative, s.Engine.Speculative) {
		t.Errorf("round trip: %v, %+v", err, again.Engine.Speculative)
	}
	for _, c := range []struct{ doc, field string }{
		{head + "engine:\n  speculative: {method: eagle, num_tokens: 3}\n", "engine.speculative.num_tokens"},
		{head + "engine:\n  speculative: {method: eagle, acceptance: {mean: 0.5}}\n", "engine.speculative.acceptance.mean"},
		{head + "engine:\n  speculative: {method: eagle, num_speculative_tokens: 2.5}\n", "engine.speculative.num_speculative_tokens"},
		{head + "engine:\n  speculative: {method: eagle, acceptance: {rate: high}}\n", "engine.speculative.acceptance.rate"},
	} {
		_, err := decode(t, c.doc)
		var de *scenario.DecodeError
		if !errors.As(err, &de) || de.Field != c.field {
			t.Errorf("%q: error %v, want one naming %s", c.doc, err, c.field)
		}
	}
}

// speedup simulates a closed loop of c users with and without s's
// speculation and returns the ratios plain/spec of mean TPOT and
// spec/plain of output throughput.
func speedup(t *testing.T, s scenario.Scenario, sp engine.Speculative, c int) (tpot, throughput float64) {
	t.Helper()
	s.Workload.Arrival.Type, s.Workload.Arrival.RateRPS, s.Workload.Arrival.Concurrency = "closed_loop", 0, c
	s.Workload.Requests = max(3*c, 60)
	_, plain, _ := run(t, s)
	s.Engine.Speculative = &sp
	_, spec, _ := run(t, s)
	return plain.TPOTMS.Mean / spec.TPOTMS.Mean, spec.Throughput.OutputTokensPerS / plain.Throughput.OutputTokensPerS
}

// Speculation's benefit falls as the batch grows: verifying 1 + k tokens
// per sequence is nearly free while a step reads weights and KV, and
// costs up to k + 1 times the matmul work once the step is compute-bound,
// where the accepted tokens no longer pay for it. Two cases on H100s
// (formula backend): Llama-3.1-70B on 4 GPUs drafted by Llama-3.2-1B
// (k = 4, Leviathan et al.'s α = 0.71), 512/256 tokens: over 2× faster
// for one user, slower than without speculation at the largest loads,
// and the TPOT speedup never rising with the load on the way. Llama-3.1-8B
// with EAGLE (k = 3, the paper's rates), 128/128 tokens: over 1.6× for one
// user (the proposer's 3.2 ms of host time costs a 7.8 ms step 40%),
// down to within 10% of none at 256 users; beyond that the API
// server's per-event cost paces the plain run (docs/speculative.md,
// "What it does"), so the speedup settles near 1 rather than below it.
func TestSpeculationCrossover(t *testing.T) {
	if testing.Short() {
		t.Skip("simulates 18 closed loops")
	}
	for _, c := range []struct {
		name        string
		model       string
		tp, in, out int
		sp          engine.Speculative
		users       []int
		firstAbove  float64
		lastBelow   float64
	}{
		{"draft model", "llama-3.1-70b", 4, 512, 256, engine.Speculative{Method: engine.SpecDraftModel, DraftModel: "llama-3.2-1b", NumSpeculativeTokens: 4},
			[]int{1, 16, 64, 128, 256, 512}, 2, 0.9},
		{"eagle", "llama-3.1-8b", 1, 128, 128, engine.Speculative{Method: engine.SpecEAGLE, NumSpeculativeTokens: 3},
			[]int{1, 64, 256}, 1.6, 1.1},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := scenario.Default()
			s.Model, s.TP = c.model, c.tp
			s.Workload.InputTokens.Value, s.Workload.OutputTokens.Value = c.in, c.out
			prev := math.Inf(1)
			var tpot, thr float64
			for _, u := range c.users {
				tpot, thr = speedup(t, s, c.sp, u)
				t.Logf("%4d users: TPOT speedup %.2f, output throughput ratio %.2f", u, tpot, thr)
				if tpot > prev+0.03 {
					t.Errorf("%d users: TPOT speedup %.2f rose from %.2f", u, tpot, prev)
				}
				if u == 1 && (tpot < c.firstAbove || thr < c.firstAbove) {
					t.Errorf("one user: TPOT speedup %.2f, throughput ratio %.2f; want both above %g", tpot, thr, c.firstAbove)
				}
				prev = tpot
			}
			if tpot >= c.lastBelow || thr >= c.lastBelow {
				t.Errorf("%d users: TPOT speedup %.2f, throughput ratio %.2f; want both below %g", c.users[len(c.users)-1], tpot, thr, c.lastBelow)
			}
		})
	}
}

// Data-parallel ranks of an MoE model step together; each rank's
// proposer runs inside the group's step (the MoE drafter layers of MTP
// exchange tokens like the target's).
func TestSpeculativeDataParallel(t *testing.T) {
	for _, c := range []struct {
		model, gpu string
		tp, dp     int
		sp         engine.Speculative
	}{
		{"qwen3-30b-a3b", "h100-sxm", 1, 2, engine.Speculative{Method: engine.SpecEAGLE3, NumSpeculativeTokens: 2}},
		{"deepseek-v3", "h200", 8, 2, engine.Speculative{Method: engine.SpecMTP, NumSpeculativeTokens: 1}},
	} {
		t.Run(c.model, func(t *testing.T) {
			s := scenario.Default()
			s.Model, s.GPU, s.TP, s.DP, s.ExpertParallel = c.model, c.gpu, c.tp, c.dp, true
			s.Workload.Requests = 120
			s.Engine.Speculative = &c.sp
			_, rep, _ := run(t, s)
			sp := rep.Speculative
			if rep.Requests.Completed != rep.Requests.Total || sp.Drafts == 0 || !(sp.ProposerTimeRatio > 0) || sp.MeanAcceptanceLength <= 1 {
				t.Errorf("requests %+v, speculative %+v", rep.Requests, sp)
			}
		})
	}
}
