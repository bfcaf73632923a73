package kernels

import (
	"fmt"
	"math"
	"sort"

	"github.com/headroom-sim/headroom/hardware"
	"github.com/headroom-sim/headroom/models"
)

// Point is one measured time next to the model's cost for the same work.
type Point struct {
	GPU   string // catalog GPU id
	Model string // Hugging Face id, or the data set's name
	// Op is the measured operation: a Vidur op name (attn_pre_proj …), or
	// an aggregate named after the model's op (mlp, elementwise).
	Op   string
	Kind models.OpKind // the model op it is predicted as
	TP   int
	// Tokens is the GEMM M dimension, the prefill chunk, or the decode
	// batch; Context the cached tokens per sequence (attention);
	// SizeBytes the all-reduce message.
	Tokens, Batch, Context int
	SizeBytes              int64
	Cost                   models.OpCost
	Measured               float64 // seconds (median over repetitions)
	// Aggregate points sum several measured kernels; they are reported,
	// not fitted.
	Aggregate bool
	// Weight balances the fit across the swept variable: each octave of
	// it on each curve weighs the same (Vidur's grids are dense at the
	// top, where every op is compute-bound).
	Weight float64
	curve  string
	x      float64
}

// fp16 is the precision Vidur profiled (and Splitwise ran) at.
var fp16 = models.Precision{Weights: hardware.FP16, KV: hardware.FP16, Activations: hardware.FP16}

// Model builds a models.Model with the shape and the given layer count.
// A non-gated MLP of width I is represented by a gated one of width 2I/3,
// which has the same FLOPs and weights.
func (s Shape) Model(id string, layers int) *models.Model {
	inter := s.Intermediate
	if !s.GatedMLP {
		inter = s.Intermediate * 2 / 3
	}
	return &models.Model{
		ID: id, Name: id, Architecture: "vidur-shape", DType: hardware.FP16,
		NumLayers: layers, HiddenSize: s.Hidden, IntermediateSize: inter,
		NumHeads: s.Heads, NumKVHeads: s.KVHeads, HeadDim: s.HeadDim(),
		VocabSize: s.Vocab, MaxPositions: 4096,
	}
}

// gemm is the cost of one [T×K]·[K×N] matmul in fp16.
func gemm(t, n, k int) models.OpCost {
	ft, fn, fk := float64(t), float64(n), float64(k)
	return models.OpCost{FLOPs: 2 * ft * fn * fk, WeightBytes: 2 * fn * fk, DataBytes: 2 * ft * (fn + fk), Tokens: t, Count: 1}
}

// elementwise is a memory-bound kernel moving the given elements (reads
// plus writes, fp16).
func elementwise(t int, elems float64) models.OpCost {
	return models.OpCost{DataBytes: 2 * elems, Tokens: t, Count: 1}
}

// LayerOps returns the model's cost of each of Vidur's per-layer ops for
// tokens rows of one layer of shape s at tensor-parallel degree tp, and
// the model's own aggregates (qkv_proj, o_proj, mlp and elementwise, from
// models.CostModel.Step on a one-layer model).
//
// The projections come straight from CostModel.Step. The gate/up and down
// projections split Step's MLP cost by their shares (2/3 and 1/3 of the
// FLOPs and weights). The elementwise ops count the bytes each kernel reads
// and writes: RMSNorm 2·H, rotary embedding 2·(Q+KV) (in place on q and
// k), SiLU-and-mul 3·I/tp (GELU 2·I/tp), residual add 3·H, embedding
// lookup 2·H per token.
func LayerOps(s Shape, tp, tokens int) (ops map[string]models.OpCost, step models.Cost) {
	m := s.Model("vidur-shape", 1)
	cm := m.NewCostModel(fp16, tp)
	var b models.Batch
	b.AddPrefill(tokens, 0, 0, false)
	step = cm.Step(&b)
	t := tokens
	h := s.Hidden
	ir := s.Intermediate / tp
	hd := s.HeadDim()
	q := s.Heads / tp * hd
	kv := m.KVHeadsPerRank(tp) * hd
	ft := float64(t)
	ops = map[string]models.OpCost{
		"attn_pre_proj":  step[models.OpQKVProj],
		"attn_post_proj": step[models.OpOProj],
	}
	if s.GatedMLP {
		mlp := step[models.OpMLP]
		ops["mlp_up_proj"] = models.OpCost{FLOPs: mlp.FLOPs * 2 / 3, WeightBytes: mlp.WeightBytes * 2 / 3,
			DataBytes: 2 * ft * float64(h+2*ir), Tokens: t, Count: 1}
		ops["mlp_down_proj"] = models.OpCost{FLOPs: mlp.FLOPs / 3, WeightBytes: mlp.WeightBytes / 3,
			DataBytes: 2 * ft * float64(ir+h), Tokens: t, Count: 1}
		ops["mlp_act"] = elementwise(t, 3*ft*float64(ir))
	} else {
		ops["mlp_up_proj"] = gemm(t, ir, h)
		ops["mlp_down_proj"] = gemm(t, h, ir)
		ops["mlp_act"] = elementwise(t, 2*ft*float64(ir))
	}
	ops["input_layernorm"] = elementwise(t, 2*ft*float64(h))
	ops["post_attention_layernorm"] = elementwise(t, 2*ft*float64(h))
	ops["attn_rope"] = elementwise(t, 2*ft*float64(q+kv))
	ops["add"] = elementwise(t, 3*ft*float64(h))
	ops["emb"] = elementwise(t, 2*ft*float64(h))
	return ops, step
}

