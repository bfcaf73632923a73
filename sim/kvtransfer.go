package sim

import "math"

// The KV transfer of a disaggregated run. Each GPU of the prefill rank
// sends its shard of a request's KV cache, and each GPU of the decode rank
// receives its own, in parallel over their own links (one NIC per GPU, or
// NVLink through NVSwitch), so a transfer lasts as long as the larger
// per-GPU shard takes at the link's bandwidth, whole blocks as the
// connectors move them:
//
//	bytes(n) = max(blocks_prefill(n) × block_bytes_prefill,
//	               blocks_decode(n) × block_bytes_decode)
//	time     = bytes / bandwidth + latency
//
// where blocks(n) are the blocks n tokens hold in that pool (block size
// and sliding windows included) and block_bytes one block's size on one
// GPU of it (tensor parallelism shards the KV heads). A rank's links carry
// one transfer after another, at full bandwidth (the same total time as
// sharing it); a transfer waits for both ranks' links.
//
// With overlap none (vLLM's NixlConnector) the decode rank reads the
// prompt's blocks when it has allocated its own, less the blocks its
// prefix cache already holds. With overlap layerwise (P2pNcclConnector)
// the prefill pushes each layer's KV as soon as the layer is computed: in
// a step of length d over L layers, a chunk whose KV takes x on the link
// starts when its first layer is done (d/L into the step) and ends no
// earlier than x/L after the step, for its last layer:
//
//	end = max(max(step_start + d/L, link_free) + x, step_end + x/L)
//
// so only the last layer's share is exposed when the link keeps up, and
// the whole transfer less one layer of compute when it does not. The
// latency is paid once per request, after its last chunk.

// kvBytes is the per-GPU size of the KV of n tokens on the larger side.
func (pd *disagg) kvBytes(n int) float64 {
	p, d := pd.prefill, pd.decode
	return math.Max(float64(p.units(n))*p.blockBytes, float64(d.units(n))*d.blockBytes)
}

// linkTime is how long bytes take on the link, in ns (at least 1 for a
// non-empty transfer, so that every transfer is an event after its start).
func (pd *disagg) linkTime(bytes float64) Time {
	if bytes <= 0 {
		return 0
	}
	// Disaggregation.validate bounded the largest transfer by the clock.
	if t, ok := toTime(bytes/pd.bytesPerNS, 1, true); ok {
		return t
	}
	return beyond
}

// reserve books both ranks' links for a transfer of dur that may start at
// t and returns when it does.
func (pd *disagg) reserve(a, b *rank, t, dur Time) Time {
	ra, rb := &pd.rank[a.id], &pd.rank[b.id]
	start := max(t, ra.linkFree, rb.linkFree)
	ra.linkFree, rb.linkFree = start+dur, start+dur
	ra.linkBusyNS += dur
	rb.linkBusyNS += dur
	return start
}

// pull starts the read of r's KV into decode rank rp at t: the prompt's
// blocks beyond the hit tokens rp's prefix cache holds.
func (pd *disagg) pull(rp *rank, r *request, hitTokens int, t Time) {
	ps := r.pd
	bytes := pd.kvBytes(r.input) - pd.kvBytes(hitTokens)
	dur := pd.linkTime(bytes)
	start := pd.reserve(ps.prefillRank, rp, t, dur)
	pd.breakdown.transfer(bytes, r.warmup)
	pd.breakdown.started(r.warmup)
	pd.s.push(event{t: start + dur + pd.latency, kind: evPD, client: pdKVDone, req: r})
}

// push sends the KV r's prefill step on rp computed, ending at t, layer
// by layer to its decode rank.
func (pd *disagg) push(rp *rank, r *request, t Time) {
	ps := r.pd
	if r.computed <= ps.pushedTokens {
		return // recomputed after a preemption: that KV was sent already
	}
	bytes := pd.kvBytes(r.computed) - pd.kvBytes(ps.pushedTokens)
	ps.pushedTokens = r.computed
	x := pd.linkTime(bytes)
	layer, _ := toTime(float64(t-rp.stepStart)/pd.layers, 1, false)
	start := pd.reserve(rp, ps.decodeRank, rp.stepStart+layer, x)
	last, _ := toTime(float64(x)/pd.layers, 1, false)
	end := max(start+x, t+last)
	// The last layer's share may run past the link's booking.
	ra, rb := &pd.rank[rp.id], &pd.rank[ps.decodeRank.id]
	ra.linkFree, rb.linkFree = max(ra.linkFree, end), max(rb.linkFree, end)
	ps.pushEnd = max(ps.pushEnd, end)
	pd.breakdown.transfer(bytes, r.warmup)
}

// releaseBlocks drops one reference to each block (a request's table that
// no longer belongs to it), tail first as release does.
func (c *kvCache) releaseBlocks(blocks []int32) {
	for i := len(blocks) - 1; i >= 0; i-- {
		b := blocks[i]
		blk := &c.blocks[b]
		blk.ref--
		if blk.ref == 0 {
			c.pushTail(b)
		}
	}
}
