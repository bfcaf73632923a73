package kernelfit

import (
	"fmt"
	"math"

	"github.com/headroom-sim/headroom/sim/steptime"
)

// The attention kernels' discrete structure the fit chooses among, by the
// loss on the fit half: GEMM-style packing of the query heads that share a
// KV head into one block (prefill), split-KV decode, and the L2 working
// set of the benchmark's repeated decode reads (MB, 0: none).
var (
	packChoices  = []bool{false, true}
	splitChoices = []bool{false, true}
	cacheChoices = []float64{0, 25, 50, 100, 200}
)

// attentionFitEvery thins the fit half (neighbouring grid points carry
// the same information).
const attentionFitEvery = 3

// Head-count consistency: attention work grows with the query heads, so a
// table in which doubling the query heads (same batch, length, KV heads,
// head dimension) makes the kernel more than headDropRatio faster in more
// than headDropShare of the pairs does not measure the shapes its keys
// name. Such a table is not fitted and not judged.
const (
	headDropRatio = 0.8
	headDropShare = 0.05
)

// checkHeads returns the share of query-head doublings whose time drops
// below headDropRatio of the smaller shape's.
func checkHeads(pts []steptime.AttentionPoint) float64 {
	type key struct {
		k                steptime.AttentionKey
		batch, len, head int
	}
	t := map[key]float64{}
	for _, pt := range pts {
		k := pt.Key
		h := k.Heads
		k.Heads = 0
		t[key{k, pt.Batch, pt.Len, h}] = pt.Sec
	}
	var n, bad int
	for k, v := range t {
		k2 := k
		k2.head *= 2
		if v2, ok := t[k2]; ok {
			n++
			if v2 < headDropRatio*v {
				bad++
			}
		}
	}
	if n == 0 {
		return 0
	}
	return float64(bad) / float64(n)
}

func attentionShape(k steptime.AttentionKey) steptime.AttentionShape {
	kvb := 2.0
	if k.KVDType == "fp8" {
		kvb = 1
	}
	// The tables' kernels read the same KV call after call.
	return steptime.AttentionShape{Key: k, KVBytes: kvb, WarmCache: true}
}

// contextWork is a prefill row's query-key pairs and tokens.
func contextWork(pt steptime.AttentionPoint) (pairs, tokens float64) {
	b, s := float64(pt.Batch), float64(pt.Len)
	pairs = s * (s + 1) / 2
	if w := float64(pt.Key.Window); w > 0 && s > w {
		pairs = w*(w+1)/2 + (s-w)*w
	}
	return b * pairs, b * s
}

func predictContext(p *steptime.Profile, hw steptime.Hardware, pt steptime.AttentionPoint) float64 {
	pairs, tok := contextWork(pt)
	t, _ := steptime.FormulaContextAttention(p, hw, attentionShape(pt.Key), float64(pt.Batch), pairs, tok)
	return t
}

func predictDecode(p *steptime.Profile, hw steptime.Hardware, pt steptime.AttentionPoint) float64 {
	t, _ := steptime.FormulaDecodeAttention(p, hw, attentionShape(pt.Key), float64(pt.Batch), float64(pt.Batch*pt.Len))
	return t
}

func attentionSec(pt steptime.AttentionPoint) float64 { return pt.Sec }

func byKV(pts []steptime.AttentionPoint) map[string][]steptime.AttentionPoint {
	out := map[string][]steptime.AttentionPoint{}
	for _, pt := range pts {
		out[pt.Key.KVDType] = append(out[pt.Key.KVDType], pt)
	}
	return out
}

func fitAttention(db *steptime.KernelDB, hw steptime.Hardware, p *steptime.Profile, base steptime.Profile, res *Result) {
	if p.Attention.Prefill == nil {
		p.Attention.Prefill = map[string]steptime.PrefillCoeffs{}
	}
	if p.Attention.Decode == nil {
		p.Attention.Decode = map[string]steptime.DecodeCoeffs{}
	}
	dec := byKV(db.AttentionPoints(false))
	ctx := byKV(db.AttentionPoints(true))
	for _, kv := range []string{"bf16", "fp8"} {
		if pts := dec[kv]; len(pts) > 0 {
			fit, hold := splitAttention(pts)
			p.Attention.Decode[kv] = fitDecode(hw, p, kv, every(fit, attentionFitEvery))
			res.Errors = append(res.Errors, errorsOf("decode_attention", "kv "+kv, ScopeHeldOut, hold,
				func(pt steptime.AttentionPoint) float64 { return predictDecode(p, hw, pt) }, attentionSec))
		}
	}
	fitted := map[string]bool{}
	for _, kv := range []string{"bf16", "fp8"} {
		pts := ctx[kv]
		if len(pts) == 0 {
			continue
		}
		fit, hold := splitAttention(pts)
		scope := ScopeHeldOut
		if bad := checkHeads(pts); bad > headDropShare {
			// Not a measurement of the labelled shapes: keep this GPU's
			// fit of the other KV type, else the base profile's.
			var c steptime.PrefillCoeffs
			var from string
			if other := map[string]string{"bf16": "fp8", "fp8": "bf16"}[kv]; fitted[other] {
				c, from = p.Attention.Prefill[other], "this GPU's "+other+"-KV fit"
			} else if bc, ok := base.Attention.Prefill[kv]; ok && bc.TensorEfficiency > 0 {
				c, from = bc, base.Source
			} else {
				c, from = base.Attention.Prefill["bf16"], base.Source
			}
			if c.TensorEfficiency == 0 {
				c, from = steptime.BaseProfile().Attention.Prefill["bf16"], "the base profile"
			}
			p.Attention.Prefill[kv] = c
			scope = fmt.Sprintf("%s: %.0f%% of query-head doublings run >%.0f%% faster", ScopeNotJudged, 100*bad, 100*(1-headDropRatio))
			res.Notes = append(res.Notes, fmt.Sprintf("%s-KV prefill attention from %s: the table fails the query-head check", kv, from))
		} else {
			var long []steptime.AttentionPoint
			for _, pt := range every(fit, attentionFitEvery) {
				if pt.Len > 1 { // one-token prompts are priced as decodes
					long = append(long, pt)
				}
			}
			p.Attention.Prefill[kv] = fitPrefill(hw, p, kv, long)
			fitted[kv] = true
		}
		res.Errors = append(res.Errors, errorsOf("context_attention", "kv "+kv, scope, hold,
			func(pt steptime.AttentionPoint) float64 { return predictContext(p, hw, pt) }, attentionSec))
	}
}