// VidurOpKind maps Vidur's mlp.csv op names to the model's op kinds.
var VidurOpKind = map[string]models.OpKind{
	"attn_pre_proj":            models.OpQKVProj,
	"attn_post_proj":           models.OpOProj,
	"mlp_up_proj":              models.OpMLP,
	"mlp_down_proj":            models.OpMLP,
	"mlp_act":                  models.OpElementwise,
	"input_layernorm":          models.OpElementwise,
	"post_attention_layernorm": models.OpElementwise,
	"attn_rope":                models.OpElementwise,
	"add":                      models.OpElementwise,
	"emb":                      models.OpElementwise,
}

// ElementwiseLayerOps are the measured kernels the aggregate "elementwise"
// point sums: what the model's OpElementwise stands for in one layer.
// vLLM fuses each residual add into the following RMSNorm (4·H moved per
// fused norm); Vidur times them apart, so one add is counted with the two
// norms (2·2H + 3H ≈ 2·4H).
var ElementwiseLayerOps = []string{"input_layernorm", "post_attention_layernorm", "attn_rope", "mlp_act", "add"}

// MLPPoints compares every op of every mlp.csv row. Rows repeated for the
// same token count and TP are merged (mean of their medians).
func MLPPoints(files []MLPFile) []Point {
	var pts []Point
	for _, f := range files {
		type key struct{ tokens, tp int }
		merged := map[key]map[string][]float64{}
		shapes := map[key]Shape{}
		var keys []key
		for _, r := range f.Rows {
			k := key{r.Tokens, r.TP}
			if merged[k] == nil {
				merged[k] = map[string][]float64{}
				shapes[k] = r.Shape
				keys = append(keys, k)
			}
			for op, s := range r.Ops {
				merged[k][op] = append(merged[k][op], s.Seconds())
			}
		}
		sort.Slice(keys, func(i, j int) bool {
			if keys[i].tp != keys[j].tp {
				return keys[i].tp < keys[j].tp
			}
			return keys[i].tokens < keys[j].tokens
		})
		for _, k := range keys {
			s := shapes[k]
			ops, step := LayerOps(s, k.tp, k.tokens)
			meas := map[string]float64{}
			for op, v := range merged[k] {
				meas[op] = mean(v)
			}
			base := Point{GPU: f.GPU, Model: f.Model, TP: k.tp, Tokens: k.tokens, x: float64(k.tokens)}
			for _, op := range sortedKeys(meas) {
				kind, ok := VidurOpKind[op]
				if !ok || !(meas[op] > 0) {
					continue
				}
				p := base
				p.Op, p.Kind, p.Cost, p.Measured = op, kind, ops[op], meas[op]
				pts = append(pts, p)
			}
			// Aggregates in the model's own op kinds.
			if up, down := meas["mlp_up_proj"], meas["mlp_down_proj"]; s.GatedMLP && up > 0 && down > 0 {
				p := base
				p.Op, p.Kind, p.Cost, p.Measured, p.Aggregate = "mlp", models.OpMLP, step[models.OpMLP], up+down, true
				pts = append(pts, p)
			}
			var elt float64
			complete := true
			for _, op := range ElementwiseLayerOps {
				if op == "post_attention_layernorm" && meas[op] == 0 {
					// Parallel attention/MLP blocks (phi-2) have one norm.
					continue
				}
				if meas[op] == 0 {
					complete = false
				}
				elt += meas[op]
			}
			if complete {
				c := step[models.OpElementwise]
				// Step's elementwise cost includes the embedding lookup
				// once per forward pass; one layer of a deep model does
				// not pay it.
				c.DataBytes -= 2 * float64(k.tokens) * float64(s.Hidden)
				p := base
				p.Op, p.Kind, p.Cost, p.Measured, p.Aggregate = "elementwise", models.OpElementwise, c, elt, true
				pts = append(pts, p)
			}
		}
	}
	for i := range pts {
		pts[i].curve = fmt.Sprintf("%s|%s|%s|%d", pts[i].GPU, pts[i].Model, pts[i].Op, pts[i].TP)
	}
	setWeights(pts)
	return pts
}

