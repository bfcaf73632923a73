package memory_test

import (
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/headroom-sim/headroom/catalogs"
	"github.com/headroom-sim/headroom/hardware"
	"github.com/headroom-sim/headroom/models"
	"github.com/headroom-sim/headroom/sim/engine"
	"github.com/headroom-sim/headroom/sim/memory"
)

func catalog(t testing.TB) *catalogs.Catalog {
	t.Helper()
	cat, err := catalogs.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	return cat
}

// setup resolves vLLM's defaults for model on gpu at tp, after edit.
func setup(t testing.TB, modelID, gpuID string, tp int, edit func(*engine.Config)) memory.Setup {
	t.Helper()
	cat := catalog(t)
	m, err := cat.Model(modelID)
	if err != nil {
		t.Fatal(err)
	}
	g, err := cat.GPU(gpuID)
	if err != nil {
		t.Fatal(err)
	}
	e := engine.Defaults()
	if edit != nil {
		edit(&e)
	}
	e, err = e.Resolve(m, g)
	if err != nil {
		t.Fatal(err)
	}
	return memory.Setup{Model: m, GPU: g, Precision: m.ResolvePrecision("", ""), TP: tp, Engine: e}
}

func catModel(t testing.TB, cat *catalogs.Catalog, id string) *models.Model {
	t.Helper()
	m, err := cat.Model(id)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }

// TestBlocksForTokens: full-attention layers hold ceil(n / block_size)
// blocks; a sliding-window group holds at most the window's blocks plus
// the one being written, ceil((window − 1) / block_size) + 1.
func TestBlocksForTokens(t *testing.T) {
	cat := catalog(t)
	gemma, mistral, llama := catModel(t, cat, "gemma-2-9b"), catModel(t, cat, "mistral-7b"), catModel(t, cat, "llama-3.1-8b")
	// gemma-2-9b: window 4096, 21 full + 21 sliding layers = 1 full group
	// + 1 sliding group; the sliding group is capped at
	// ceil(4095/16) + 1 = 257 blocks.
	// mistral-7b: window 4096 on all 32 layers, one group, capped at 257.
	for _, c := range []struct {
		name      string
		model     *models.Model
		blockSize int
		tokens    int
		want      int
	}{
		{"gemma one token", gemma, 16, 1, 1 + 1},
		{"gemma 100 tokens", gemma, 16, 100, 7 + 7},
		{"gemma at the window", gemma, 16, 4096, 256 + 256},
		{"gemma one past the window", gemma, 16, 4097, 257 + 257},
		{"gemma two blocks past the window", gemma, 16, 4113, 258 + 257},
		{"gemma at max_model_len", gemma, 16, 8192, 512 + 257},
		{"gemma block size 64", gemma, 64, 8192, 128 + 65}, // ceil(4095/64)+1 = 65
		{"mistral below the window", mistral, 16, 1000, 63},
		{"mistral at the window", mistral, 16, 4096, 256},
		{"mistral capped", mistral, 16, 4097, 257},
		{"mistral capped at max_model_len", mistral, 16, 32768, 257},
		{"llama uncapped", llama, 16, 131072, 8192},
		{"llama partial block", llama, 16, 17, 2},
		{"llama zero tokens", llama, 16, 0, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := memory.BlocksForTokens(c.model, c.blockSize, c.tokens); got != c.want {
				t.Errorf("BlocksForTokens(%d) = %d, want %d", c.tokens, got, c.want)
			}
		})
	}
}

