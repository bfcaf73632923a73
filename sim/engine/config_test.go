package engine_test

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/headroom-sim/headroom/catalogs"
	"github.com/headroom-sim/headroom/hardware"
	"github.com/headroom-sim/headroom/models"
	"github.com/headroom-sim/headroom/sim/engine"
)

func builtin(t *testing.T) *catalogs.Catalog {
	t.Helper()
	cat, err := catalogs.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	return cat
}

func gpu(t *testing.T, id string) *hardware.GPU {
	t.Helper()
	g, err := builtin(t).GPU(id)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func model(t *testing.T, id string) *models.Model {
	t.Helper()
	m, err := builtin(t).Model(id)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestDefaultBatchLimits mirrors vllm/engine/arg_utils.py: 8192 tokens and
// 1024 sequences on GPUs with at least 70 GiB that are not A100s, 2048 and
// 256 otherwise.
func TestDefaultBatchLimits(t *testing.T) {
	for _, c := range []struct {
		gpu            string
		wantMBT, wantS int
	}{
		{"h100-sxm", 8192, 1024},
		{"h100-pcie", 8192, 1024},
		{"h200", 8192, 1024},
		{"b200", 8192, 1024},
		{"mi300x", 8192, 1024},
		{"a100-80gb", 2048, 256}, // >= 70 GiB, but an A100
		{"a100-40gb", 2048, 256},
		{"l40s", 2048, 256}, // 48 GB
		{"rtx-4090", 2048, 256},
	} {
		t.Run(c.gpu, func(t *testing.T) {
			mbt, seqs := engine.DefaultBatchLimits(gpu(t, c.gpu))
			if mbt != c.wantMBT || seqs != c.wantS {
				t.Errorf("DefaultBatchLimits = %d, %d; want %d, %d", mbt, seqs, c.wantMBT, c.wantS)
			}
		})
	}
}

// TestDefaultBatchLimitsRule exercises the rule on user-defined GPUs: the
// 70 GiB threshold is inclusive, and "a100" is matched in the id or the
// name, in any case.
func TestDefaultBatchLimitsRule(t *testing.T) {
	for _, c := range []struct {
		name     string
		gpu      hardware.GPU
		wantSeqs int
	}{
		{"exactly 70 GiB", hardware.GPU{ID: "x", Name: "X", MemoryBytes: 70 * hardware.GiB}, 1024},
		{"just under 70 GiB", hardware.GPU{ID: "x", Name: "X", MemoryBytes: 70*hardware.GiB - 1}, 256},
		{"A100 in the name only", hardware.GPU{ID: "my-card", Name: "NVIDIA A100 80GB PCIe", MemoryBytes: 80 * hardware.GiB}, 256},
		{"a100 in the id only", hardware.GPU{ID: "custom-a100", Name: "Custom", MemoryBytes: 80 * hardware.GiB}, 256},
		{"large non-A100", hardware.GPU{ID: "big", Name: "Big accelerator", MemoryBytes: 141 * hardware.GiB}, 1024},
	} {
		t.Run(c.name, func(t *testing.T) {
			mbt, seqs := engine.DefaultBatchLimits(&c.gpu)
			wantMBT := map[int]int{1024: 8192, 256: 2048}[c.wantSeqs]
			if mbt != wantMBT || seqs != c.wantSeqs {
				t.Errorf("DefaultBatchLimits = %d, %d; want %d, %d", mbt, seqs, wantMBT, c.wantSeqs)
			}
		})
	}
}

func TestDefaultBlockSize(t *testing.T) {
	for _, c := range []struct {
		model string
		want  int
	}{
		{"deepseek-v3", 64}, // MLA: FlashMLA needs 64-token blocks
		{"llama-3.1-8b", 16},
		{"gemma-2-9b", 16},
		{"qwen3-30b-a3b", 16}, // MoE without MLA
		{"gpt-oss-20b", 16},
	} {
		t.Run(c.model, func(t *testing.T) {
			if got := engine.DefaultBlockSize(model(t, c.model)); got != c.want {
				t.Errorf("DefaultBlockSize = %d, want %d", got, c.want)
			}
		})
	}
}

func TestResolveFillsDefaults(t *testing.T) {
	for _, c := range []struct {
		name  string
		model string
		gpu   string
		in    func(*engine.Config)
		want  func(*engine.Config) // applied to Defaults()
	}{
		{
			name: "llama-3.1-8b on h100", model: "llama-3.1-8b", gpu: "h100-sxm",
			in: func(*engine.Config) {},
			want: func(c *engine.Config) {
				c.MaxModelLen, c.MaxNumSeqs, c.MaxNumBatchedTokens, c.BlockSize = 131072, 1024, 8192, 16
			},
		},
		{
			name: "llama-3.1-8b on a100-80gb", model: "llama-3.1-8b", gpu: "a100-80gb",
			in: func(*engine.Config) {},
			want: func(c *engine.Config) {
				c.MaxModelLen, c.MaxNumSeqs, c.MaxNumBatchedTokens, c.BlockSize = 131072, 256, 2048, 16
			},
		},
		{
			name: "deepseek-v3 on h200", model: "deepseek-v3", gpu: "h200",
			in: func(*engine.Config) {},
			want: func(c *engine.Config) {
				c.MaxModelLen, c.MaxNumSeqs, c.MaxNumBatchedTokens, c.BlockSize = 163840, 1024, 8192, 64
			},
		},
		{
			name: "chunked prefill off raises max_num_batched_tokens to max_model_len", model: "llama-3.1-8b", gpu: "h100-sxm",
			in: func(c *engine.Config) { c.EnableChunkedPrefill = false },
			want: func(c *engine.Config) {
				c.EnableChunkedPrefill = false
				c.MaxModelLen, c.MaxNumSeqs, c.MaxNumBatchedTokens, c.BlockSize = 131072, 1024, 131072, 16
			},
		},
		{
			name: "chunked prefill off keeps the default when max_model_len is shorter", model: "llama-3.1-8b", gpu: "h100-sxm",
			in: func(c *engine.Config) { c.EnableChunkedPrefill, c.MaxModelLen = false, 4096 },
			want: func(c *engine.Config) {
				c.EnableChunkedPrefill = false
				c.MaxModelLen, c.MaxNumSeqs, c.MaxNumBatchedTokens, c.BlockSize = 4096, 1024, 8192, 16
			},
		},
		{
			name: "chunked prefill off on a small GPU", model: "llama-2-7b", gpu: "l40s",
			in: func(c *engine.Config) { c.EnableChunkedPrefill = false },
			want: func(c *engine.Config) {
				c.EnableChunkedPrefill = false
				c.MaxModelLen, c.MaxNumSeqs, c.MaxNumBatchedTokens, c.BlockSize = 4096, 256, 4096, 16
			},
		},
		{
			name: "given values are kept", model: "llama-3.1-8b", gpu: "h100-sxm",
			in: func(c *engine.Config) {
				c.MaxModelLen, c.MaxNumSeqs, c.MaxNumBatchedTokens, c.BlockSize = 8192, 64, 512, 32
			},
			want: func(c *engine.Config) {
				c.MaxModelLen, c.MaxNumSeqs, c.MaxNumBatchedTokens, c.BlockSize = 8192, 64, 512, 32
			},
		},
		{
			name: "empty scheduler and preemption mode get vLLM's", model: "llama-3.1-8b", gpu: "h100-sxm",
			in: func(c *engine.Config) { c.Scheduler, c.PreemptionMode = "", "" },
			want: func(c *engine.Config) {
				c.MaxModelLen, c.MaxNumSeqs, c.MaxNumBatchedTokens, c.BlockSize = 131072, 1024, 8192, 16
			},
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			in := engine.Defaults()
			c.in(&in)
			got, err := in.Resolve(model(t, c.model), gpu(t, c.gpu))
			if err != nil {
				t.Fatal(err)
			}
			want := engine.Defaults()
			c.want(&want)
			if got != want {
				t.Errorf("Resolve =\n%+v\nwant\n%+v", got, want)
			}
			// Resolving twice changes nothing.
			again, err := got.Resolve(model(t, c.model), gpu(t, c.gpu))
			if err != nil || again != got {
				t.Errorf("Resolve is not idempotent: %+v, %v", again, err)
			}
		})
	}
}

func TestDefaultsAreVLLMs(t *testing.T) {
	d := engine.Defaults()
	want := engine.Config{
		GPUMemoryUtilization: 0.9, EnableChunkedPrefill: true, EnablePrefixCaching: true,
		Scheduler: engine.SchedulerV1, PreemptionMode: engine.PreemptRecompute, SwapSpaceGiB: 4, AsyncScheduling: true,
	}
	if d != want {
		t.Errorf("Defaults() = %+v, want %+v", d, want)
	}
}

// TestResolveRejects checks that every invalid setting is reported as a
// *FieldError naming that setting.
func TestResolveRejects(t *testing.T) {
	for _, c := range []struct {
		name     string
		set      func(*engine.Config)
		field    string
		inReason string
	}{
		{"utilization zero", func(c *engine.Config) { c.GPUMemoryUtilization = 0 }, "gpu_memory_utilization", "not in (0, 1]"},
		{"utilization above one", func(c *engine.Config) { c.GPUMemoryUtilization = 1.01 }, "gpu_memory_utilization", "1.01"},
		{"utilization negative", func(c *engine.Config) { c.GPUMemoryUtilization = -0.5 }, "gpu_memory_utilization", "-0.5"},
		{"max_num_seqs negative", func(c *engine.Config) { c.MaxNumSeqs = -1 }, "max_num_seqs", "not in [1, 1048576]"},
		{"max_num_seqs huge", func(c *engine.Config) { c.MaxNumSeqs, c.MaxNumBatchedTokens = 1<<40, 1<<41 }, "max_num_seqs", "not in [1, 1048576]"},
		{"max_num_batched_tokens negative", func(c *engine.Config) { c.MaxNumBatchedTokens = -1 }, "max_num_batched_tokens", "not in [1, 16777216]"},
		{"max_num_batched_tokens huge", func(c *engine.Config) { c.MaxNumBatchedTokens = 1<<24 + 1 }, "max_num_batched_tokens", "not in [1, 16777216]"},
		{"max_model_len negative", func(c *engine.Config) { c.MaxModelLen = -5 }, "max_model_len", ">= 1"},
		{"max_model_len beyond the model", func(c *engine.Config) { c.MaxModelLen = 131073 }, "max_model_len", "max_position_embeddings 131072"},
		{"block_size negative", func(c *engine.Config) { c.BlockSize = -16 }, "block_size", "not one of vLLM's block sizes"},
		{"block_size too large", func(c *engine.Config) { c.BlockSize = 2048 }, "block_size", "2048"},
		{"block_size 3 (vLLM refuses it)", func(c *engine.Config) { c.BlockSize = 3 }, "block_size", "[1 8 16 32 64 128 256]"},
		{"block_size 1024 (vLLM refuses it)", func(c *engine.Config) { c.BlockSize = 1024 }, "block_size", "1024 is not one of"},
		{"long prefill threshold negative", func(c *engine.Config) { c.LongPrefillTokenThreshold = -1 }, "long_prefill_token_threshold", ">= 0"},
		{"unknown scheduler", func(c *engine.Config) { c.Scheduler = "v2" }, "scheduler", `"v2"`},
		{"unknown preemption mode", func(c *engine.Config) { c.PreemptionMode = "drop" }, "preemption_mode", `"drop"`},
		{"negative swap space", func(c *engine.Config) { c.SwapSpaceGiB = -1 }, "swap_space_gib", "not in [0, 1048576]"},
		{"NaN swap space", func(c *engine.Config) { c.SwapSpaceGiB = math.NaN() }, "swap_space_gib", "not in [0, 1048576]"},
		{"swap space past the block count", func(c *engine.Config) { c.SwapSpaceGiB = 1e300 }, "swap_space_gib", "not in [0, 1048576]"},
		{"negative block override", func(c *engine.Config) { c.NumGPUBlocksOverride = -1 }, "num_gpu_blocks_override", "not in [0, 2147483647]"},
		{"block override past int32", func(c *engine.Config) { c.NumGPUBlocksOverride = 1 << 31 }, "num_gpu_blocks_override", "int32 block ids"},
		{"no chunking and a short token budget", func(c *engine.Config) {
			c.EnableChunkedPrefill, c.MaxNumBatchedTokens, c.MaxModelLen = false, 2048, 4096
		}, "max_num_batched_tokens", "below max_model_len 4096"},
		{"token budget below max_num_seqs", func(c *engine.Config) { c.MaxNumBatchedTokens, c.MaxNumSeqs = 128, 256 }, "max_num_batched_tokens", "below max_num_seqs 256"},
	} {
		t.Run(c.name, func(t *testing.T) {
			in := engine.Defaults()
			c.set(&in)
			_, err := in.Resolve(model(t, "llama-3.1-8b"), gpu(t, "h100-sxm"))
			var fe *engine.FieldError
			if !errors.As(err, &fe) {
				t.Fatalf("Resolve error %v is not a *FieldError", err)
			}
			if fe.Field != c.field || !strings.Contains(fe.Reason, c.inReason) {
				t.Errorf("error %q: want field %s with %q in the reason", err, c.field, c.inReason)
			}
		})
	}
}

// TestCheckBlocks: a cache is bounded by the int32 block ids and, for an
// override, by the GPU's memory at the bytes a block takes.
func TestCheckBlocks(t *testing.T) {
	const gib = 1 << 30
	for _, c := range []struct {
		name       string
		blocks     int
		blockBytes float64
		override   bool
		field      string // "" = accepted
	}{
		{"the memory model's count", 1 << 20, 1 << 16, false, ""},
		{"an override the GPU holds", 80 * gib / (1 << 16), 1 << 16, true, ""},
		{"an override past the GPU's memory", 80*gib/(1<<16) + 1, 1 << 16, true, "num_gpu_blocks_override"},
		{"2e9 blocks of 2 MiB", 2_000_000_000, 2 << 20, true, "num_gpu_blocks_override"},
		{"an override of unknown block size", 1 << 30, 0, true, ""},
		{"past int32 from the memory model", 5_386_075_574, 32, false, "block_size"},
		{"past int32 as an override", 1 << 31, 0, true, "num_gpu_blocks_override"},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := engine.CheckBlocks(c.blocks, c.blockBytes, 80*gib, c.override)
			var fe *engine.FieldError
			switch {
			case c.field == "" && err != nil:
				t.Errorf("CheckBlocks = %v, want nil", err)
			case c.field != "" && (!errors.As(err, &fe) || fe.Field != c.field):
				t.Errorf("CheckBlocks = %v, want a %s error", err, c.field)
			}
		})
	}
}

// TestValidateWithoutModel: with no model the max_position_embeddings bound
// is not checked, everything else is.
func TestValidateWithoutModel(t *testing.T) {
	c := engine.Defaults()
	c.MaxNumSeqs, c.MaxNumBatchedTokens, c.MaxModelLen, c.BlockSize = 256, 2048, 10_000_000, 16
	if err := c.Validate(nil); err != nil {
		t.Errorf("Validate(nil) = %v, want nil", err)
	}
	c.BlockSize = 0
	var fe *engine.FieldError
	if err := c.Validate(nil); !errors.As(err, &fe) || fe.Field != "block_size" {
		t.Errorf("Validate(nil) with block_size 0 = %v, want a block_size error", err)
	}
}
