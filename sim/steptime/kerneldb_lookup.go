package steptime

import (
	"fmt"
	"math"
	"sort"
)

// AttentionShape is an attention call to look up: per-GPU heads, head
// dimension, KV element size and window of the key, and the per-sequence
// work.
type AttentionShape struct {
	Key AttentionKey
	// KVBytes is one KV element's size (2 for bf16, 1 for fp8).
	KVBytes float64
	// WarmCache says the same KV is read call after call, as in a kernel
	// benchmark, so a working set that fits in L2 stays there; a serving
	// step (every layer's KV in turn) is cold.
	WarmCache bool
}

// prefillIdeal is the ideal time of batch causal prompts of length s.
func (a AttentionShape) prefillIdeal(roof Roof, batch, s float64) float64 {
	h, kv, d := float64(a.Key.Heads), float64(a.Key.KVHeads), float64(a.Key.HeadDim)
	pairs := s * (s + 1) / 2
	if w := float64(a.Key.Window); w > 0 && s > w {
		pairs = w*(w+1)/2 + (s-w)*w
	}
	flops := batch * 4 * h * d * pairs
	bytes := batch * s * (4*h*d + 2*kv*d*a.KVBytes)
	return roof.time(flops, bytes)
}

// decodeIdeal is the ideal time of batch decode tokens over kvLen cached
// tokens each.
func (a AttentionShape) decodeIdeal(roof Roof, batch, kvLen float64) float64 {
	h, kv, d := float64(a.Key.Heads), float64(a.Key.KVHeads), float64(a.Key.HeadDim)
	if w := float64(a.Key.Window); w > 0 {
		kvLen = math.Min(kvLen, w)
	}
	flops := batch * 4 * h * d * kvLen
	bytes := batch * (2*kv*d*kvLen*a.KVBytes + 4*h*d)
	return roof.time(flops, bytes)
}

// LookupContextAttention returns the measured prefill attention time of
// batch causal prompts of length s (fractional s stands for a mix of chunks
// with the same work), interpolated on utilisation over batch and length.
// A head configuration that was not measured takes the nearest measured
// one's utilisation (same head dimension, KV type and window); ok is false
// when there is none.
func (db *KernelDB) LookupContextAttention(a AttentionShape, batch, s float64, roof Roof) (float64, bool) {
	g, key := nearestAttention(db.context, a.Key)
	if g == nil || batch < 1 || s < 1 {
		return 0, false
	}
	src := a
	src.Key = key
	lat := g.at(batch, s, func(b, x float64) float64 { return src.prefillIdeal(roof, b, x) })
	if key != a.Key {
		lat *= a.prefillIdeal(roof, batch, s) / src.prefillIdeal(roof, batch, s)
	}
	return lat, true
}

// LookupDecodeAttention returns the measured decode attention time of
// batch sequences with kvLen cached tokens each (the mean, for a mixed
// batch: decode attention streams every sequence's KV, so the total is what
// counts).
func (db *KernelDB) LookupDecodeAttention(a AttentionShape, batch, kvLen float64, roof Roof) (float64, bool) {
	g, key := nearestAttention(db.decode, a.Key)
	if g == nil || batch < 1 || kvLen < 1 {
		return 0, false
	}
	src := a
	src.Key = key
	lat := g.at(batch, kvLen, func(b, x float64) float64 { return src.decodeIdeal(roof, b, x) })
	if key != a.Key {
		lat *= a.decodeIdeal(roof, batch, kvLen) / src.decodeIdeal(roof, batch, kvLen)
	}
	return lat, true
}

// nearestAttention is the grid for k, or for the measured head
// configuration nearest to it (log distance in query and KV heads) with the
// same KV type, head dimension and window.
func nearestAttention(m map[AttentionKey]*grid2, k AttentionKey) (*grid2, AttentionKey) {
	if g := m[k]; g != nil {
		return g, k
	}
	var best *grid2
	var bestKey AttentionKey
	bestD := math.Inf(1)
	for c, g := range m {
		if c.KVDType != k.KVDType || c.HeadDim != k.HeadDim || c.Window != k.Window || c.Heads < 1 || c.KVHeads < 1 {
			continue
		}
		d := math.Abs(math.Log(float64(k.Heads)/float64(c.Heads))) + math.Abs(math.Log(float64(k.KVHeads)/float64(c.KVHeads)))
		if d < bestD || (d == bestD && lessKey(c, bestKey)) {
			best, bestKey, bestD = g, c, d
		}
	}
	return best, bestKey
}

func lessKey(a, b AttentionKey) bool {
	if a.Heads != b.Heads {
		return a.Heads < b.Heads
	}
	return a.KVHeads < b.KVHeads
}