// TestBlocksForTokensProperties: monotone in n, never above the uncapped
// count, and equal to it up to the window.
func TestBlocksForTokensProperties(t *testing.T) {
	cat := catalog(t)
	for _, id := range []string{"gemma-2-9b", "mistral-7b", "llama-3.1-8b", "gpt-oss-20b"} {
		m := catModel(t, cat, id)
		groups := 1
		if m.NumFullLayers() > 0 && m.NumSlidingLayers() > 0 {
			groups = 2 // equal counts in these catalog entries
		}
		for _, bs := range []int{1, 7, 16, 64} {
			prev := 0
			for n := 0; n <= 3*max(m.SlidingWindow, 512); n += 1 + n/50 {
				got := memory.BlocksForTokens(m, bs, n)
				uncapped := groups * ceilDiv(n, bs)
				if got < prev || got > uncapped {
					t.Fatalf("%s bs %d: BlocksForTokens(%d) = %d (previous %d, uncapped %d)", id, bs, n, got, prev, uncapped)
				}
				if m.SlidingWindow == 0 || n < m.SlidingWindow {
					if got != uncapped {
						t.Fatalf("%s bs %d: BlocksForTokens(%d) = %d below the window, want %d", id, bs, n, got, uncapped)
					}
				}
				prev = got
			}
		}
	}
}

// meanBlocksBruteForce is the mean of the blocks a request holds after
// each of its output tokens, one token at a time.
func meanBlocksBruteForce(m *models.Model, bs, prompt, output int) float64 {
	var sum float64
	for t := 1; t <= output; t++ {
		sum += float64(memory.BlocksForTokens(m, bs, prompt+t))
	}
	return sum / float64(output)
}

// TestMaxConcurrencyMeanBlocksIsExact compares the run-length sum in
// MaxConcurrency with a token-by-token loop.
//
// It fails today: after the first run the run boundaries are off by one
// token (a run starting at a length that is a multiple of block_size is
// credited with that length's block count for the whole next block), so
// the mean is up to one block too low. Fix in concurrency.go:
// next := ceilDiv(prompt+t, bs)*bs + 1 - prompt.
func TestMaxConcurrencyMeanBlocksIsExact(t *testing.T) {
	for _, c := range []struct {
		name           string
		prompt, output int
		want           float64 // by hand, block size 16, llama
	}{
		{"aligned run", 16, 16, 2},                // lengths 17..32: 2 blocks each
		{"crossing at the start", 15, 16, 1.9375}, // 16: 1 block, 17..31: 2
		{"hundred and hundred", 100, 100, 9.88},   // 101..112: 7, then 16 each of 8..12, 193..200: 13
		{"one token", 1, 1, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := setup(t, "llama-3.1-8b", "h100-sxm", 1, nil)
			p, err := memory.Compute(s)
			if err != nil {
				t.Fatal(err)
			}
			got, err := memory.MaxConcurrency(s, p, c.prompt, c.output, 0)
			if err != nil {
				t.Fatal(err)
			}
			if got.BlocksPerRequestMean != c.want {
				t.Errorf("BlocksPerRequestMean = %v, want %v", got.BlocksPerRequestMean, c.want)
			}
		})
	}
	r := rand.New(rand.NewPCG(1, 2))
	for _, id := range []string{"llama-3.1-8b", "gemma-2-9b", "mistral-7b"} {
		for _, bs := range []int{1, 8, 16, 64} {
			s := setup(t, id, "h100-sxm", 1, func(e *engine.Config) { e.BlockSize = bs; e.MaxModelLen = 8192 })
			p, err := memory.Compute(s)
			if err != nil {
				t.Fatal(err)
			}
			for range 200 {
				prompt, output := 1+r.IntN(6000), 1+r.IntN(2000)
				got, err := memory.MaxConcurrency(s, p, prompt, output, 0)
				if err != nil {
					t.Fatal(err)
				}
				if want := meanBlocksBruteForce(s.Model, bs, prompt, output); got.BlocksPerRequestMean != want {
					t.Fatalf("%s bs %d prompt %d output %d: mean blocks %v, brute force %v", id, bs, prompt, output, got.BlocksPerRequestMean, want)
				}
			}
		}
	}
}

