package models

import (
	"testing"

	"github.com/headroom-sim/headroom/hardware"
)

func TestKVBytesPerToken(t *testing.T) {
	tests := []struct {
		name string
		m    *Model
		kv   hardware.DType
		tp   int
		want float64
	}{
		// 2 (K and V) × 32 layers × 8 KV heads × 128 × 2 bytes.
		{"llama-3.1-8b bf16 tp1", llama31_8B(), hardware.BF16, 1, 131072},
		{"llama-3.1-8b bf16 tp2", llama31_8B(), hardware.BF16, 2, 65536},
		{"llama-3.1-8b bf16 tp8", llama31_8B(), hardware.BF16, 8, 16384},
		// 8 KV heads on 16 ranks: each rank keeps one (replicated).
		{"llama-3.1-8b bf16 tp16", llama31_8B(), hardware.BF16, 16, 16384},
		{"llama-3.1-8b fp8 tp1", llama31_8B(), hardware.FP8, 1, 65536},
		// Multi-head attention: 32 KV heads.
		{"llama-2-7b fp16 tp1", llama2_7B(), hardware.FP16, 1, 524288},
		{"llama-2-7b fp16 tp4", llama2_7B(), hardware.FP16, 4, 131072},
		// MLA: 61 × (kv_lora_rank 512 + qk_rope_head_dim 64) × 2, the same
		// latent on every rank.
		{"deepseek-v3 bf16 tp1", deepseekV3(), hardware.BF16, 1, 70272},
		{"deepseek-v3 bf16 tp8", deepseekV3(), hardware.BF16, 8, 70272},
		{"deepseek-v3 bf16 tp16", deepseekV3(), hardware.BF16, 16, 70272},
		{"deepseek-v3 fp8 tp1", deepseekV3(), hardware.FP8, 1, 35136},
		{"deepseek-v3 fp8 tp8", deepseekV3(), hardware.FP8, 8, 35136},
		// Every layer, windowed or not; KVBytesForContext applies the window.
		{"gemma-2-9b bf16 tp1", gemma2_9B(), hardware.BF16, 1, 344064},
		{"gpt-oss-120b bf16 tp1", gptOSS120B(), hardware.BF16, 1, 73728},
		{"qwen3-30b-a3b bf16 tp1", qwen3_30B_A3B(), hardware.BF16, 1, 98304},
		{"qwen3-30b-a3b bf16 tp8", qwen3_30B_A3B(), hardware.BF16, 8, 98304 / 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.m.KVBytesPerToken(tt.kv, tt.tp); got != tt.want {
				t.Errorf("KVBytesPerToken(%s, tp%d) = %v, want %v", tt.kv, tt.tp, got, tt.want)
			}
		})
	}
}

func TestKVBytesForContext(t *testing.T) {
	tests := []struct {
		name string
		m    *Model
		ctx  int
		want float64
	}{
		{"llama-3.1-8b no window", llama31_8B(), 100_000, 100_000 * 131072},
		{"deepseek-v3 no window", deepseekV3(), 100_000, 100_000 * 70272},
		// Mistral-7B-v0.1: every layer windowed at 4096 tokens.
		{"mistral-7b inside window", mistral7B(), 3000, 3000 * 131072},
		{"mistral-7b at window", mistral7B(), 4096, 4096 * 131072},
		{"mistral-7b past window", mistral7B(), 32768, 4096 * 131072},
		// Gemma-2-9B: 21 of 42 layers windowed at 4096; 8192 bytes per
		// token and layer.
		{"gemma-2-9b inside window", gemma2_9B(), 4000, 4000 * 344064},
		{"gemma-2-9b past window", gemma2_9B(), 8192, 8192 * (21*8192 + 21*4096)},
		// gpt-oss-120b: 18 of 36 layers windowed at 128; 2048 bytes per
		// token and layer.
		{"gpt-oss-120b short", gptOSS120B(), 100, 100 * 73728},
		{"gpt-oss-120b long", gptOSS120B(), 131072, 2048 * (18*131072 + 18*128)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.m.KVBytesForContext(tt.ctx, hardware.BF16, 1); got != tt.want {
				t.Errorf("KVBytesForContext(%d) = %v, want %v", tt.ctx, got, tt.want)
			}
		})
	}
}

// TestKVBytesForContextBound checks the invariants: never more than every
// layer holding the context, exactly that up to the window, and never
// decreasing as the context grows.
func TestKVBytesForContextBound(t *testing.T) {
	for _, m := range allTestModels() {
		for _, tp := range []int{1, 2, 8} {
			perTok := m.KVBytesPerToken(hardware.BF16, tp)
			prev := 0.0
			for _, ctx := range []int{1, 64, 128, 129, 1000, 4096, 4097, 8192, 65536, 131072} {
				got := m.KVBytesForContext(ctx, hardware.BF16, tp)
				full := float64(ctx) * perTok
				if got > full {
					t.Errorf("%s tp%d ctx %d: %v bytes > ctx × per-token %v", m.ID, tp, ctx, got, full)
				}
				if (m.SlidingWindow == 0 || ctx <= m.SlidingWindow) && got != full {
					t.Errorf("%s tp%d ctx %d: %v bytes, want ctx × per-token %v", m.ID, tp, ctx, got, full)
				}
				if got < prev {
					t.Errorf("%s tp%d ctx %d: %v bytes, less than a shorter context's %v", m.ID, tp, ctx, got, prev)
				}
				prev = got
			}
		}
	}
}
