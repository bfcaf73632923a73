package memory

import (
	"errors"
	"fmt"
	"math"

	"github.com/headroom-sim/headroom/hardware"
	"github.com/headroom-sim/headroom/models"
	"github.com/headroom-sim/headroom/sim/engine"
)

// ErrDoesNotFit is returned (wrapped) when the model cannot be served on
// the GPUs as configured: the weights do not fit, no memory is left for the
// KV cache, or the KV cache cannot hold one max_model_len request.
var ErrDoesNotFit = errors.New("does not fit")

// Setup is what the memory profile depends on.
type Setup struct {
	Model     *models.Model
	GPU       *hardware.GPU
	Precision models.Precision
	TP        int
	// EP is the expert-parallel group size (TP × data-parallel ranks with
	// vLLM --enable-expert-parallel; 0 or 1 = off).
	EP int
	// Engine must be resolved (engine.Config.Resolve).
	Engine engine.Config
	// ExtraNonTorchBytes is added to the non-torch term: a memory
	// calibration from a logged block count (calibration profiles carry it).
	ExtraNonTorchBytes float64
	// DraftWeightsBytes and DraftKVBytesPerToken are a speculative-decoding
	// drafter's weights and KV per token on each GPU
	// (models.Drafter.WeightBytesPerGPU, KVBytesPerToken): vLLM loads the
	// drafter beside the target and gives its layers KV from the same
	// block pool, so every block also holds the drafter's KV of its tokens.
	DraftWeightsBytes, DraftKVBytesPerToken float64
}

// Profile is vLLM's start-up memory split of one GPU, in bytes.
type Profile struct {
	TotalBytes float64 `json:"total_bytes"`
	// UsableBytes = TotalBytes × gpu_memory_utilization.
	UsableBytes  float64 `json:"usable_bytes"`
	WeightsBytes float64 `json:"weights_bytes"`
	// DraftWeightsBytes is the part of WeightsBytes that is the
	// speculative-decoding drafter's.
	DraftWeightsBytes float64 `json:"draft_weights_bytes,omitempty"`
	// ActivationBytes is PyTorch's peak allocation increase during the
	// profiling run: the larger of the forward pass's and the sampler's.
	ActivationBytes float64 `json:"activation_bytes"`
	// ForwardPeakBytes and SamplerPeakBytes are the two candidates.
	ForwardPeakBytes float64 `json:"forward_peak_bytes"`
	SamplerPeakBytes float64 `json:"sampler_peak_bytes"`
	NonTorchBytes    float64 `json:"non_torch_bytes"`
	// KVCacheBytes = Usable − Weights − Activation − NonTorch (vLLM's
	// "Available KV cache memory").
	KVCacheBytes float64 `json:"kv_cache_bytes"`

	// KVGroups is the number of KV-cache groups sharing the block pool (1,
	// or 2 for models mixing full and sliding-window layers).
	KVGroups int `json:"kv_groups"`
	// LayersPerGroup is how many layers each block spans.
	LayersPerGroup int `json:"layers_per_group"`
	// BlockBytes is one block's size: block_size × per-layer KV bytes per
	// token × LayersPerGroup.
	BlockBytes float64 `json:"block_bytes"`
	// NumGPUBlocks is the per-GPU block count vLLM logs.
	NumGPUBlocks int `json:"num_gpu_blocks"`
	// NumTokens is the KV capacity in tokens of full-attention context
	// (vLLM's "GPU KV cache size: N tokens").
	NumTokens int `json:"num_tokens"`
	// BlockSize is the tokens per block.
	BlockSize int `json:"block_size"`
}