// TestMaxConcurrencyFormula checks the answer's arithmetic against its own
// parts (independent of how the mean is summed).
func TestMaxConcurrencyFormula(t *testing.T) {
	for _, c := range []struct {
		name          string
		model         string
		maxNumSeqs    int
		prompt        int
		output        int
		fragmentation float64
		wantLimitedBy string
	}{
		{"long requests fill the KV cache", "llama-3.1-8b", 0, 2048, 512, 0, "kv_cache"},
		{"fragmentation lowers the KV answer", "llama-3.1-8b", 0, 2048, 512, 0.25, "kv_cache"},
		{"short requests hit max_num_seqs", "llama-3.1-8b", 8, 64, 64, 0, "max_num_seqs"},
		{"sliding window caps gemma's blocks", "gemma-2-9b", 0, 6000, 2000, 0.1, "kv_cache"},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := setup(t, c.model, "h100-sxm", 1, func(e *engine.Config) { e.MaxNumSeqs = c.maxNumSeqs })
			p, err := memory.Compute(s)
			if err != nil {
				t.Fatal(err)
			}
			got, err := memory.MaxConcurrency(s, p, c.prompt, c.output, c.fragmentation)
			if err != nil {
				t.Fatal(err)
			}
			bs := s.Engine.BlockSize
			if want := memory.BlocksForTokens(s.Model, bs, c.prompt+c.output); got.BlocksPerRequestFinal != want {
				t.Errorf("final blocks %d, want %d", got.BlocksPerRequestFinal, want)
			}
			// The mean lies between the blocks after the first output token
			// and the final count.
			lo := float64(memory.BlocksForTokens(s.Model, bs, c.prompt+1))
			if got.BlocksPerRequestMean < lo || got.BlocksPerRequestMean > float64(got.BlocksPerRequestFinal) {
				t.Errorf("mean blocks %v outside [%v, %d]", got.BlocksPerRequestMean, lo, got.BlocksPerRequestFinal)
			}
			wantKV := int(math.Floor(float64(p.NumGPUBlocks) / (got.BlocksPerRequestMean * (1 + c.fragmentation))))
			if got.MaxConcurrencyKV != wantKV {
				t.Errorf("max_concurrency_kv %d, want %d", got.MaxConcurrencyKV, wantKV)
			}
			if want := p.NumGPUBlocks / got.BlocksPerRequestFinal; got.MaxConcurrencyNoPreemption != want {
				t.Errorf("max_concurrency_no_preemption %d, want %d", got.MaxConcurrencyNoPreemption, want)
			}
			if got.MaxConcurrency != min(got.MaxConcurrencyKV, s.Engine.MaxNumSeqs) || got.LimitedBy != c.wantLimitedBy {
				t.Errorf("max_concurrency %d limited by %s; want min(%d, %d) limited by %s",
					got.MaxConcurrency, got.LimitedBy, got.MaxConcurrencyKV, s.Engine.MaxNumSeqs, c.wantLimitedBy)
			}
			if got.FragmentationRatio != c.fragmentation || got.PromptTokens != c.prompt || got.OutputTokens != c.output {
				t.Errorf("echoed inputs %+v", got)
			}
			if c.fragmentation > 0 {
				none, _ := memory.MaxConcurrency(s, p, c.prompt, c.output, 0)
				if got.MaxConcurrencyKV >= none.MaxConcurrencyKV {
					t.Errorf("fragmentation %v: %d requests, without %d", c.fragmentation, got.MaxConcurrencyKV, none.MaxConcurrencyKV)
				}
			}
		})
	}
}

func TestMaxConcurrencyRejects(t *testing.T) {
	for _, c := range []struct {
		name           string
		prompt, output int
		fragmentation  float64
		field          string
	}{
		{"no prompt", 0, 100, 0, "prompt_tokens"},
		{"negative prompt", -5, 100, 0, "prompt_tokens"},
		{"no output", 100, 0, 0, "output_tokens"},
		{"negative fragmentation", 100, 100, -0.1, "fragmentation"},
		{"fragmentation of one", 100, 100, 1, "fragmentation"},
		{"longer than max_model_len", 4000, 200, 0, "output_tokens"},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := setup(t, "llama-3.1-8b", "h100-sxm", 1, func(e *engine.Config) { e.MaxModelLen = 4096 })
			p, err := memory.Compute(s)
			if err != nil {
				t.Fatal(err)
			}
			_, err = memory.MaxConcurrency(s, p, c.prompt, c.output, c.fragmentation)
			var fe *hardware.FieldError
			if !errors.As(err, &fe) || fe.Field != c.field {
				t.Errorf("MaxConcurrency error %v, want a *FieldError for %s", err, c.field)
			}
		})
	}
}

