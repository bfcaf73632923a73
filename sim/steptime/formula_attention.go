package steptime

import "math"

// The tile sizes of the attention kernels (FlashAttention 2/3 and
// FlashInfer at head dimensions 64–256 all use 128-row query tiles and
// 128-key KV tiles for causal prefill, and 128-token KV blocks per split in
// decode). They are part of the formula, not fitted.
const (
	attnQTile     = 128 // query rows per thread block (prefill)
	attnKTile     = 128 // keys per inner-loop step (prefill)
	decodeKVBlock = 128 // KV tokens per block a decode split reads
	maxKVSplits   = 128 // most KV splits of one sequence (FlashAttention's cap)
)

// FormulaContextAttention is the formula's prefill attention time of a
// kernel over batch chunks whose query-key pairs total pairs (per head),
// with kvTokens tokens of queries (and their new KV) in all. The chunks
// are priced as batch fresh prompts with the same work (equivalentLength;
// for a sliding window w, s with w(w+1)/2 + (s−w)·w pairs).
//
// The kernel tiles each (sequence, head) into 128-row query blocks, one
// thread block each; a block walks the 128-key KV tiles up to its last
// query (causal) or back to its window. Time = overhead + tile work + the
// query/output traffic:
//
//	per score = 4·d / (peak·tensor_efficiency) + 1/score_rate
//	parallel  = scores·per score + blocks·block_us / SMs
//	longest   = (KV tiles of the last block)·128²·per score·SMs + block_us
//	compute   = (parallel^p + longest^p)^(1/p)   (p = tail_sharpness)
//	t = overhead + compute + tokens·heads·d·4 B / (bandwidth·bandwidth_efficiency)
//
// scores counts whole tiles (a partial or diagonal tile costs a full one).
// With pack_gqa the query heads that share a KV head fill one block's rows
// together (FlashAttention 3), so short prompts still fill the tiles.
// A one-token prompt is a decode (vLLM's FlashInfer backend sends it to the
// decode kernel; FlashAttention runs it as one), priced by
// FormulaDecodeAttention.
func FormulaContextAttention(p *Profile, h Hardware, a AttentionShape, batch, pairs, kvTokens float64) (float64, Bound) {
	if batch <= 0 || pairs <= 0 {
		return 0, BoundOverhead
	}
	s := equivalentLength(pairs, batch)
	if w := float64(a.Key.Window); w > 0 && pairs/batch > w*(w+1)/2 {
		// The fresh windowed prompt with the same work: w(w+1)/2 + (s−w)·w pairs.
		s = pairs/(batch*w) + (w-1)/2
	}
	if s <= 1.0001 {
		return FormulaDecodeAttention(p, h, a, batch, math.Max(kvTokens, batch))
	}
	c := p.Attention.prefill(a.Key.KVDType)
	sc := p.Scale.speed()
	hd, heads, kv := float64(a.Key.HeadDim), float64(max(a.Key.Heads, 1)), float64(max(a.Key.KVHeads, 1))
	units, group := heads, 1.0
	if c.PackGQA && heads > kv {
		units, group = kv, heads/kv
	}
	tiles, longest, blocks := causalTiles(s, group, float64(a.Key.Window))
	per := 4 * hd / (h.AttentionFLOPS * c.TensorEfficiency)
	if c.ScoreRateT > 0 {
		per += 1 / (c.ScoreRateT * 1e12)
	}
	scores := batch * units * tiles * attnQTile * attnKTile
	nb := batch * units * blocks
	cta := c.BlockUS * 1e-6
	parallel := scores*per + nb*cta/h.SMs
	tail := longest*attnQTile*attnKTile*per*h.SMs + cta
	tc := smoothMax(parallel, tail, c.TailSharpness) / sc.Compute
	tokens := math.Max(kvTokens, batch)
	tm := tokens * heads * hd * 4 / (h.BytesPerSec * c.BandwidthEfficiency) / sc.Memory
	over := c.OverheadUS * 1e-6 * sc.Overhead
	return over + tc + tm, boundOf(tc, tm, over)
}