// AttentionPoints compares every attention.csv row with the model's
// attention cost for the same batch on a one-layer model of the heads'
// shape. Each prefill row gives two points: attn_prefill with the model's
// causal work (q·c + q(q+1)/2 query-key pairs per chunk of q tokens after c
// cached), and attn_prefill_square with the work Vidur's kernel did,
// q·(c+q) pairs: its times grow with the full square (4096 new tokens
// without cache take 2.31 ms, 1024 new after 3072 cached 0.54 ms: 4.3× the
// time for 2.3× the causal pairs and 4.0× the rectangle), so the kernel
// profiled did not skip the masked half of the diagonal block, which
// vLLM's causal FlashAttention does.
func AttentionPoints(sets []AttentionSet) []Point {
	var pts []Point
	for _, set := range sets {
		cms := map[[4]int]*models.CostModel{}
		for _, r := range set.Rows {
			k := [4]int{r.Hidden, r.Heads, r.KVHeads, r.TP}
			cm := cms[k]
			if cm == nil {
				sh := Shape{Heads: r.Heads, KVHeads: r.KVHeads, Hidden: r.Hidden, Intermediate: 4 * r.Hidden, Vocab: 32000, GatedMLP: true}
				cm = sh.Model("vidur-attention", 1).NewCostModel(fp16, r.TP)
				cms[k] = cm
			}
			var b models.Batch
			p := Point{GPU: set.GPU, Model: set.Name, TP: r.TP, Batch: r.BatchSize, Context: r.KVCache, Measured: r.Time.Seconds()}
			if r.IsPrefill {
				if r.PrefillChunk <= 0 {
					continue
				}
				for range r.BatchSize {
					b.AddPrefill(r.PrefillChunk, r.KVCache, 0, true)
				}
				p.Op, p.Kind, p.Tokens = "attn_prefill", models.OpAttnPrefill, r.PrefillChunk*r.BatchSize
				p.Cost = cm.Step(&b)[models.OpAttnPrefill]
				p.x = b.PrefillPairs
				// The same kernel with the work it actually does: every
				// query against every key, q·(c+q) pairs.
				sq := p
				q, c := float64(r.PrefillChunk), float64(r.KVCache)
				sq.Op = "attn_prefill_square"
				sq.Cost.FLOPs *= q * (c + q) / (q*c + q*(q+1)/2)
				sq.curve = set.Name + "|" + sq.Op
				if sq.Measured > 0 {
					pts = append(pts, sq)
				}
			} else {
				for range r.BatchSize {
					b.AddDecode(r.KVCache+1, 0)
				}
				p.Op, p.Kind, p.Tokens = "attn_decode", models.OpAttnDecode, r.BatchSize
				p.Cost = cm.Step(&b)[models.OpAttnDecode]
				p.x = b.DecodeContext
			}
			if !(p.Measured > 0) {
				continue
			}
			p.curve = set.Name + "|" + p.Op
			pts = append(pts, p)
		}
	}
	setWeights(pts)
	return pts
}

// AllReducePoints compares the all-reduce rows of every network set.
func AllReducePoints(sets []NetworkSet) []Point {
	var pts []Point
	for _, set := range sets {
		// Rows repeat per rank in some files: merge by (workers, devices
		// per node, size).
		type key struct {
			workers, dpn int
			size         int64
		}
		merged := map[key][]float64{}
		var keys []key
		for _, r := range set.Rows {
			if r.Collective != "all_reduce" {
				continue
			}
			k := key{r.Workers, r.DevicesPerNode, r.SizeBytes}
			if merged[k] == nil {
				keys = append(keys, k)
			}
			merged[k] = append(merged[k], r.Time.Seconds())
		}
		sort.Slice(keys, func(i, j int) bool {
			a, b := keys[i], keys[j]
			if a.workers != b.workers {
				return a.workers < b.workers
			}
			if a.dpn != b.dpn {
				return a.dpn < b.dpn
			}
			return a.size < b.size
		})
		for _, k := range keys {
			if k.dpn < k.workers {
				continue // crosses nodes: not a scale-up all-reduce
			}
			m := mean(merged[k])
			if !(m > 0) {
				continue
			}
			pts = append(pts, Point{
				GPU: set.GPU, Model: set.Name, Op: "all_reduce", Kind: models.OpAllReduce,
				TP: k.workers, SizeBytes: k.size, Measured: m,
				Cost:  models.OpCost{DataBytes: float64(k.size), Count: 1},
				curve: fmt.Sprintf("%s|%d", set.Name, k.workers), x: float64(k.size),
			})
		}
	}
	setWeights(pts)
	return pts
}

// setWeights gives each octave of x on each curve the same total weight.
func setWeights(pts []Point) {
	count := map[string]int{}
	key := func(p *Point) string {
		return fmt.Sprintf("%s|%d", p.curve, int(math.Floor(math.Log2(math.Max(p.x, 1)))))
	}
	for i := range pts {
		count[key(&pts[i])]++
	}
	for i := range pts {
		pts[i].Weight = 1 / float64(count[key(&pts[i])])
	}
}

func mean(v []float64) float64 {
	var s float64
	for _, x := range v {
		s += x
	}
	return s / float64(len(v))
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