func TestValidTP(t *testing.T) {
	cat := catalog(t)
	// An MLA model's KV cache is one latent vector per token, not per KV
	// head: only the attention heads must split. Give a copy of
	// DeepSeek-V3 a KV head count that would refuse tp 2 without MLA.
	mla := *catModel(t, cat, "deepseek-v3")
	mla.NumKVHeads = 3
	noMLA := mla
	noMLA.MLA = nil
	for _, c := range []struct {
		name  string
		model *models.Model
		tp    int
		want  bool
	}{
		{"llama-3.1-8b tp 1", catModel(t, cat, "llama-3.1-8b"), 1, true},
		{"llama-3.1-8b tp 8: 1 KV head each", catModel(t, cat, "llama-3.1-8b"), 8, true},
		{"llama-3.1-8b tp 16: 8 KV heads replicated", catModel(t, cat, "llama-3.1-8b"), 16, true},
		{"llama-3.1-8b tp 32: 8 KV heads replicated", catModel(t, cat, "llama-3.1-8b"), 32, true},
		{"llama-3.1-8b tp 3: heads do not split", catModel(t, cat, "llama-3.1-8b"), 3, false},
		{"llama-3.1-8b tp 0", catModel(t, cat, "llama-3.1-8b"), 0, false},
		{"llama-3.1-8b tp -2", catModel(t, cat, "llama-3.1-8b"), -2, false},
		{"qwen2.5-7b tp 4: 4 KV heads, 28 heads", catModel(t, cat, "qwen2.5-7b"), 4, true},
		{"qwen2.5-7b tp 7: 28 heads split, 4 KV heads neither divide nor replicate", catModel(t, cat, "qwen2.5-7b"), 7, false},
		{"qwen2.5-7b tp 14: 14 is no multiple of 4", catModel(t, cat, "qwen2.5-7b"), 14, false},
		{"qwen2.5-7b tp 28: KV heads replicated 7 times", catModel(t, cat, "qwen2.5-7b"), 28, true},
		{"qwen2.5-7b tp 8: heads do not split", catModel(t, cat, "qwen2.5-7b"), 8, false},
		{"deepseek-v3 tp 8", catModel(t, cat, "deepseek-v3"), 8, true},
		{"deepseek-v3 tp 64", catModel(t, cat, "deepseek-v3"), 64, true},
		{"deepseek-v3 tp 3", catModel(t, cat, "deepseek-v3"), 3, false},
		{"MLA ignores KV heads", &mla, 2, true},
		{"the same model without MLA", &noMLA, 2, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := memory.ValidTP(memory.Setup{Model: c.model}, c.tp); got != c.want {
				t.Errorf("ValidTP(%d) = %v, want %v", c.tp, got, c.want)
			}
		})
	}
}