// causalTiles counts the KV tiles the query blocks of one (sequence, KV
// unit) walk for a causal prompt of s tokens whose group query heads share
// a block's rows (1 without GQA packing), within window (0: full): the
// total, the longest block's, and the number of blocks.
func causalTiles(s, group, window float64) (total, longest, blocks float64) {
	rows := s * group
	blocks = math.Ceil(rows / attnQTile)
	r := attnQTile / group // tokens per query block
	q := attnKTile / r     // query blocks per KV tile (≥ 1)
	full := math.Ceil(s / attnKTile)
	if q < 1 {
		q = 1
	}
	// Σ_{j=1..T} ceil(j/q) = T²/(2q) + T/2 for T a multiple of q.
	sum := func(t float64) float64 { return t*t/(2*q) + t/2 }
	if window <= 0 || window >= s {
		total, longest = sum(blocks), full
	} else {
		w := math.Ceil(window/attnKTile) + 1 // tiles a block inside the window band walks
		jw := math.Min(blocks, w*q)
		total, longest = sum(jw)+(blocks-jw)*w, math.Min(w, full)
	}
	// Every block walks at least one tile and at most all of them.
	return math.Min(math.Max(total, blocks), blocks*full), longest, blocks
}

// FormulaDecodeAttention is the formula's decode attention time of batch
// sequences with kvTokens cached tokens in all.
//
// Decode streams every sequence's KV once. One thread block serves a
// (sequence, KV head) pair; with split_kv, when those pairs do not fill the
// SMs, each sequence's KV is cut into up to 128 splits of whole 128-token
// blocks and a combine kernel merges them. Time = overhead + block fixed
// costs + the larger of the stream at full rate and the longest block's
// stream at one block's rate, + the combine:
//
//	t = overhead + blocks·block_us/SMs + max(KV/(bw·eff), longest/(block_bandwidth·bw·eff/SMs)) + combine_us
//
// A sliding window reads the whole 128-token blocks that overlap it. In a
// kernel benchmark the same KV is read over and over, so a working set
// under cache_mb streams from L2 at cache_speedup × the HBM rate
// (AttentionShape.WarmCache); a serving step's KV is not warm.
func FormulaDecodeAttention(p *Profile, h Hardware, a AttentionShape, batch, kvTokens float64) (float64, Bound) {
	if batch <= 0 {
		return 0, BoundOverhead
	}
	c := p.Attention.decode(a.Key.KVDType)
	sc := p.Scale.speed()
	hd, heads, kv := float64(a.Key.HeadDim), float64(max(a.Key.Heads, 1)), float64(max(a.Key.KVHeads, 1))
	l := math.Max(kvTokens/batch, 1)
	if w := float64(a.Key.Window); w > 0 && l > w {
		blocks := math.Floor((l-1)/decodeKVBlock) - math.Floor((l-w)/decodeKVBlock) + 1
		l = math.Min(l, blocks*decodeKVBlock)
	}
	kvb := a.KVBytes
	if kvb <= 0 {
		kvb = 2
	}
	bytes := batch * kv * l * hd * 2 * kvb
	units := batch * kv
	nb := math.Ceil(l / decodeKVBlock)
	splits := 1.0
	if c.SplitKV && units < h.SMs {
		splits = math.Min(math.Min(nb, math.Ceil(h.SMs/units)), maxKVSplits)
	}
	longest := math.Ceil(nb/splits) * decodeKVBlock * hd * 2 * kvb
	bw := h.BytesPerSec * c.BandwidthEfficiency
	if a.WarmCache && c.CacheMB > 0 && bytes < c.CacheMB*1e6 {
		bw *= math.Max(c.CacheSpeedup, 1)
	}
	stream := (bytes + batch*heads*hd*4) / bw
	if c.BlockBandwidth > 0 {
		stream = math.Max(stream, longest/(c.BlockBandwidth*bw/h.SMs))
	}
	tm := stream / sc.Memory
	over := (c.OverheadUS*1e-6 + c.BlockUS*1e-6*units*splits/h.SMs) * sc.Overhead
	if splits > 1 {
		over += c.CombineUS * 1e-6 * sc.Overhead
	}
	return over + tm, boundOf(0, tm, over)
}
