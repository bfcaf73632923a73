package engine

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/headroom-sim/headroom/hardware"
	"github.com/headroom-sim/headroom/models"
)

// FieldError names an invalid setting.
type FieldError = hardware.FieldError

// Scheduler policies.
const (
	SchedulerV1 = "v1" // vLLM V1: running requests first, chunked prefill mixed with decodes
	SchedulerV0 = "v0" // vLLM V0 default: waiting prefills first, decodes when no prefill is scheduled
)

// Preemption modes.
const (
	PreemptRecompute = "recompute"
	PreemptSwap      = "swap"
)

// Config is the engine's settings, named as vLLM's flags. Zero values of
// MaxNumSeqs, MaxNumBatchedTokens, MaxModelLen and BlockSize mean "vLLM's
// default for this GPU and model"; Resolve fills them in.
type Config struct {
	GPUMemoryUtilization float64 `yaml:"gpu_memory_utilization" json:"gpu_memory_utilization"`
	MaxNumSeqs           int     `yaml:"max_num_seqs" json:"max_num_seqs"`
	MaxNumBatchedTokens  int     `yaml:"max_num_batched_tokens" json:"max_num_batched_tokens"`
	MaxModelLen          int     `yaml:"max_model_len" json:"max_model_len"`
	BlockSize            int     `yaml:"block_size" json:"block_size"`
	EnableChunkedPrefill bool    `yaml:"enable_chunked_prefill" json:"enable_chunked_prefill"`
	EnablePrefixCaching  bool    `yaml:"enable_prefix_caching" json:"enable_prefix_caching"`
	// LongPrefillTokenThreshold caps one request's prefill chunk per step
	// (0 = no cap).
	LongPrefillTokenThreshold int     `yaml:"long_prefill_token_threshold" json:"long_prefill_token_threshold"`
	Scheduler                 string  `yaml:"scheduler" json:"scheduler"`
	PreemptionMode            string  `yaml:"preemption_mode" json:"preemption_mode"`
	SwapSpaceGiB              float64 `yaml:"swap_space_gib" json:"swap_space_gib"`
	// AsyncScheduling overlaps the CPU work of scheduling the next step
	// with the GPU running the current one (vLLM --async-scheduling; on by
	// default in recent vLLM, off in 0.11 and earlier).
	AsyncScheduling bool `yaml:"async_scheduling" json:"async_scheduling"`
	// NumGPUBlocksOverride replaces the memory model's block count (vLLM
	// --num-gpu-blocks-override), e.g. with the count a real server logged.
	NumGPUBlocksOverride int `yaml:"num_gpu_blocks_override" json:"num_gpu_blocks_override"`
	// Speculative is vLLM's --speculative-config (nil: no speculative
	// decoding); see speculative.go.
	Speculative *Speculative `yaml:"speculative,omitempty" json:"speculative,omitempty"`
}

// BlockSizes are the KV block sizes vLLM takes (--block-size choices,
// vllm/config/cache.py BlockSize).
var BlockSizes = []int{1, 8, 16, 32, 64, 128, 256}

// MaxKVBlocks is the most KV blocks one GPU's cache may hold: vLLM's block
// tables keep block ids as int32, and so do the simulator's.
const MaxKVBlocks = math.MaxInt32

// MaxNumSeqs and MaxNumBatchedTokens bound the scheduler's limits far
// above any served configuration (vLLM's defaults are 1,024 and 8,192):
// the simulator sizes a step's bookkeeping by them. A step of more
// tokens than the longest context a model may have
// (models.MaxPositions, 2^24) has nothing to batch. These are the only
// bounds of the settings: the API's request bodies carry the same ones
// (api's TestEngineBoundsAreTheEngines holds them to it) and the
// scenario, the flags and measured runs' settings meet them here.
const (
	MaxNumSeqs          = 1 << 20
	MaxNumBatchedTokens = 1 << 24
)