func TestMinTPThatFits(t *testing.T) {
	for _, c := range []struct {
		name  string
		model string
		gpu   string
		edit  func(*engine.Config)
		prec  hardware.DType
		want  int
	}{
		{"llama-3.1-8b fits one h100", "llama-3.1-8b", "h100-sxm", nil, "", 1},
		// 70B bf16 is 131 GiB of weights: tp 2 leaves 2.8 GiB of KV cache,
		// short of one 131,072-token request (8192 blocks); tp 4 fits.
		{"llama-3.1-70b on h100 at its max_model_len", "llama-3.1-70b", "h100-sxm", nil, "", 4},
		{"llama-3.1-70b on h100 at 8k context", "llama-3.1-70b", "h100-sxm", func(e *engine.Config) { e.MaxModelLen = 8192 }, "", 2},
		// 405B bf16 is about 756 GiB of weights: 94.5 GiB per GPU at tp 8,
		// more than 0.9 × 79.65 GiB = 71.7 GiB, and an H100 node has 8
		// GPUs, so no tp up to one node fits (0), whatever max_model_len.
		{"llama-3.1-405b on h100", "llama-3.1-405b", "h100-sxm", nil, "", 0},
		{"llama-3.1-405b on h100 at 8k context", "llama-3.1-405b", "h100-sxm", func(e *engine.Config) { e.MaxModelLen = 8192 }, "", 0},
		// In fp8 the weights halve (about 47 GiB per GPU at tp 8): fits.
		{"llama-3.1-405b fp8 on h100", "llama-3.1-405b", "h100-sxm", nil, "fp8", 8},
		// 141 GB per H200: 94.5 GiB of weights fit at tp 8.
		{"llama-3.1-405b on h200", "llama-3.1-405b", "h200", nil, "", 8},
		{"mixtral-8x7b needs two h100", "mixtral-8x7b", "h100-sxm", nil, "", 2},
		// The weights fit one GPU but a 40,960-token request does not.
		{"qwen3-32b at max_model_len", "qwen3-32b", "h100-sxm", nil, "", 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := setup(t, c.model, c.gpu, 1, c.edit)
			s.Precision = s.Model.ResolvePrecision(c.prec, "")
			got := memory.MinTPThatFits(s)
			if got != c.want {
				t.Fatalf("MinTPThatFits = %d, want %d", got, c.want)
			}
			// The answer fits and every smaller valid power of two does not.
			for tp := 1; tp <= s.GPU.TPLimit(); tp *= 2 {
				if !memory.ValidTP(s, tp) {
					continue
				}
				t2 := s
				t2.TP = tp
				_, err := memory.Compute(t2)
				fits := err == nil
				if tp == got && !fits || (tp < got || got == 0) && fits {
					t.Errorf("tp %d: fits %v (err %v), but MinTPThatFits = %d", tp, fits, err, got)
				}
				if !fits && !errors.Is(err, memory.ErrDoesNotFit) {
					t.Errorf("tp %d: error %v does not wrap ErrDoesNotFit", tp, err)
				}
			}
		})
	}
}

// TestComputeExpertParallel: sharding qwen3-30b-a3b's 128 experts over
// more GPUs lowers the weights per GPU and leaves more for the KV cache.
func TestComputeExpertParallel(t *testing.T) {
	s := setup(t, "qwen3-30b-a3b", "h100-sxm", 1, nil)
	var prev memory.Profile
	for i, ep := range []int{1, 2, 4, 8} {
		s.EP = ep
		p, err := memory.Compute(s)
		if err != nil {
			t.Fatalf("ep %d: %v", ep, err)
		}
		if i > 0 && !(p.WeightsBytes < prev.WeightsBytes && p.NumGPUBlocks > prev.NumGPUBlocks) {
			t.Errorf("ep %d: weights %.2f GiB, %d blocks; ep %d: %.2f GiB, %d blocks",
				ep, p.WeightsBytes/hardware.GiB, p.NumGPUBlocks, ep/2, prev.WeightsBytes/hardware.GiB, prev.NumGPUBlocks)
		}
		prev = p
	}
	// EP 0 means off, the same as 1.
	s.EP = 0
	off, _ := memory.Compute(s)
	s.EP = 1
	one, _ := memory.Compute(s)
	if off != one {
		t.Errorf("ep 0 %+v differs from ep 1 %+v", off, one)
	}
	// A dense model's weights do not depend on EP.
	d := setup(t, "llama-3.1-8b", "h100-sxm", 1, nil)
	d.EP = 4
	pd, _ := memory.Compute(d)
	d.EP = 1
	p1, _ := memory.Compute(d)
	if pd.WeightsBytes != p1.WeightsBytes {
		t.Errorf("dense weights %v with ep 4, %v without", pd.WeightsBytes, p1.WeightsBytes)
	}
}