// at interpolates the grid at (batch, x) on utilisation: along x within
// each measured batch row, then linearly in batch between rows; beyond the
// largest batch the utilisation holds.
func (g *grid2) at(batch, x float64, ideal func(b, x float64) float64) float64 {
	bs := g.batches
	row := func(b int) float64 {
		fb := float64(b)
		return g.rows[b].At(x, func(v float64) float64 { return ideal(fb, v) })
	}
	j := sort.Search(len(bs), func(i int) bool { return float64(bs[i]) >= batch })
	switch {
	case j < len(bs) && float64(bs[j]) == batch:
		return row(bs[j])
	case j == 0:
		return row(bs[0]) // fewer sequences than measured: the smallest batch's fixed cost holds
	case j == len(bs):
		b := bs[len(bs)-1]
		return row(b) * ideal(batch, x) / ideal(float64(b), x)
	}
	b0, b1 := bs[j-1], bs[j]
	w := (batch - float64(b0)) / float64(b1-b0)
	u0 := ideal(float64(b0), x) / row(b0)
	u1 := ideal(float64(b1), x) / row(b1)
	return ideal(batch, x) / (u0*(1-w) + u1*w)
}

// LookupMoE returns the fused-MoE time for tokens tokens entering the layer
// (the whole batch, every data-parallel rank's for expert parallelism) on
// hw, from the measured curve of configuration k; ok is false for a
// configuration that was not measured. Between and beyond the measured
// token counts the utilisation (ideal time on hw over measured time) is
// interpolated and held. A larger batch is never priced at a lower
// utilisation than a smaller measured one: vLLM picks its kernel
// configuration per batch size, so the smaller batch's configuration is
// available to the larger (the collector's Triton rows jump where their
// untuned configuration changes, by up to 3× from 64 to 128 tokens).
//
// Random routing (RoutingRandom) reads the balanced rows of the same
// configuration, their utilisation carried to the random loads' ideal
// time (fewer touched experts at decode sizes, uneven blocks above).
func (db *KernelDB) LookupMoE(k MoEKey, tokens int, hw Hardware) (float64, bool) {
	src := measuredKey(k)
	c := db.moe[src]
	if c == nil || c.Len() == 0 || tokens < 1 {
		return 0, false
	}
	if src != k {
		return carryMoE(c, src, hw, k, tokens, hw), true
	}
	return moeEnvelope(c, k, tokens, hw), true
}

// measuredKey is the measured configuration whose rows stand for k: k
// with its routing's measured stand-in (measuredRouting).
func measuredKey(k MoEKey) MoEKey {
	k.Routing = measuredRouting(k.Routing)
	return k
}

// PredecessorMoE bounds a fused-MoE time from above: the Predecessor's
// measured time of configuration k (or of its nearest measured split,
// carried by utilisation) at tokens — the older generation's kernel runs
// on this GPU too, and no slower. ok is false without a Predecessor or a
// measured shape there.
func (db *KernelDB) PredecessorMoE(k MoEKey, tokens int, hw Hardware) (float64, bool) {
	pd := db.Predecessor
	if pd == nil || tokens < 1 {
		return 0, false
	}
	src := measuredKey(k)
	if c := pd.moe[src]; c == nil || c.Len() == 0 {
		var found bool
		if src, found = pd.nearestSplit(src); !found {
			return 0, false
		}
	}
	return carryMoE(pd.moe[src], src, db.PredecessorHW, k, tokens, db.PredecessorHW), true
}

// LookupMoEStandIn prices k from the rows of its stand-in format on this
// GPU (MoEStandIns): the measured configuration of that format nearest to
// k's per-GPU shape (hidden size, expert width on one GPU, local experts,
// top-k, and the kind of split), its utilisation carried to k's ideal
// time. ok is false when k's format has no stand-in or the table has no
// rows of it; from names the source configuration.
func (db *KernelDB) LookupMoEStandIn(k MoEKey, tokens int, hw Hardware) (sec float64, from string, ok bool) {
	f, has := MoEStandIns[k.Format]
	if !has || tokens < 1 {
		return 0, "", false
	}
	mk := measuredKey(k)
	logr := func(a, b int) float64 { return math.Abs(math.Log(float64(max(a, 1)) / float64(max(b, 1)))) }
	var best MoEKey
	bestD := math.Inf(1)
	for c, curve := range db.moe {
		if c.Format != f || c.Routing != mk.Routing || curve.Len() == 0 {
			continue
		}
		d := logr(c.Hidden, k.Hidden) + logr(c.Inter/max(c.TP, 1), k.Inter/max(k.TP, 1)) +
			logr(c.Experts/max(c.EP, 1), k.Experts/max(k.EP, 1)) + logr(c.TopK, k.TopK) + logr(c.TP*c.EP, k.TP*k.EP)
		if (c.EP > 1) != (k.EP > 1) {
			d += 2 // an EP rank walks every rank's pairs: another cost structure
		}
		if d < bestD || (d == bestD && moeLess(c, best)) {
			best, bestD, ok = c, d, true
		}
	}
	if !ok {
		return 0, "", false
	}
	return carryMoE(db.moe[best], best, hw, k, tokens, hw),
		fmt.Sprintf("%s %d×%d, %d experts top %d, TP%d×EP%d", best.Format, best.Hidden, best.Inter, best.Experts, best.TopK, best.TP, best.EP), true
}