// Compute derives the profile. It returns an error wrapping ErrDoesNotFit
// (with the profile filled as far as it goes) when vLLM would refuse to
// start.
func Compute(s Setup) (Profile, error) {
	m, g, e := s.Model, s.GPU, s.Engine
	tp := max(s.TP, 1)
	var p Profile
	p.BlockSize = e.BlockSize
	p.TotalBytes = float64(g.MemoryBytes)
	p.UsableBytes = p.TotalBytes * e.GPUMemoryUtilization
	p.WeightsBytes = m.WeightBytesPerGPUEP(s.Precision, tp, s.EP) + s.DraftWeightsBytes
	p.DraftWeightsBytes = s.DraftWeightsBytes
	p.ForwardPeakBytes = ForwardPeakBytes(m, s.Precision, tp, e.MaxNumBatchedTokens)
	p.SamplerPeakBytes = SamplerPeakBytes(m, s.Precision, e.MaxNumBatchedTokens, e.MaxNumSeqs)
	p.ActivationBytes = math.Max(p.ForwardPeakBytes, p.SamplerPeakBytes)
	p.NonTorchBytes = NonTorchBytes(g, tp) + s.ExtraNonTorchBytes
	p.KVCacheBytes = p.UsableBytes - p.WeightsBytes - p.ActivationBytes - p.NonTorchBytes

	p.KVGroups, p.LayersPerGroup = kvGroups(m)
	p.BlockBytes = float64(e.BlockSize) * m.KVBytesPerTokenLayer(s.Precision.KV, tp) * float64(p.LayersPerGroup)
	if s.DraftKVBytesPerToken > 0 {
		// The drafter's layers spread over the groups' blocks.
		p.BlockBytes += float64(e.BlockSize) * s.DraftKVBytesPerToken / float64(p.KVGroups)
	}

	if p.WeightsBytes > p.UsableBytes {
		return p, fmt.Errorf("%w: weights need %.2f GiB per GPU but gpu_memory_utilization %.2f of %.2f GiB leaves %.2f GiB", ErrDoesNotFit,
			p.WeightsBytes/hardware.GiB, e.GPUMemoryUtilization, p.TotalBytes/hardware.GiB, p.UsableBytes/hardware.GiB)
	}
	if !(p.KVCacheBytes > 0) { // also catches NaN
		return p, fmt.Errorf("%w: no memory left for the KV cache (%.2f GiB after weights, activations and non-torch memory)", ErrDoesNotFit, p.KVCacheBytes/hardware.GiB)
	}
	p.NumGPUBlocks = int(p.KVCacheBytes / p.BlockBytes)
	if e.NumGPUBlocksOverride > 0 {
		p.NumGPUBlocks = e.NumGPUBlocksOverride
	}
	if err := engine.CheckBlocks(p.NumGPUBlocks, p.BlockBytes, p.TotalBytes, e.NumGPUBlocksOverride > 0); err != nil {
		var fe *hardware.FieldError
		if errors.As(err, &fe) {
			return p, &hardware.FieldError{Field: "engine." + fe.Field, Reason: fe.Reason}
		}
		return p, err
	}
	p.NumTokens = p.NumGPUBlocks / p.KVGroups * e.BlockSize
	need := BlocksForTokens(m, e.BlockSize, e.MaxModelLen)
	if p.NumGPUBlocks < need {
		return p, fmt.Errorf("%w: one request of max_model_len %d tokens needs %d KV blocks but only %d fit (%.2f GiB); lower max_model_len or raise gpu_memory_utilization or tp",
			ErrDoesNotFit, e.MaxModelLen, need, p.NumGPUBlocks, p.KVCacheBytes/hardware.GiB)
	}
	return p, nil
}