func fitPrefill(hw steptime.Hardware, p *steptime.Profile, kv string, pts []steptime.AttentionPoint) steptime.PrefillCoeffs {
	effMax := 1.0
	if kv == "fp8" {
		effMax = 2 // an fp8-KV kernel may multiply in fp8
	}
	params := []Param{{"tensor_efficiency", 0.05, effMax, 0}, {"score_rate_t", 0.01, 1000, 0}, {"overhead_us", 0, 500, 1},
		{"block_us", 0, 100, 0.01}, {"bandwidth_efficiency", 0.02, 1, 0}, {"tail_sharpness", 1, 16, 0}}
	q := p.Clone()
	var best steptime.PrefillCoeffs
	bestL := math.Inf(1)
	for _, pack := range packChoices {
		coeffs := func(x []float64) steptime.PrefillCoeffs {
			return steptime.PrefillCoeffs{TensorEfficiency: x[0], ScoreRateT: x[1], OverheadUS: x[2], BlockUS: x[3],
				BandwidthEfficiency: x[4], TailSharpness: x[5], PackGQA: pack}
		}
		x, l := fitPoints(pts, params, []float64{0.7, 5, 8, 0.5, 0.5, 2}, func(x []float64) { q.Attention.Prefill[kv] = coeffs(x) },
			func(pt steptime.AttentionPoint) float64 { return predictContext(&q, hw, pt) }, attentionSec)
		if l < bestL-1e-9 {
			best, bestL = coeffs(x), l
		}
	}
	return steptime.PrefillCoeffs{TensorEfficiency: round4(best.TensorEfficiency), ScoreRateT: round4(best.ScoreRateT),
		OverheadUS: round4(best.OverheadUS), BlockUS: round4(best.BlockUS), BandwidthEfficiency: round4(best.BandwidthEfficiency),
		TailSharpness: round4(best.TailSharpness), PackGQA: best.PackGQA}
}

func fitDecode(hw steptime.Hardware, p *steptime.Profile, kv string, pts []steptime.AttentionPoint) steptime.DecodeCoeffs {
	params := []Param{{"bandwidth_efficiency", 0.02, 1, 0}, {"overhead_us", 0, 500, 1}, {"block_us", 0, 100, 0.01},
		{"block_bandwidth", 0.1, 64, 0}, {"combine_us", 0, 100, 1}, {"cache_speedup", 1, 20, 0}}
	q := p.Clone()
	var best steptime.DecodeCoeffs
	bestL := math.Inf(1)
	x0 := []float64{0.8, 8, 0.5, 4, 2, 2}
	for _, split := range splitChoices {
		for _, cache := range cacheChoices {
			ps := params
			if cache == 0 {
				ps = params[:5]
			}
			coeffs := func(x []float64) steptime.DecodeCoeffs {
				c := steptime.DecodeCoeffs{BandwidthEfficiency: x[0], OverheadUS: x[1], BlockUS: x[2], BlockBandwidth: x[3],
					CombineUS: x[4], SplitKV: split, CacheMB: cache}
				if cache > 0 {
					c.CacheSpeedup = x[5]
				}
				if !split {
					c.CombineUS = 0
				}
				return c
			}
			x, l := fitPoints(pts, ps, x0[:len(ps)], func(x []float64) { q.Attention.Decode[kv] = coeffs(x) },
				func(pt steptime.AttentionPoint) float64 { return predictDecode(&q, hw, pt) }, attentionSec)
			if l < bestL-1e-9 {
				best, bestL = coeffs(x), l
			}
		}
	}
	return steptime.DecodeCoeffs{BandwidthEfficiency: round4(best.BandwidthEfficiency), OverheadUS: round4(best.OverheadUS),
		BlockUS: round4(best.BlockUS), BlockBandwidth: round4(best.BlockBandwidth), CombineUS: round4(best.CombineUS),
		SplitKV: best.SplitKV, CacheMB: best.CacheMB, CacheSpeedup: round4(best.CacheSpeedup)}
}