// carryMoE carries the utilisation of curve c (configuration src measured
// on srcHW) at tokens to k's ideal time on hw.
func carryMoE(c *Curve, src MoEKey, srcHW Hardware, k MoEKey, tokens int, hw Hardware) float64 {
	return moeEnvelope(c, src, tokens, srcHW) * moeIdeal(k, tokens, hw) / moeIdeal(src, tokens, srcHW)
}

// moeEnvelope is curve c of configuration k at tokens on hw, with the
// utilisation envelope of LookupMoE.
func moeEnvelope(c *Curve, k MoEKey, tokens int, hw Hardware) float64 {
	ideal := func(x float64) float64 { return moeIdeal(k, int(x), hw) }
	lat := c.At(float64(tokens), ideal)
	it := ideal(float64(tokens))
	if !(it > 0) {
		return lat
	}
	util := it / lat
	for i, x := range c.X {
		if x > float64(tokens) {
			break
		}
		if u := ideal(x) / c.Y[i]; u > util {
			util = u
		}
	}
	return it / util
}

// MoEConfigs lists the measured fused-MoE configurations.
func (db *KernelDB) MoEConfigs() []MoEKey {
	out := make([]MoEKey, 0, len(db.moe))
	for k := range db.moe {
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool { return moeLess(out[i], out[j]) })
	return out
}

func moeLess(a, b MoEKey) bool {
	switch {
	case a.Format != b.Format:
		return a.Format < b.Format
	case a.Routing != b.Routing:
		return a.Routing < b.Routing
	case a.Hidden != b.Hidden:
		return a.Hidden < b.Hidden
	case a.Inter != b.Inter:
		return a.Inter < b.Inter
	case a.Experts != b.Experts:
		return a.Experts < b.Experts
	case a.TopK != b.TopK:
		return a.TopK < b.TopK
	case a.TP != b.TP:
		return a.TP < b.TP
	}
	return a.EP < b.EP
}

// LookupAllReduce returns the measured time of vLLM's tensor-parallel
// all-reduce of bytes per rank over gpus GPUs (the custom kernel, or
// whatever vLLM dispatches to at that size), replayed in a CUDA graph or
// eager; ok is false for a GPU count that was not measured.
func (db *KernelDB) LookupAllReduce(gpus int, eager bool, bytes float64) (float64, bool) {
	c := db.allReduce[commKey{"all_reduce", gpus, eager}]
	if c == nil && eager {
		c = db.allReduce[commKey{"all_reduce", gpus, false}]
	}
	if c == nil || c.Len() == 0 || !(bytes > 0) {
		return 0, false
	}
	return c.At(bytes, nil), true
}

// LookupNCCL returns the measured time of an NCCL collective over gpus
// GPUs with a buffer of bytes (nccl-tests' size convention).
func (db *KernelDB) LookupNCCL(op string, gpus int, bytes float64) (float64, bool) {
	c := db.nccl[commKey{op, gpus, false}]
	if c == nil || c.Len() == 0 || !(bytes > 0) {
		return 0, false
	}
	return c.At(bytes, nil), true
}

func (c *Curve) has(x float64) bool {
	i, w, ok := c.bracket(x)
	return ok && ((w == 0 && c.X[i] == x) || (w == 1 && c.X[i+1] == x))
}

func (db *KernelDB) hasGEMM(format string, m, n, k int) bool {
	t := db.gemm[format]
	if t == nil {
		return false
	}
	c := t.sites[[2]int{n, k}]
	return c != nil && c.has(float64(m))
}

func (db *KernelDB) hasDecode(k AttentionKey, batch int, kvLen float64) bool {
	g := db.decode[k]
	if g == nil || g.rows[batch] == nil {
		return false
	}
	return g.rows[batch].has(kvLen)
}