// TestNonTorchBytes: the fixed single-GPU cost, plus communicator buffers
// that grow with each tensor-parallel peer, more over NVLink than PCIe.
func TestNonTorchBytes(t *testing.T) {
	cat := catalog(t)
	gpu := func(id string) *hardware.GPU {
		g, err := cat.GPU(id)
		if err != nil {
			t.Fatal(err)
		}
		return g
	}
	nvlink, pcie := gpu("h100-sxm"), gpu("l40s")
	if nvlink.ScaleUp.Kind != "nvlink4" || pcie.ScaleUp.Kind != "pcie4" {
		t.Fatalf("scale-up kinds %q, %q: the test's premise changed", nvlink.ScaleUp.Kind, pcie.ScaleUp.Kind)
	}
	if a, b := memory.NonTorchBytes(nvlink, 1), memory.NonTorchBytes(pcie, 1); a != b || a <= 0 {
		t.Errorf("tp 1: %v over NVLink, %v over PCIe; want the same positive figure", a, b)
	}
	for _, g := range []*hardware.GPU{nvlink, pcie, gpu("mi300x"), gpu("a100-80gb"), gpu("rtx-4090")} {
		for tp := 2; tp <= 8; tp++ {
			if memory.NonTorchBytes(g, tp) <= memory.NonTorchBytes(g, tp-1) {
				t.Errorf("%s: non-torch bytes at tp %d not above tp %d", g.ID, tp, tp-1)
			}
		}
	}
	for tp := 2; tp <= 8; tp++ {
		if memory.NonTorchBytes(nvlink, tp) <= memory.NonTorchBytes(pcie, tp) {
			t.Errorf("tp %d: NVLink %v not above PCIe %v", tp, memory.NonTorchBytes(nvlink, tp), memory.NonTorchBytes(pcie, tp))
		}
	}
	// Infinity Fabric counts as a fast link, like NVLink.
	if a, b := memory.NonTorchBytes(gpu("mi300x"), 4), memory.NonTorchBytes(nvlink, 4); a != b {
		t.Errorf("mi300x tp 4: %v, h100 %v", a, b)
	}
}