// CheckBlocks checks a KV cache of blocks blocks of blockBytes each (on
// one GPU of gpuBytes; blockBytes 0: not known) against what the block
// tables index and what the GPU could hold. override says whether the
// count is num_gpu_blocks_override's (the field named), else the memory
// model's (block_size then sets it). Every cache the simulator builds is
// checked before it is allocated.
func CheckBlocks(blocks int, blockBytes, gpuBytes float64, override bool) error {
	field := "block_size"
	if override {
		field = "num_gpu_blocks_override"
	}
	switch {
	case blocks > MaxKVBlocks:
		return &FieldError{Field: field, Reason: fmt.Sprintf("gives %d KV blocks per GPU, more than the %d vLLM's int32 block tables index (a larger block_size holds the same memory in fewer blocks)", blocks, MaxKVBlocks)}
	case override && blockBytes > 0 && float64(blocks)*blockBytes > gpuBytes:
		return &FieldError{Field: field, Reason: fmt.Sprintf("%d blocks of %.0f bytes need %.4g GiB per GPU, more than the GPU's %.4g GiB", blocks, blockBytes, float64(blocks)*blockBytes/hardware.GiB, gpuBytes/hardware.GiB)}
	}
	return nil
}

// MaxSwapSpaceGiB bounds swap_space_gib (1 PiB of CPU memory per GPU):
// the swap block count must stay an exact integer.
const MaxSwapSpaceGiB = 1 << 20

// Defaults are vLLM's settings when no flag is given, before the
// GPU-dependent ones are resolved.
func Defaults() Config {
	return Config{
		GPUMemoryUtilization: 0.9,
		EnableChunkedPrefill: true,
		EnablePrefixCaching:  true,
		Scheduler:            SchedulerV1,
		PreemptionMode:       PreemptRecompute,
		SwapSpaceGiB:         4,
		AsyncScheduling:      true,
	}
}

// largeGPUBytes is the device-memory threshold above which vLLM's OpenAI
// API server picks its larger defaults (vllm/engine/arg_utils.py:
// `device_memory >= 70 * GiB_bytes and "a100" not in device_name`).
const largeGPUBytes = 70 * hardware.GiB

// DefaultBatchLimits are vLLM's OpenAI API server defaults for
// max_num_batched_tokens and max_num_seqs on g: 8192 and 1024 on GPUs with
// at least 70 GiB that are not A100s (H100, H200, MI300X …), else 2048 and
// 256.
func DefaultBatchLimits(g *hardware.GPU) (maxBatchedTokens, maxSeqs int) {
	name := strings.ToLower(g.ID + " " + g.Name)
	if g.MemoryBytes >= largeGPUBytes && !strings.Contains(name, "a100") {
		return 8192, 1024
	}
	return 2048, 256
}

// DefaultBlockSize is vLLM's KV block size: 16 tokens, 64 for multi-head
// latent attention models (the FlashMLA backend requires it).
func DefaultBlockSize(m *models.Model) int {
	if m.MLA != nil {
		return 64
	}
	return 16
}

// Resolve fills GPU- and model-dependent defaults and validates the result.
func (c Config) Resolve(m *models.Model, g *hardware.GPU) (Config, error) {
	mbt, seqs := DefaultBatchLimits(g)
	if c.MaxModelLen == 0 {
		c.MaxModelLen = m.MaxPositions
	}
	if c.MaxNumSeqs == 0 {
		c.MaxNumSeqs = seqs
	}
	if c.MaxNumBatchedTokens == 0 {
		c.MaxNumBatchedTokens = mbt
		if !c.EnableChunkedPrefill {
			// Without chunking a whole prompt must fit one step.
			c.MaxNumBatchedTokens = max(c.MaxModelLen, mbt)
		}
	}
	if c.BlockSize == 0 {
		c.BlockSize = DefaultBlockSize(m)
	}
	if c.Scheduler == "" {
		c.Scheduler = SchedulerV1
	}
	if c.PreemptionMode == "" {
		c.PreemptionMode = PreemptRecompute
	}
	return c, c.Validate(m)
}

