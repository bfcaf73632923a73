package stepreport_test

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/headroom-sim/headroom/catalogs"
	"github.com/headroom-sim/headroom/hardware"
	"github.com/headroom-sim/headroom/internal/adapter/kerneldb"
	"github.com/headroom-sim/headroom/internal/study/scenario"
	"github.com/headroom-sim/headroom/internal/study/stepreport"
	"github.com/headroom-sim/headroom/models"
	"github.com/headroom-sim/headroom/sim/memory"
	"github.com/headroom-sim/headroom/sim/steptime"
)

func env(t *testing.T) scenario.Env {
	t.Helper()
	cat, err := catalogs.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	p := &kerneldb.Provider{BuiltIn: catalogs.Kernels()}
	return scenario.Env{Catalog: cat, KernelDB: p.Load}
}

func sc(model, gpu string, tp int, backend string) scenario.Scenario {
	s := scenario.Default()
	s.Model, s.GPU, s.TP = model, gpu, tp
	s.StepTime.Backend = backend
	return s
}

func explain(t *testing.T, req stepreport.Request, e scenario.Env) *stepreport.Report {
	t.Helper()
	r, err := stepreport.Explain(req, e)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func near(a, b, tol float64) bool { return math.Abs(a-b) <= tol }

// TestTotals: the kernels add up to the GPU time, the op kinds and the
// bounds to what they split, and the step is the one the simulator's
// step-time model prices through its own (memoised) path.
func TestTotals(t *testing.T) {
	e := env(t)
	cases := []struct {
		name string
		req  stepreport.Request
	}{
		{"dense decode, table", stepreport.Request{Scenario: sc("llama-3.1-8b", "h100-sxm", 1, "table"), Batch: stepreport.Batch{DecodeSeqs: 64, KVLen: 2048}}},
		{"dense mixed, formula", stepreport.Request{Scenario: sc("llama-3.1-8b", "h100-sxm", 2, "formula"), Batch: stepreport.Batch{DecodeSeqs: 16, KVLen: 900, PrefillTokens: 700, PrefillContextTokens: 300}}},
		{"moe ep over dp, table", stepreport.Request{Scenario: func() scenario.Scenario {
			s := sc("qwen3-30b-a3b", "h200", 1, "table")
			s.DP, s.ExpertParallel = 4, true
			return s
		}(), Batch: stepreport.Batch{DecodeSeqs: 32, KVLen: 1500}}},
		{"sliding window, eager", stepreport.Request{Scenario: sc("gpt-oss-120b", "h100-sxm", 2, "table"), Batch: stepreport.Batch{DecodeSeqs: 8, KVLen: 4096, PrefillTokens: 600, PrefillChunks: 2}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := explain(t, c.req, e)
			var kernels, ops, bounds, shares float64
			for _, k := range r.Kernels {
				kernels += k.TimeUS
				shares += k.ShareRatio
			}
			for _, o := range r.Ops {
				ops += o.TimeUS
			}
			for _, b := range r.Bounds {
				bounds += b.TimeUS
			}
			tol := 0.001 * float64(len(r.Kernels)+1) // each figure rounded to the ns
			if !near(kernels, r.GPUMS*1e3, tol) || !near(ops, r.GPUMS*1e3, tol) {
				t.Errorf("kernels sum to %.3f µs, op kinds to %.3f, gpu_ms = %.6f", kernels, ops, r.GPUMS)
			}
			if !near(bounds, r.StepMS*1e3, tol) {
				t.Errorf("bounds sum to %.3f µs, step_ms = %.6f", bounds, r.StepMS)
			}
			if !near(r.GPUMS+r.CPUMS-r.CPUHiddenMS, r.StepMS, 1e-5) {
				t.Errorf("gpu %.6f + cpu %.6f − hidden %.6f ≠ step %.6f", r.GPUMS, r.CPUMS, r.CPUHiddenMS, r.StepMS)
			}
			if unhidden := (r.CPUMS - r.CPUHiddenMS) / r.StepMS; !near(shares+unhidden, 1, 0.0001*float64(len(r.Kernels)+1)) {
				t.Errorf("kernel shares %.4f + unhidden CPU %.4f ≠ 1", shares, unhidden)
			}
			// The simulator's model, built from the scenario independently.
			s := c.req.Scenario
			res, err := s.Resolve(e)
			if err != nil {
				t.Fatal(err)
			}
			sm, err := res.Config.StepModel()
			if err != nil {
				t.Fatal(err)
			}
			b := c.req.Batch
			var mb = batchOf(b, res.Config.Model.SlidingWindow)
			if want := sm.StepTime(&mb) * 1e3; !near(r.StepMS, want, 1e-6) {
				t.Errorf("step_ms = %.6f, the simulator's step time is %.6f", r.StepMS, want)
			}
		})
	}
}

// TestHandComputed sets the CPU and API-server coefficients through a
// calibration and checks the times they give against figures worked out by
// hand.
func TestHandComputed(t *testing.T) {
	e := env(t)
	g, _ := e.Catalog.GPU("h100-sxm")
	prof := steptime.DefaultProfile(g)
	prof.CPU = steptime.CPUCoeffs{StepOverheadUS: 1000, PerSeqOverheadUS: 10, PerPrefillOverheadUS: 50, AsyncOverlap: 0.5}
	prof.Frontend.PerStepUS, prof.Frontend.PerOutputTokenUS = 100, 30
	e.Calibration = func(string) (*steptime.Profile, error) { return &prof, nil }
	s := sc("llama-3.1-8b", "h100-sxm", 1, "formula")
	s.Calibration = "hand"
	// 4 decoding sequences and 2 chunks completing their prompts.
	r := explain(t, stepreport.Request{Scenario: s, Batch: stepreport.Batch{DecodeSeqs: 4, KVLen: 100, PrefillTokens: 200, PrefillChunks: 2}}, e)
	// CPU: 1000 + 10 × 6 sequences + 50 × 2 prefills = 1160 µs; half of it
	// hidden behind the (longer) GPU time.
	if r.CPUMS != 1.16 || r.CPUHiddenMS != 0.58 {
		t.Errorf("cpu %.6f ms, hidden %.6f ms; want 1.16 and 0.58", r.CPUMS, r.CPUHiddenMS)
	}
	// API server: 100 + 30 × 6 sampled tokens = 280 µs.
	if r.FrontendMS != 0.28 {
		t.Errorf("frontend_ms %.6f, want 0.28", r.FrontendMS)
	}
	// 4 + 2 × 200 = 404 token rows; blocks: 4 × ceil(100/16) + 2 × ceil(200/16) = 28 + 26.
	if b := r.Batch; b.Tokens != 404 || b.Sampled != 6 || b.KVBlocks != 54 {
		t.Errorf("batch %+v: want 404 tokens, 6 sampled, 54 KV blocks", b)
	}
	if r.TPOTMS != nil {
		t.Errorf("a prefilling batch implies no TPOT, got %v", *r.TPOTMS)
	}
	if want := math.Round(404/(r.StepMS*1e-3)*10) / 10; !near(r.TokensPerS, want, 0.2) {
		t.Errorf("tokens_per_s %.1f, want %.1f", r.TokensPerS, want)
	}
	// Without async scheduling nothing is hidden.
	s.Engine.AsyncScheduling = false
	r = explain(t, stepreport.Request{Scenario: s, Batch: stepreport.Batch{DecodeSeqs: 4, KVLen: 100}}, e)
	if r.CPUHiddenMS != 0 || !near(r.StepMS, r.GPUMS+r.CPUMS, 1e-6) || r.CPUMS != 1.04 {
		t.Errorf("sync: cpu %.6f (want 1.04), hidden %.6f, gpu %.6f, step %.6f", r.CPUMS, r.CPUHiddenMS, r.GPUMS, r.StepMS)
	}
	if r.TPOTMS == nil || *r.TPOTMS != r.StepMS {
		t.Errorf("pure decode: tpot_ms %v, want the step %.6f", r.TPOTMS, r.StepMS)
	}
}

// TestMeasured: the formula backend never sets a measured value; the
// table backend sets one only for a kernel whose source is a measured
// shape, and then (uncalibrated, graph replay) the prediction is it.
func TestMeasured(t *testing.T) {
	e := env(t)
	b := stepreport.Batch{DecodeSeqs: 64, KVLen: 2048}
	for _, k := range explain(t, stepreport.Request{Scenario: sc("llama-3.1-8b", "h100-sxm", 1, "formula"), Batch: b}, e).Kernels {
		if k.MeasuredUS != nil || !strings.HasPrefix(k.Source, "formula") {
			t.Errorf("formula backend: %s has measured %v, source %q", k.Name, k.MeasuredUS, k.Source)
		}
	}
	r := explain(t, stepreport.Request{Scenario: sc("llama-3.1-8b", "h100-sxm", 1, "table"), Batch: b}, e)
	if r.Backend != "table" || r.KernelDB == nil || r.KernelDB.System != "h100_sxm" {
		t.Fatalf("backend %s, kernel db %+v", r.Backend, r.KernelDB)
	}
	n := 0
	for _, k := range r.Kernels {
		exact := strings.HasSuffix(k.Source, "(measured shape)")
		if exact != (k.MeasuredUS != nil) {
			t.Errorf("%s: source %q, measured %v", k.Name, k.Source, k.MeasuredUS)
		}
		if k.MeasuredUS != nil {
			n++
			if !near(*k.MeasuredUS, k.PerCallUS, 0.002) {
				t.Errorf("%s: predicted %.3f µs a call at a measured shape of %.3f µs", k.Name, k.PerCallUS, *k.MeasuredUS)
			}
		}
	}
	if n == 0 {
		t.Error("no kernel at a measured shape (qkv_proj m=64 is one)")
	}
}

func TestExplainErrors(t *testing.T) {
	e := env(t)
	dense := sc("llama-3.1-8b", "h100-sxm", 1, "")
	moe := sc("qwen3-30b-a3b", "h200", 2, "")
	small := dense
	small.Engine.MaxNumSeqs, small.Engine.MaxNumBatchedTokens, small.Engine.MaxModelLen = 8, 1024, 4096
	v0 := dense
	v0.Engine.Scheduler, v0.Engine.EnableChunkedPrefill = "v0", false
	tight := dense
	tight.Engine.NumGPUBlocksOverride, tight.Engine.MaxModelLen = 100, 1024
	d := func(b stepreport.Batch) stepreport.Request { return stepreport.Request{Scenario: dense, Batch: b} }
	cases := []struct {
		name   string
		req    stepreport.Request
		field  string
		reason string
	}{
		{"empty batch", d(stepreport.Batch{}), stepreport.FieldDecodeSeqs, "the batch is empty"},
		{"negative decode", d(stepreport.Batch{DecodeSeqs: -1, KVLen: 5}), stepreport.FieldDecodeSeqs, "is not in [0,"},
		{"decode without kv_len", d(stepreport.Batch{DecodeSeqs: 4}), stepreport.FieldKVLen, "is required"},
		{"kv_len without decode", d(stepreport.Batch{KVLen: 4, PrefillTokens: 8}), stepreport.FieldKVLen, "has none"},
		{"chunks without prefill", d(stepreport.Batch{DecodeSeqs: 1, KVLen: 5, PrefillChunks: 2}), stepreport.FieldPrefillChunks, "has none"},
		{"context without prefill", d(stepreport.Batch{DecodeSeqs: 1, KVLen: 5, PrefillContextTokens: 2}), stepreport.FieldPrefillContext, "has none"},
		{"kv_len past max_model_len", stepreport.Request{Scenario: small, Batch: stepreport.Batch{DecodeSeqs: 1, KVLen: 5000}}, stepreport.FieldKVLen, "exceeds max_model_len 4096"},
		{"prefill past max_model_len", stepreport.Request{Scenario: small, Batch: stepreport.Batch{PrefillTokens: 1000, PrefillContextTokens: 3500}}, stepreport.FieldPrefillTokens, "exceed max_model_len 4096"},
		{"too many sequences", stepreport.Request{Scenario: small, Batch: stepreport.Batch{DecodeSeqs: 9, KVLen: 10}}, stepreport.FieldDecodeSeqs, "exceed max_num_seqs 8"},
		{"too many chunks", stepreport.Request{Scenario: small, Batch: stepreport.Batch{DecodeSeqs: 6, KVLen: 10, PrefillTokens: 10, PrefillChunks: 3}}, stepreport.FieldPrefillChunks, "exceed max_num_seqs 8"},
		{"over the token budget", stepreport.Request{Scenario: small, Batch: stepreport.Batch{DecodeSeqs: 4, KVLen: 10, PrefillTokens: 1021}}, stepreport.FieldPrefillTokens, "1025 tokens (4 decoding + 1 × 1021 prefill) exceed max_num_batched_tokens 1024"},
		{"v0 without chunking mixes", stepreport.Request{Scenario: v0, Batch: stepreport.Batch{DecodeSeqs: 4, KVLen: 10, PrefillTokens: 100}}, stepreport.FieldPrefillTokens, "separate steps"},
		{"beyond the KV cache", stepreport.Request{Scenario: tight, Batch: stepreport.Batch{DecodeSeqs: 7, KVLen: 16*15 + 1}}, stepreport.FieldKVLen, "holds 112 KV blocks of 16 tokens, the cache has 100"},
		{"split of a dense model", stepreport.Request{Scenario: dense, Batch: stepreport.Batch{DecodeSeqs: 1, KVLen: 8}, MoEEP: 1}, stepreport.FieldMoEEP, "has no routed experts"},
		{"split not covering the GPUs", stepreport.Request{Scenario: moe, Batch: stepreport.Batch{DecodeSeqs: 1, KVLen: 8}, MoETP: 1, MoEEP: 4}, stepreport.FieldMoEEP, "must equal tp × dp = 2 GPUs"},
		{"split not dividing the GPUs", stepreport.Request{Scenario: moe, Batch: stepreport.Batch{DecodeSeqs: 1, KVLen: 8}, MoETP: 3}, stepreport.FieldMoETP, "does not divide tp × dp = 2"},
		{"split with expert_parallel", stepreport.Request{Scenario: func() scenario.Scenario { s := moe; s.ExpertParallel = true; return s }(), Batch: stepreport.Batch{DecodeSeqs: 1, KVLen: 8}, MoEEP: 2}, stepreport.FieldMoEEP, "not both"},
		{"scenario's own field", stepreport.Request{Scenario: func() scenario.Scenario { s := dense; s.TP = 3; return s }(), Batch: stepreport.Batch{DecodeSeqs: 1, KVLen: 8}}, "tp", "does not divide"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := stepreport.Explain(c.req, e)
			var fe *hardware.FieldError
			if !errors.As(err, &fe) || fe.Field != c.field || !strings.Contains(fe.Reason, c.reason) {
				t.Fatalf("got %v, want %s: …%s…", err, c.field, c.reason)
			}
		})
	}
	if _, err := stepreport.Explain(stepreport.Request{Scenario: sc("llama-3.1-70b", "h100-sxm", 1, ""), Batch: stepreport.Batch{DecodeSeqs: 1, KVLen: 8}}, e); !errors.Is(err, memory.ErrDoesNotFit) {
		t.Errorf("70B on one H100: %v, want ErrDoesNotFit", err)
	}
}