func TestAnalyze(t *testing.T) {
	for _, c := range []struct {
		name           string
		model          string
		tp             int
		prompt, output int
		wantFits       bool
		wantMinTP      int
		wantBasis      string
		inReason       string
	}{
		{"fits, no request shape", "llama-3.1-8b", 1, 0, 0, true, 1, "max_model_len", ""},
		{"fits, with a request shape", "llama-3.1-8b", 1, 1024, 256, true, 1, "prompt_output", ""},
		{"70b on one GPU", "llama-3.1-70b", 1, 0, 0, false, 4, "max_model_len", "weights need"},
		{"70b on two GPUs, with a shape", "llama-3.1-70b", 2, 2048, 512, false, 4, "prompt_output", "max_model_len 131072"},
		{"70b on four GPUs", "llama-3.1-70b", 4, 2048, 512, true, 4, "prompt_output", ""},
		{"405b nowhere", "llama-3.1-405b", 8, 0, 0, false, 0, "max_model_len", "weights need"},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := setup(t, c.model, "h100-sxm", c.tp, nil)
			r, err := memory.Analyze(s, c.prompt, c.output, 0)
			if err != nil {
				t.Fatal(err)
			}
			if r.Fits != c.wantFits || r.MinTPThatFits != c.wantMinTP || r.MaxConcurrencyBasis != c.wantBasis {
				t.Errorf("fits %v min_tp %d basis %q; want %v %d %q", r.Fits, r.MinTPThatFits, r.MaxConcurrencyBasis, c.wantFits, c.wantMinTP, c.wantBasis)
			}
			if (r.Reason == "") != c.wantFits || !strings.Contains(r.Reason, c.inReason) {
				t.Errorf("reason %q, want one containing %q exactly when it does not fit", r.Reason, c.inReason)
			}
			if r.Model != s.Model.ID || r.GPU != s.GPU.ID || r.TP != c.tp || r.Engine != s.Engine {
				t.Errorf("echo: model %s gpu %s tp %d engine %+v", r.Model, r.GPU, r.TP, r.Engine)
			}
			pc := s.Model.Params()
			if r.Params.Total != pc.Total || r.Params.Active != pc.Active || pc.Total <= 0 {
				t.Errorf("params %+v, want %+v", r.Params, pc)
			}
			if r.Memory.KVCacheGiBPerGPU < 0 {
				t.Errorf("negative KV memory %v", r.Memory.KVCacheGiBPerGPU)
			}
			switch {
			case !c.wantFits:
				if r.MaxConcurrency != 0 {
					t.Errorf("max_concurrency %d when it does not fit", r.MaxConcurrency)
				}
			case c.wantBasis == "prompt_output":
				if r.Concurrency == nil || r.MaxConcurrency != r.Concurrency.MaxConcurrency || r.MaxConcurrency < 1 {
					t.Errorf("max_concurrency %d, details %+v", r.MaxConcurrency, r.Concurrency)
				}
			default:
				want := float64(r.KVCache.NumTokens) / float64(s.Engine.MaxModelLen)
				if r.Concurrency != nil || r.MaxConcurrency != int(r.KVCache.ConcurrencyAtMaxLenX) || math.Abs(r.KVCache.ConcurrencyAtMaxLenX-want) > 1e-4 {
					t.Errorf("max_concurrency %d, at max_model_len %v (want %v)", r.MaxConcurrency, r.KVCache.ConcurrencyAtMaxLenX, want)
				}
			}
			if c.wantFits {
				p, _ := memory.Compute(s)
				if r.KVCache.NumGPUBlocks != p.NumGPUBlocks || r.KVCache.NumTokens != p.NumTokens || r.KVCache.BlockSize != s.Engine.BlockSize {
					t.Errorf("kv_cache %+v, profile %+v", r.KVCache, p)
				}
			}
		})
	}
	// Invalid input is an error, not a report.
	s := setup(t, "llama-3.1-8b", "h100-sxm", 1, nil)
	if _, err := memory.Analyze(s, 100, 0, 0); err == nil {
		t.Error("Analyze with prompt tokens and no output tokens: no error")
	}
}

