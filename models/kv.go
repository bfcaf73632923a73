package models

import "github.com/headroom-sim/headroom/hardware"

// KVBytesPerTokenLayer is the KV-cache bytes one token occupies in one
// attention layer on one of tp GPUs.
//
//   - Multi-head and grouped-query attention: a key and a value vector per
//     KV head the rank holds: 2 × KVHeadsPerRank(tp) × head_dim × dtype.
//     KV heads replicate once tp exceeds them, so the per-GPU size stops
//     falling there.
//   - Multi-head latent attention caches one compressed latent plus the
//     rotary key: (kv_lora_rank + qk_rope_head_dim) × dtype, replicated on
//     every rank (vLLM does not split the latent across TP).
func (m *Model) KVBytesPerTokenLayer(kv hardware.DType, tp int) float64 {
	if a := m.MLA; a != nil {
		return float64(a.KVLoRARank+a.QKRopeHeadDim) * kv.Bytes()
	}
	return 2 * float64(m.KVHeadsPerRank(tp)*m.HeadDim) * kv.Bytes()
}

// KVBytesPerToken is the KV-cache bytes per token of context on one GPU
// with every layer holding the whole context: the figure vLLM divides its
// KV memory by. Sliding-window layers hold at most the window; see
// KVBytesForContext.
func (m *Model) KVBytesPerToken(kv hardware.DType, tp int) float64 {
	return float64(m.NumLayers) * m.KVBytesPerTokenLayer(kv, tp)
}

// KVBytesForContext is the KV-cache bytes one sequence of ctx tokens holds
// on one GPU, with sliding-window layers capped at the window.
func (m *Model) KVBytesForContext(ctx int, kv hardware.DType, tp int) float64 {
	per := m.KVBytesPerTokenLayer(kv, tp)
	swa := min(ctx, m.SlidingWindow)
	return per * (float64(m.NumFullLayers())*float64(ctx) + float64(m.NumSlidingLayers())*float64(swa))
}
