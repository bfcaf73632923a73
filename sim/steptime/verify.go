package steptime

import (
	"math"

	"github.com/headroom-sim/headroom/models"
)

// Speculative decoding prices two things the rest of the model does not:
// the target's verification of drafts (a decode whose sequences carry
// 1 + k queries each) and the passes of a draft model inside the same
// engine step.
//
// Verification is decode attention over the same KV: vLLM's backends run
// a short query per sequence through their decode path (FlashAttention's
// varlen kernel packs the queries of a KV head into one tile, FlashInfer
// and TRT-LLM decode kernels take several query tokens per request,
// FlashMLA likewise), so each sequence's KV is still read once. The
// measured or formula decode time is carried to the extra queries at the
// kernel's utilisation: scaled by the ratio of the two roofline times
// (verifyScale), about 1 while the KV stream dominates, growing once the
// queries' FLOPs do.

// verifyScale is the ratio of the ideal time of a verification (queries
// query tokens over seqs sequences' ctx KV tokens, pairs query-key pairs)
// to the ideal time of the plain decode of the same sequences, at least 1.
func verifyScale(a AttentionShape, roof Roof, seqs, ctx, queries, pairs float64) float64 {
	h, kv, d := float64(a.Key.Heads), float64(a.Key.KVHeads), float64(a.Key.HeadDim)
	kvb := a.KVBytes
	if kvb <= 0 {
		kvb = 2
	}
	stream := 2 * kv * d * ctx * kvb
	plain := roof.time(4*h*d*ctx, stream+4*h*d*seqs)
	if plain <= 0 {
		return 1
	}
	return math.Max(1, roof.time(4*h*d*pairs, stream+4*h*d*queries)/plain)
}

// GPUTime is the step's GPU time in seconds, without the engine's CPU
// time: a draft model's pass inside a step whose scheduling and input
// preparation the target's step already counts.
func (s *Model) GPUTime(b *models.Batch) float64 {
	if b.Tokens() == 0 {
		return 0
	}
	return s.gpuTime(b)
}

// GEMMTime is one m×k by k×n matmul in format (a models.Format*), from the
// kernel tables where they cover it, else the formula, launched from the
// host (with its floor) when m rows exceed the CUDA-graph size.
func (s *Model) GEMMTime(format string, m, n, k int) float64 {
	if m <= 0 || n <= 0 || k <= 0 {
		return 0
	}
	sec, _, _, _ := s.gemmCall(format, m, n, k, false)
	if s.eager(m) {
		sec = s.eagerGEMMFloor(sec, format)
	}
	return sec
}

// RejectionSamplerBytesPerLogit is the device-memory traffic of vLLM's
// rejection sampler per logit of a draft position, beyond the sampler
// pass every scored position gets (sampledTime), read off vLLM 0.11's
// v1/sample/rejection_sampler.py (RejectionSampler.forward →
// compute_probs → apply_sampling_constraints, and
// sample_recovered_tokens) for a request sampled at a temperature with
// top-p, as vLLM samples requests that set neither from the model's
// generation_config (Llama-3.1-Instruct: temperature 0.6, top_p 0.9):
//
//	temperature (logits.div_, fp32 read + write)                    8
//	apply_top_k_top_p: sort of fp32 values with int64 indices, a
//	  segmented radix sort of 4–5 digit passes, 24 B each, plus the
//	  index fill and key copy                                    ≈ 120
//	softmax, cumsum, mask and masked_fill over the sorted row       38
//	scatter back through the indices                                16
//	softmax to target_probs                                         16
//	sample_recovered_tokens reading the probabilities                4
//
// ≈ 200 bytes, at the elementwise bandwidth. Greedy requests (temperature
// 0) take the argmax instead; the simulator does not know a request's
// sampling parameters and prices the random path. Uncertain: the sort's
// pass count and efficiency are cub's, not measured here.
const RejectionSamplerBytesPerLogit = 200

// rejectionSamplerKernels is the kernels compute_probs and the sampling
// of recovered and bonus tokens launch per step (each with the
// elementwise launch overhead).
const rejectionSamplerKernels = 12

// RejectionSamplerTime is the GPU time of the rejection sampler over
// drafts draft positions (every verifying request's drafts, summed): the
// target's probabilities at each draft position, their top-p constraint
// and the recovered-token draw (0 without drafts).
func (s *Model) RejectionSamplerTime(drafts int) float64 {
	if drafts <= 0 {
		return 0
	}
	vocab := float64(s.model.VocabSize)
	return FormulaElementwise(&s.prof, s.hw, float64(drafts)*vocab*RejectionSamplerBytesPerLogit, rejectionSamplerKernels)
}