// TestLayout: an explicit split, data-parallel token rows in the MoE
// layers, eager steps and partial prefills show in the report.
func TestLayout(t *testing.T) {
	e := env(t)
	s := sc("qwen3-30b-a3b", "h200", 2, "table")
	s.DP = 4
	r := explain(t, stepreport.Request{Scenario: s, Batch: stepreport.Batch{DecodeSeqs: 10, KVLen: 100}, MoEEP: 4}, e)
	if x := r.Experts; x == nil || x.MoETP != 2 || x.MoEEP != 4 || x.PerGPU != 32 || r.GPUs != 8 {
		t.Fatalf("experts %+v over %d GPUs; want moe_tp 2 × moe_ep 4, 32 per GPU, 8 GPUs", r.Experts, r.GPUs)
	}
	if r.Batch.MoEGroupTokens != 40 || !near(r.ReplicaTokensPerS, 4*r.TokensPerS, 0.5) {
		t.Errorf("moe_group_tokens %d (want 40), replica %.1f tokens/s vs %.1f per rank", r.Batch.MoEGroupTokens, r.ReplicaTokensPerS, r.TokensPerS)
	}
	var moe bool
	for _, k := range r.Kernels {
		if k.Op == "moe_experts" {
			moe = strings.Contains(k.Shape, "40 tokens")
		}
	}
	if !moe {
		t.Error("the fused MoE kernel does not run the 40 rows of the four ranks")
	}

	r = explain(t, stepreport.Request{Scenario: sc("llama-3.1-8b", "h100-sxm", 1, "formula"), Batch: stepreport.Batch{PrefillTokens: 513, PrefillPartial: true}}, e)
	if r.Engine.CUDAGraph || r.Engine.CUDAGraphMaxTokens != 512 || r.Batch.Sampled != 0 || r.OutputTokensPerS != 0 {
		t.Errorf("513-token partial prefill: graph %v (max %d), sampled %d", r.Engine.CUDAGraph, r.Engine.CUDAGraphMaxTokens, r.Batch.Sampled)
	}
	for _, k := range r.Kernels {
		if k.Op == "lm_head" {
			t.Errorf("a step that samples nothing runs %s", k.Name)
		}
	}
	if !strings.Contains(strings.Join(r.Notes, "\n"), "eager step") {
		t.Errorf("notes %q do not say the step is eager", r.Notes)
	}
}

// batchOf builds the batch the simulator would: one AddDecode per decoding
// sequence, one AddPrefill per chunk.
func batchOf(b stepreport.Batch, window int) models.Batch {
	var mb models.Batch
	for range b.DecodeSeqs {
		mb.AddDecode(b.KVLen, window)
	}
	for range max(b.PrefillChunks, 1) {
		if b.PrefillTokens > 0 {
			mb.AddPrefill(b.PrefillTokens, b.PrefillContextTokens, window, !b.PrefillPartial)
		}
	}
	return mb
}