// Validate checks a resolved configuration.
func (c Config) Validate(m *models.Model) error {
	switch {
	case !(c.GPUMemoryUtilization > 0 && c.GPUMemoryUtilization <= 1):
		return &FieldError{Field: "gpu_memory_utilization", Reason: fmt.Sprintf("%g is not in (0, 1]", c.GPUMemoryUtilization)}
	case c.MaxNumSeqs < 1 || c.MaxNumSeqs > MaxNumSeqs:
		return &FieldError{Field: "max_num_seqs", Reason: fmt.Sprintf("%d is not in [1, %d]", c.MaxNumSeqs, MaxNumSeqs)}
	case c.MaxNumBatchedTokens < 1 || c.MaxNumBatchedTokens > MaxNumBatchedTokens:
		return &FieldError{Field: "max_num_batched_tokens", Reason: fmt.Sprintf("%d is not in [1, %d]", c.MaxNumBatchedTokens, MaxNumBatchedTokens)}
	case c.MaxModelLen < 1:
		return &FieldError{Field: "max_model_len", Reason: "must be >= 1"}
	case m != nil && c.MaxModelLen > m.MaxPositions:
		return &FieldError{Field: "max_model_len", Reason: fmt.Sprintf("%d exceeds the model's max_position_embeddings %d", c.MaxModelLen, m.MaxPositions)}
	case !slices.Contains(BlockSizes, c.BlockSize):
		return &FieldError{Field: "block_size", Reason: fmt.Sprintf("%d is not one of vLLM's block sizes %v", c.BlockSize, BlockSizes)}
	case c.LongPrefillTokenThreshold < 0:
		return &FieldError{Field: "long_prefill_token_threshold", Reason: "must be >= 0"}
	case c.Scheduler != SchedulerV1 && c.Scheduler != SchedulerV0:
		return &FieldError{Field: "scheduler", Reason: fmt.Sprintf("%q is not v1 or v0", c.Scheduler)}
	case c.PreemptionMode != PreemptRecompute && c.PreemptionMode != PreemptSwap:
		return &FieldError{Field: "preemption_mode", Reason: fmt.Sprintf("%q is not recompute or swap", c.PreemptionMode)}
	case !(c.SwapSpaceGiB >= 0 && c.SwapSpaceGiB <= MaxSwapSpaceGiB):
		return &FieldError{Field: "swap_space_gib", Reason: fmt.Sprintf("%g is not in [0, %d]", c.SwapSpaceGiB, MaxSwapSpaceGiB)}
	case c.NumGPUBlocksOverride < 0 || c.NumGPUBlocksOverride > MaxKVBlocks:
		return &FieldError{Field: "num_gpu_blocks_override", Reason: fmt.Sprintf("%d is not in [0, %d] (0 = the memory model's count; vLLM's block tables hold int32 block ids)", c.NumGPUBlocksOverride, MaxKVBlocks)}
	case !c.EnableChunkedPrefill && c.MaxNumBatchedTokens < c.MaxModelLen:
		return &FieldError{Field: "max_num_batched_tokens", Reason: fmt.Sprintf("%d is below max_model_len %d: with chunked prefill disabled a whole prompt must fit one step", c.MaxNumBatchedTokens, c.MaxModelLen)}
	case c.MaxNumBatchedTokens < c.MaxNumSeqs:
		// vLLM's SchedulerConfig rejects this too.
		return &FieldError{Field: "max_num_batched_tokens", Reason: fmt.Sprintf("%d is below max_num_seqs %d", c.MaxNumBatchedTokens, c.MaxNumSeqs)}
	}
	if c.Speculative != nil {
		return c.Speculative.validate(m, c.Scheduler)
	}
	return nil
}