// TestComputeInvariants draws random settings and checks the profile's
// arithmetic: KV bytes = usable − weights − activation − non-torch, and
// the block count is the whole blocks that fit in it.
func TestComputeInvariants(t *testing.T) {
	cat := catalog(t)
	r := rand.New(rand.NewPCG(7, 11))
	modelIDs := []string{"llama-3.1-8b", "llama-3.1-70b", "gemma-2-9b", "mistral-7b", "qwen3-30b-a3b", "qwen2.5-7b", "deepseek-v3", "gpt-oss-20b", "codellama-34b"}
	gpuIDs := []string{"h100-sxm", "h200", "a100-80gb", "l40s", "mi300x", "rtx-4090", "b200"}
	fits := 0
	for i := range 1500 {
		m := catModel(t, cat, modelIDs[r.IntN(len(modelIDs))])
		g, _ := cat.GPU(gpuIDs[r.IntN(len(gpuIDs))])
		var tps []int
		for tp := 1; tp <= g.TPLimit(); tp++ {
			if memory.ValidTP(memory.Setup{Model: m}, tp) {
				tps = append(tps, tp)
			}
		}
		tp := tps[r.IntN(len(tps))]
		e := engine.Defaults()
		e.GPUMemoryUtilization = 0.3 + 0.7*r.Float64()
		e.MaxNumSeqs = 1 + r.IntN(1024)
		e.MaxNumBatchedTokens = e.MaxNumSeqs + r.IntN(16384)
		e.MaxModelLen = 1 + r.IntN(min(m.MaxPositions, 65536))
		e.BlockSize = []int{16, 32, 64}[r.IntN(3)]
		e, err := e.Resolve(m, g)
		if err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
		s := memory.Setup{Model: m, GPU: g, Precision: m.ResolvePrecision("", ""), TP: tp, Engine: e}
		p, err := memory.Compute(s)
		if p.UsableBytes != float64(g.MemoryBytes)*e.GPUMemoryUtilization {
			t.Fatalf("case %d: usable %v", i, p.UsableBytes)
		}
		if p.ActivationBytes != math.Max(p.ForwardPeakBytes, p.SamplerPeakBytes) || p.NonTorchBytes != memory.NonTorchBytes(g, tp) {
			t.Fatalf("case %d: activation %v (forward %v, sampler %v), non-torch %v", i, p.ActivationBytes, p.ForwardPeakBytes, p.SamplerPeakBytes, p.NonTorchBytes)
		}
		if want := p.UsableBytes - p.WeightsBytes - p.ActivationBytes - p.NonTorchBytes; p.KVCacheBytes != want {
			t.Fatalf("case %d: KV bytes %v, usable − weights − activation − non-torch = %v", i, p.KVCacheBytes, want)
		}
		if err != nil {
			if !errors.Is(err, memory.ErrDoesNotFit) {
				t.Fatalf("case %d: %v does not wrap ErrDoesNotFit", i, err)
			}
			continue
		}
		fits++
		b := float64(p.NumGPUBlocks)
		if !(b*p.BlockBytes <= p.KVCacheBytes && p.KVCacheBytes < (b+1)*p.BlockBytes) {
			t.Fatalf("case %d: %d blocks of %v bytes for %v KV bytes", i, p.NumGPUBlocks, p.BlockBytes, p.KVCacheBytes)
		}
		if p.NumTokens != p.NumGPUBlocks/p.KVGroups*e.BlockSize {
			t.Fatalf("case %d: %d tokens from %d blocks in %d groups", i, p.NumTokens, p.NumGPUBlocks, p.KVGroups)
		}
		if p.NumGPUBlocks < memory.BlocksForTokens(m, e.BlockSize, e.MaxModelLen) {
			t.Fatalf("case %d: fits with %d blocks, one max_model_len request needs %d", i, p.NumGPUBlocks, memory.BlocksForTokens(m, e.BlockSize, e.MaxModelLen))
		}
		// More memory never means fewer blocks.
		more := s
		more.Engine.GPUMemoryUtilization = math.Min(1, e.GPUMemoryUtilization+0.05)
		if q, err := memory.Compute(more); err != nil || q.NumGPUBlocks < p.NumGPUBlocks {
			t.Fatalf("case %d: utilization %v → %v: %d → %d blocks (%v)", i, e.GPUMemoryUtilization, more.Engine.GPUMemoryUtilization, p.NumGPUBlocks, q.NumGPUBlocks, err)
		}
	}
	if fits < 300 {
		t.Errorf("only %d of 1500 random settings fit: the draw tests too little", fits)
	}
}

// TestComputeBlockOverride: a logged block count replaces the model's.
func TestComputeBlockOverride(t *testing.T) {
	s := setup(t, "llama-3.1-8b", "h100-sxm", 1, func(e *engine.Config) { e.NumGPUBlocksOverride = 9000 })
	p, err := memory.Compute(s)
	if err != nil || p.NumGPUBlocks != 9000 || p.NumTokens != 9000*16 {
		t.Errorf("override: %d blocks, %d tokens, %v", p.NumGPUBlocks, p.NumTokens, err)
	}
	// Too few blocks for one max_model_len request does not fit.
	s = setup(t, "llama-3.1-8b", "h100-sxm", 1, func(e *engine.Config) { e.NumGPUBlocksOverride = 10; e.MaxModelLen = 4096 })
	if _, err := memory.Compute(s); !errors.Is(err, memory.ErrDoesNotFit) {
		t.Errorf("10 blocks for a 4096-token request: %v", err)
	}
}
