package memory

import (
	"errors"
	"fmt"
	"math"

	"github.com/headroom-sim/headroom/hardware"
)

// Concurrency answers "how many requests of this shape fit at once?".
type Concurrency struct {
	PromptTokens int `json:"prompt_tokens"`
	OutputTokens int `json:"output_tokens"`
	// BlocksPerRequestFinal is what one request holds at its last token:
	// ceil((prompt + output) / block_size) per group.
	BlocksPerRequestFinal int `json:"blocks_per_request_final"`
	// BlocksPerRequestMean is what one request holds on average over its
	// generation (the brief's prompt + output/2, with each step's block
	// rounding counted exactly).
	BlocksPerRequestMean float64 `json:"blocks_per_request_mean"`
	// FragmentationRatio is the extra allowance on top of block rounding
	// (the brief's "PagedAttention fragmentation"): unaligned prefix-cache
	// sharing, blocks held by requests being preempted.
	FragmentationRatio float64 `json:"fragmentation_ratio"`
	// MaxConcurrencyKV = floor(num_gpu_blocks / (mean blocks × (1 + frag))):
	// the brief's formula.
	MaxConcurrencyKV int `json:"max_concurrency_kv"`
	// MaxConcurrencyNoPreemption = floor(num_gpu_blocks / final blocks):
	// requests that can all run to completion at once without any being
	// preempted.
	MaxConcurrencyNoPreemption int `json:"max_concurrency_no_preemption"`
	// MaxConcurrency = min(MaxConcurrencyKV, max_num_seqs).
	MaxConcurrency int `json:"max_concurrency"`
	// LimitedBy is "kv_cache" or "max_num_seqs".
	LimitedBy string `json:"limited_by"`
}

// MaxConcurrency computes the concurrency answer from a profile.
func MaxConcurrency(s Setup, p Profile, prompt, output int, fragmentation float64) (Concurrency, error) {
	switch {
	case prompt < 1:
		return Concurrency{}, &hardware.FieldError{Field: "prompt_tokens", Reason: "must be >= 1 when output_tokens is given"}
	case output < 1:
		return Concurrency{}, &hardware.FieldError{Field: "output_tokens", Reason: "must be >= 1 when prompt_tokens is given"}
	case fragmentation < 0 || fragmentation >= 1:
		return Concurrency{}, &hardware.FieldError{Field: "fragmentation", Reason: fmt.Sprintf("%g is not in [0, 1)", fragmentation)}
	case prompt+output > s.Engine.MaxModelLen:
		return Concurrency{}, &hardware.FieldError{Field: "output_tokens", Reason: fmt.Sprintf("prompt + output = %d tokens exceeds max_model_len %d", prompt+output, s.Engine.MaxModelLen)}
	}
	m, bs := s.Model, s.Engine.BlockSize
	c := Concurrency{PromptTokens: prompt, OutputTokens: output, FragmentationRatio: fragmentation}
	c.BlocksPerRequestFinal = BlocksForTokens(m, bs, prompt+output)
	// Mean over the generation: the request holds prompt+t tokens after its
	// t-th output token, t = 1..output. Sum whole runs of equal block counts.
	var sum float64
	for t := 1; t <= output; {
		b := BlocksForTokens(m, bs, prompt+t)
		// the first t whose length starts a new block: the block count of
		// prompt+t holds until prompt+t passes a multiple of bs
		next := ceilDiv(prompt+t, bs)*bs + 1 - prompt
		if next <= t {
			next = t + 1
		}
		n := min(next, output+1) - t
		sum += float64(b) * float64(n)
		t += n
	}
	c.BlocksPerRequestMean = sum / float64(output)
	c.MaxConcurrencyKV = int(math.Floor(float64(p.NumGPUBlocks) / (c.BlocksPerRequestMean * (1 + fragmentation))))
	c.MaxConcurrencyNoPreemption = p.NumGPUBlocks / c.BlocksPerRequestFinal
	c.MaxConcurrency, c.LimitedBy = c.MaxConcurrencyKV, "kv_cache"
	if s.Engine.MaxNumSeqs < c.MaxConcurrency {
		c.MaxConcurrency, c.LimitedBy = s.Engine.MaxNumSeqs, "max_num_seqs"
	}
	return c, nil
}

// ValidTP reports whether vLLM can split m over tp GPUs: the attention
// heads must divide evenly, and the KV heads must either divide by tp or
// divide tp (then they are replicated).
func ValidTP(s Setup, tp int) bool {
	m := s.Model
	if tp < 1 || m.NumHeads%tp != 0 {
		return false
	}
	if m.MLA == nil && m.NumKVHeads%tp != 0 && tp%m.NumKVHeads != 0 {
		return false
	}
	return true
}

// MinTPThatFits tries tensor-parallel degrees 1, 2, 4, … up to the GPU's
// scale-up domain and returns the smallest one that vLLM could start with,
// or 0 if none does.
func MinTPThatFits(s Setup) int {
	for tp := 1; tp <= s.GPU.TPLimit(); tp *= 2 {
		if !ValidTP(s, tp) {
			continue
		}
		t := s
		t.TP = tp
		if _, err := Compute(t); err == nil {
			return tp
		} else if !errors.Is(err, ErrDoesNotFit) {
			return 0
		}
	}
	return 0
}
