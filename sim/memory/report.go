package memory

import (
	"errors"
	"math"

	"github.com/headroom-sim/headroom/hardware"
	"github.com/headroom-sim/headroom/models"
	"github.com/headroom-sim/headroom/sim/engine"
)

// Report is the answer of `headroom capacity` and POST /v1/capacity. Its
// JSON keys are a public contract (docs/memory-model.md, "headroom capacity").
type Report struct {
	Model     string           `json:"model"`
	GPU       string           `json:"gpu"`
	TP        int              `json:"tp"`
	Precision models.Precision `json:"precision"`
	Engine    engine.Config    `json:"engine"`
	Params    ParamSummary     `json:"params"`

	Fits bool `json:"fits"`
	// Reason says why it does not fit ("" when it does).
	Reason string `json:"reason,omitempty"`
	// MinTPThatFits is the smallest tensor-parallel degree vLLM could start
	// with on this GPU, 0 if none up to the GPU's scale-up domain.
	MinTPThatFits int `json:"min_tp_that_fits"`

	Memory  MemorySummary  `json:"memory"`
	KVCache KVCacheSummary `json:"kv_cache"`

	// MaxConcurrency is the number of requests that fit at once: with
	// --prompt-tokens/--output-tokens, the brief's formula (Concurrency);
	// otherwise vLLM's own figure for max_model_len-token requests, floored.
	MaxConcurrency int `json:"max_concurrency"`
	// MaxConcurrencyBasis is "prompt_output" or "max_model_len".
	MaxConcurrencyBasis string       `json:"max_concurrency_basis"`
	Concurrency         *Concurrency `json:"concurrency,omitempty"`
}

// ParamSummary gives the model's size.
type ParamSummary struct {
	Total  int64 `json:"total"`
	Active int64 `json:"active"`
}

// MemorySummary is the per-GPU memory split in GiB.
type MemorySummary struct {
	TotalGiBPerGPU      float64 `json:"total_gib_per_gpu"`
	UsableGiBPerGPU     float64 `json:"usable_gib_per_gpu"`
	WeightsGiBPerGPU    float64 `json:"weights_gib_per_gpu"`
	ActivationGiBPerGPU float64 `json:"activation_gib_per_gpu"`
	NonTorchGiBPerGPU   float64 `json:"non_torch_gib_per_gpu"`
	KVCacheGiBPerGPU    float64 `json:"kv_cache_gib_per_gpu"`
}

// KVCacheSummary describes the paged KV cache of one GPU.
type KVCacheSummary struct {
	NumGPUBlocks         int     `json:"num_gpu_blocks"`
	NumTokens            int     `json:"num_tokens"`
	BlockSize            int     `json:"block_size"`
	BytesPerTokenPerGPU  float64 `json:"bytes_per_token_per_gpu"`
	BytesPerBlock        float64 `json:"bytes_per_block"`
	Groups               int     `json:"groups"`
	MaxModelLen          int     `json:"max_model_len"`
	ConcurrencyAtMaxLenX float64 `json:"concurrency_at_max_model_len"`
}

// Analyze computes the capacity report. prompt and output may be 0 (no
// request shape given). It returns an error only for invalid input;
// infeasibility is reported in the result (Fits false, Reason).
func Analyze(s Setup, prompt, output int, fragmentation float64) (Report, error) {
	pc := s.Model.Params()
	r := Report{
		Model: s.Model.ID, GPU: s.GPU.ID, TP: max(s.TP, 1), Precision: s.Precision, Engine: s.Engine,
		Params: ParamSummary{Total: pc.Total, Active: pc.Active},
	}
	p, err := Compute(s)
	if err != nil && !errors.Is(err, ErrDoesNotFit) {
		return r, err
	}
	r.Fits = err == nil
	if err != nil {
		r.Reason = err.Error()
	}
	r.MinTPThatFits = MinTPThatFits(s)
	r.Memory = MemorySummary{
		TotalGiBPerGPU:      round4(p.TotalBytes / hardware.GiB),
		UsableGiBPerGPU:     round4(p.UsableBytes / hardware.GiB),
		WeightsGiBPerGPU:    round4(p.WeightsBytes / hardware.GiB),
		ActivationGiBPerGPU: round4(p.ActivationBytes / hardware.GiB),
		NonTorchGiBPerGPU:   round4(p.NonTorchBytes / hardware.GiB),
		KVCacheGiBPerGPU:    round4(math.Max(0, p.KVCacheBytes) / hardware.GiB),
	}
	r.KVCache = KVCacheSummary{
		NumGPUBlocks: p.NumGPUBlocks, NumTokens: p.NumTokens, BlockSize: p.BlockSize,
		BytesPerTokenPerGPU: s.Model.KVBytesPerToken(s.Precision.KV, r.TP),
		BytesPerBlock:       p.BlockBytes, Groups: p.KVGroups, MaxModelLen: s.Engine.MaxModelLen,
	}
	if s.Engine.MaxModelLen > 0 {
		r.KVCache.ConcurrencyAtMaxLenX = round4(float64(p.NumTokens) / float64(s.Engine.MaxModelLen))
	}
	r.MaxConcurrencyBasis = "max_model_len"
	r.MaxConcurrency = int(r.KVCache.ConcurrencyAtMaxLenX)
	if prompt > 0 || output > 0 {
		c, err := MaxConcurrency(s, p, prompt, output, fragmentation)
		if err != nil {
			return r, err
		}
		r.Concurrency = &c
		r.MaxConcurrency, r.MaxConcurrencyBasis = c.MaxConcurrency, "prompt_output"
		if !r.Fits {
			r.MaxConcurrency = 0
		}
	}
	if !r.Fits {
		r.MaxConcurrency = 0
	}
	return r, nil
}

func round4(x float64) float64 { return math.Round(x*1e4) / 1e4 }