func (db *KernelDB) hasMoE(k MoEKey, tokens int) bool {
	c := db.moe[k]
	return c != nil && c.has(float64(tokens))
}

func (db *KernelDB) hasAllReduce(gpus int, eager bool, bytes float64) bool {
	c := db.allReduce[commKey{"all_reduce", gpus, eager}]
	return c != nil && c.has(bytes)
}

// moeIdeal is the roofline time of the fused-MoE work of k at tokens on hw.
func moeIdeal(k MoEKey, tokens int, hw Hardware) float64 {
	w := MoEWorkFor(k, tokens)
	return hw.Roof(k.Format).time(w.FLOPs, w.WeightBytes+w.ActBytes)
}

// LookupMoETransfer prices a fused-MoE configuration the table does not
// hold from one it does: the same model shape (format, routing, sizes,
// experts, top-k) split another way over the GPUs — the nearest in GPUs
// per expert group, preferring the same kind of split (TP slices or EP
// groups) — or, failing that, the exact configuration on the sibling GPU.
// The source's utilisation (ideal over measured time) carries to k's ideal
// time on hw; from names the source.
func (db *KernelDB) LookupMoETransfer(k MoEKey, tokens int, hw Hardware) (sec float64, from string, ok bool) {
	if tokens < 1 {
		return 0, "", false
	}
	mk := measuredKey(k)
	if src, found := db.nearestSplit(mk); found {
		return carryMoE(db.moe[src], src, hw, k, tokens, hw), fmt.Sprintf("TP%d×EP%d", src.TP, src.EP), true
	}
	if sib := db.Sibling; sib != nil {
		if c := sib.moe[mk]; c != nil && c.Len() > 0 {
			return siblingMoE(c, mk, db.SiblingHW, k, tokens, hw), sib.System, true
		}
		if src, found := sib.nearestSplit(mk); found {
			return siblingMoE(sib.moe[src], src, db.SiblingHW, k, tokens, hw), fmt.Sprintf("%s TP%d×EP%d", sib.System, src.TP, src.EP), true
		}
	}
	return 0, "", false
}

// siblingMoE carries curve c (configuration src on the family sibling
// sibHW, the same SMs with other memory) to k on hw. A kernel far below
// its memory roof on the sibling is held up by its SMs, which hw shares:
// it keeps the sibling's time (at hw's compute rate), unless hw's memory
// roof at the best bandwidth utilisation the kernel reaches anywhere on
// its measured curve is slower. One that runs at that utilisation carries
// as carryMoE does. (gpt-oss-120b's mxfp4 experts decode about as fast on
// the H100 as on the H200, 30% more bandwidth notwithstanding.)
//
// A source split another way is first carried to k's split on the
// sibling (carryMoE), and a source curve's best utilisation read relative
// to that split.
func siblingMoE(c *Curve, src MoEKey, sibHW Hardware, k MoEKey, tokens int, hw Hardware) float64 {
	t := carryMoE(c, src, sibHW, k, tokens, sibHW)
	if f, fs := hw.Roof(k.Format).FLOPS, sibHW.Roof(k.Format).FLOPS; f > 0 && fs > 0 {
		t *= fs / f
	}
	var best float64
	for i, x := range c.X {
		w := MoEWorkFor(src, int(x))
		if u := (w.WeightBytes + w.ActBytes) / sibHW.BytesPerSec / c.Y[i]; u > best {
			best = u
		}
	}
	if best > 0 {
		w := MoEWorkFor(k, tokens)
		t = math.Max(t, (w.WeightBytes+w.ActBytes)/hw.BytesPerSec/best)
	}
	return t
}

// nearestSplit finds the measured split of k's model shape closest to k's.
func (db *KernelDB) nearestSplit(k MoEKey) (MoEKey, bool) {
	var best MoEKey
	found := false
	bestD := math.Inf(1)
	gpus := float64(max(k.TP, 1) * max(k.EP, 1))
	for c, curve := range db.moe {
		if curve.Len() == 0 || c.Format != k.Format || c.Routing != k.Routing || c.Hidden != k.Hidden || c.Inter != k.Inter ||
			c.TopK != k.TopK || c.Experts != k.Experts || c == k {
			continue
		}
		d := math.Abs(math.Log(float64(max(c.TP, 1)*max(c.EP, 1)) / gpus))
		if (c.EP > 1) != (k.EP > 1) {
			d += 0.5 // another kind of split: a worse stand-in than the same kind at a nearby size
		}
		if d < bestD || (d == bestD && moeLess(c, best)) {
			best, bestD, found = c, d, true
		}
	}
	return best, found
}