// ForwardPeakBytes is the peak activation memory of a forward pass over n
// tokens on one of tp GPUs: n × the widest point of a layer.
func ForwardPeakBytes(m *models.Model, p models.Precision, tp, n int) float64 {
	tp = max(tp, 1)
	act := p.Activations.Bytes()
	h := float64(m.HiddenSize)
	frac := 1 / float64(tp)
	base := hiddenVectorsAtPeak * h
	var widest float64
	if m.NumDenseLayers() > 0 {
		widest = 3*float64(m.IntermediateSize)*frac + base
	}
	// Attention: q, k, v outputs and the attention output.
	heads := float64(m.NumHeads) * frac
	var attn float64
	if a := m.MLA; a != nil {
		attn = heads*float64(a.QKNopeHeadDim+a.QKRopeHeadDim) + heads*float64(a.QKNopeHeadDim+a.VHeadDim) + heads*float64(a.VHeadDim) + 2*h
	} else {
		attn = 2*heads*float64(m.HeadDim) + 2*float64(m.KVHeadsPerRank(tp)*m.HeadDim) + 2*h
	}
	widest = math.Max(widest, attn)
	perToken := widest * act
	total := perToken * float64(n)
	if e := m.MoE; e != nil {
		// Fused-MoE workspace: cache13 = M·k·max(2·Ie, H) shared by the
		// first and third intermediates, cache2 = M·k·Ie, plus the output
		// and the fp32 router logits; M is capped at the kernel's chunk.
		ie := float64(e.ExpertIntermediateSize) * frac
		k := float64(e.NumExpertsPerTok)
		mt := float64(min(n, fusedMoEChunkTokens))
		moe := mt*k*(math.Max(2*ie, h)+ie)*act + float64(n)*(base*act+float64(e.NumExperts)*4)
		total = math.Max(total, moe)
	}
	return total
}

// SamplerPeakBytes is the peak of vLLM's dummy sampler run: S rows of
// logits over the whole vocabulary (gathered on every rank), while the n
// hidden states of the forward pass are still alive.
func SamplerPeakBytes(m *models.Model, p models.Precision, n, maxSeqs int) float64 {
	s := float64(min(maxSeqs, n))
	return s*float64(m.VocabSize)*samplerBytesPerLogit + float64(n)*float64(m.HiddenSize)*p.Activations.Bytes()
}

// NonTorchBytes is the non-PyTorch memory vLLM's profile counts on each of
// tp GPUs.
func NonTorchBytes(g *hardware.GPU, tp int) float64 {
	b := nonTorchBytesTP1
	if tp > 1 {
		per := nonTorchBytesPerPeerPCIe
		switch g.ScaleUp.Kind {
		case "nvlink3", "nvlink4", "nvlink5", "infinity_fabric":
			per = nonTorchBytesPerPeerNVLink
		}
		b += nonTorchBytesTPBase + per*float64(tp-1)
	}
	return b
}

// kvGroups mirrors vLLM's hybrid KV-cache grouping: layers of one attention
// type share a group; with two types the smaller count sets the group size
// (or the larger, when they are within 25%) and every block spans one
// group's layers.
func kvGroups(m *models.Model) (groups, layersPerGroup int) {
	full, swa := m.NumFullLayers(), m.NumSlidingLayers()
	if full == 0 || swa == 0 {
		return 1, m.NumLayers
	}
	lo, hi := min(full, swa), max(full, swa)
	size := lo
	if float64(hi) < 1.25*float64(lo) {
		size = hi
	}
	groups = (full+size-1)/size + (swa+size-1)/size
	return groups, size
}

// BlocksForTokens is how many blocks of the shared pool one sequence of n
// tokens holds: ceil(n / block_size) for every full-attention group, and
// for sliding-window groups at most the window's blocks plus one.
func BlocksForTokens(m *models.Model, blockSize, n int) int {
	groups, size := kvGroups(m)
	full := ceilDiv(n, blockSize)
	if groups == 1 {
		if m.NumSlidingLayers() == m.NumLayers && m.SlidingWindow > 0 {
			return min(full, ceilDiv(m.SlidingWindow-1, blockSize)+1)
		}
		return full
	}
	fullGroups := ceilDiv(m.NumFullLayers(), size)
	swaGroups := groups - fullGroups
	swa := min(full, ceilDiv(m.SlidingWindow-1, blockSize)+1)
	return fullGroups*full + swaGroups*swa
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }
