package kernels

import (
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/headroom-sim/headroom/hardware"
	"github.com/headroom-sim/headroom/models"
)

// Band is a named subset of points.
type Band struct {
	Name string
	In   func(p *Point) bool
}

// TokenBands split Vidur's token sweep where the projections change
// regime: weight-bound (decode-sized batches), the knee, compute-bound.
var TokenBands = []Band{
	{"T ≤ 64", func(p *Point) bool { return p.Tokens <= 64 }},
	{"64 < T < 512", func(p *Point) bool { return p.Tokens > 64 && p.Tokens < 512 }},
	{"T ≥ 512", func(p *Point) bool { return p.Tokens >= 512 }},
}

// SizeBands split the all-reduce sweep by message size.
var SizeBands = []Band{
	{"< 1 MiB", func(p *Point) bool { return p.SizeBytes < 1<<20 }},
	{"1–16 MiB", func(p *Point) bool { return p.SizeBytes >= 1<<20 && p.SizeBytes < 16<<20 }},
	{"≥ 16 MiB", func(p *Point) bool { return p.SizeBytes >= 16<<20 }},
}

// KernelOps is the order of the per-op table: the projections, the model's
// aggregates, then the elementwise kernels.
var KernelOps = []string{
	"attn_pre_proj", "attn_post_proj", "mlp_up_proj", "mlp_down_proj", "mlp",
	"elementwise", "input_layernorm", "post_attention_layernorm", "attn_rope", "mlp_act", "add", "emb",
}

var opLabel = map[string]string{
	"attn_pre_proj":            "attn_pre_proj (qkv_proj)",
	"attn_post_proj":           "attn_post_proj (o_proj)",
	"mlp_up_proj":              "mlp_up_proj (gate+up)",
	"mlp_down_proj":            "mlp_down_proj (down)",
	"mlp":                      "**mlp** = up + down",
	"elementwise":              "**elementwise** (layer)",
	"input_layernorm":          "input_layernorm",
	"post_attention_layernorm": "post_attention_layernorm",
	"attn_rope":                "attn_rope",
	"mlp_act":                  "mlp_act",
	"add":                      "add",
	"emb":                      "emb",
}

func cell(s Stats) string {
	if s.N == 0 {
		return "– | – | –"
	}
	return fmt.Sprintf("%.1f | %.1f | %+.1f", s.MedianAPE, s.P90APE, s.Bias)
}

func selectIdx(pts []Point, f func(p *Point) bool) []int {
	var idx []int
	for i := range pts {
		if f(&pts[i]) {
			idx = append(idx, i)
		}
	}
	return idx
}

// KernelTable writes the per-op error table of the mlp.csv points.
func KernelTable(w io.Writer, pts []Point, pred []float64, gpuIDs []string) {
	fmt.Fprintln(w, "| GPU | op | n | T ≤ 64: med | P90 | bias | 64 < T < 512: med | P90 | bias | T ≥ 512: med | P90 | bias |")
	fmt.Fprintln(w, "|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|")
	for _, g := range gpuIDs {
		for _, op := range KernelOps {
			all := selectIdx(pts, func(p *Point) bool { return p.GPU == g && p.Op == op })
			if len(all) == 0 {
				continue
			}
			var cells []string
			for _, b := range TokenBands {
				cells = append(cells, cell(Summarize(pred, pts, selectIdx(pts, func(p *Point) bool { return p.GPU == g && p.Op == op && b.In(p) }))))
			}
			fmt.Fprintf(w, "| %s | %s | %d | %s |\n", g, opLabel[op], len(all), strings.Join(cells, " | "))
		}
	}
}

// AttentionBands are the rows of the attention table.
var AttentionBands = []Band{
	{"all", func(p *Point) bool { return true }},
	{"chunk ≤ 256", func(p *Point) bool { return p.Kind == models.OpAttnPrefill && p.Tokens <= 256 }},
	{"chunk 257–1024", func(p *Point) bool { return p.Kind == models.OpAttnPrefill && p.Tokens > 256 && p.Tokens <= 1024 }},
	{"chunk > 1024", func(p *Point) bool { return p.Kind == models.OpAttnPrefill && p.Tokens > 1024 }},
	{"no cached context", func(p *Point) bool { return p.Kind == models.OpAttnPrefill && p.Context == 0 }},
	{"cached context ≥ chunk", func(p *Point) bool { return p.Kind == models.OpAttnPrefill && p.Context >= p.Tokens }},
	{"batch ≤ 8", func(p *Point) bool { return p.Kind == models.OpAttnDecode && p.Batch <= 8 }},
	{"batch 9–32", func(p *Point) bool { return p.Kind == models.OpAttnDecode && p.Batch > 8 && p.Batch <= 32 }},
	{"batch > 32", func(p *Point) bool { return p.Kind == models.OpAttnDecode && p.Batch > 32 }},
	{"context ≤ 512", func(p *Point) bool { return p.Kind == models.OpAttnDecode && p.Context <= 512 }},
	{"context > 512", func(p *Point) bool { return p.Kind == models.OpAttnDecode && p.Context > 512 }},
}

var attnLabel = map[string]string{
	"attn_prefill":        "prefill, model's causal work",
	"attn_prefill_square": "prefill, work the kernel did q·(c+q)",
	"attn_decode":         "decode",
}

// AttentionTable writes the attention error table.
func AttentionTable(w io.Writer, pts []Point, pred []float64) {
	fmt.Fprintln(w, "| data | op | subset | n | median APE % | P90 APE % | bias % |")
	fmt.Fprintln(w, "|---|---|---|--:|--:|--:|--:|")
	var names []string
	seen := map[string]bool{}
	for _, p := range pts {
		if !seen[p.Model] {
			seen[p.Model] = true
			names = append(names, p.Model)
		}
	}
	for _, s := range names {
		for _, op := range []string{"attn_prefill", "attn_prefill_square", "attn_decode"} {
			for _, b := range AttentionBands {
				idx := selectIdx(pts, func(p *Point) bool { return p.Model == s && p.Op == op && b.In(p) })
				if len(idx) == 0 {
					continue
				}
				fmt.Fprintf(w, "| %s (%s) | %s | %s | %d | %s |\n", s, pts[idx[0]].GPU, attnLabel[op], b.Name, len(idx), cell(Summarize(pred, pts, idx)))
			}
		}
	}
}

// AllReduceTable writes the all-reduce error table by node type and
// worker count.
func AllReduceTable(w io.Writer, pts []Point, pred []float64) {
	fmt.Fprintln(w, "| node | GPUs | n | < 1 MiB: med | P90 | bias | 1–16 MiB: med | P90 | bias | ≥ 16 MiB: med | P90 | bias |")
	fmt.Fprintln(w, "|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|")
	type key struct {
		set string
		n   int
	}
	seen := map[key]bool{}
	var keys []key
	for _, p := range pts {
		k := key{p.Model, p.TP}
		if !seen[k] {
			seen[k] = true
			keys = append(keys, k)
		}
	}
	sort.SliceStable(keys, func(i, j int) bool {
		if keys[i].set != keys[j].set {
			return keys[i].set < keys[j].set
		}
		return keys[i].n < keys[j].n
	})
	for _, k := range keys {
		all := selectIdx(pts, func(p *Point) bool { return p.Model == k.set && p.TP == k.n })
		var cells []string
		for _, b := range SizeBands {
			cells = append(cells, cell(Summarize(pred, pts, selectIdx(pts, func(p *Point) bool { return p.Model == k.set && p.TP == k.n && b.In(p) }))))
		}
		fmt.Fprintf(w, "| %s | %d | %d | %s |\n", k.set, k.n, len(all), strings.Join(cells, " | "))
	}
}

// SplitwiseResult is a case with its prediction.
type SplitwiseResult struct {
	SplitwiseCase
	Pred SplitwisePrediction
}

// PredictSplitwiseAll predicts every case whose model and GPU are known.
func PredictSplitwiseAll(cases []SplitwiseCase, ms map[string]*models.Model, gpus GPUs, prof ProfileFunc) ([]SplitwiseResult, error) {
	var out []SplitwiseResult
	for _, c := range cases {
		m := ms[c.Model]
		g := gpus[SplitwiseGPU[c.Hardware]]
		if m == nil || g == nil {
			continue
		}
		p, err := PredictSplitwise(c, m, g, prof(g))
		if err != nil {
			return nil, err
		}
		out = append(out, SplitwiseResult{c, p})
	}
	return out, nil
}

func relStats(pred, meas []float64) Stats {
	pts := make([]Point, len(meas))
	for i := range meas {
		pts[i].Measured = meas[i]
	}
	return Summarize(pred, pts, nil)
}

// SplitwiseTable writes the static-batch comparison by model, hardware and
// TP: prefill, per-token decode and e2e, and the decode bias of the GPU
// time alone (without the profile's CPU overhead).
func SplitwiseTable(w io.Writer, res []SplitwiseResult) {
	fmt.Fprintln(w, "| model | hardware | TP | cases | prefill: med | P90 | bias | decode/token: med | P90 | bias | e2e: med | P90 | bias | GPU-only bias: prefill | decode |")
	fmt.Fprintln(w, "|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|")
	type key struct {
		model, hw string
		tp        int
	}
	var keys []key
	groups := map[key][]SplitwiseResult{}
	for _, r := range res {
		k := key{r.Model, r.Hardware, r.TP}
		if groups[k] == nil {
			keys = append(keys, k)
		}
		groups[k] = append(groups[k], r)
	}
	for _, k := range keys {
		g := groups[k]
		var pm, pp, tm, tp, em, ep, pg, tg []float64
		for _, r := range g {
			pm, pp, pg = append(pm, r.Prompt1), append(pp, r.Pred.Prompt), append(pg, r.Pred.PromptGPU)
			tm, tp, tg = append(tm, r.Token), append(tp, r.Pred.Token), append(tg, r.Pred.TokenGPU)
			em, ep = append(em, r.E2E), append(ep, r.Pred.E2E)
		}
		fmt.Fprintf(w, "| %s | %s | %d | %d | %s | %s | %s | %+.1f | %+.1f |\n", k.model, k.hw, k.tp, len(g),
			cell(relStats(pp, pm)), cell(relStats(tp, tm)), cell(relStats(ep, em)),
			relStats(pg, pm).Bias, relStats(tg, tm).Bias)
	}
}

// SplitwiseDetail writes measured and predicted times of the cases picked
// by keep, in milliseconds.
func SplitwiseDetail(w io.Writer, res []SplitwiseResult, keep func(c *SplitwiseCase) bool) {
	fmt.Fprintln(w, "| model | hardware | TP | batch | prompt | prefill ms: measured | model | GPU only | decode ms/token: measured | model | GPU only |")
	fmt.Fprintln(w, "|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|")
	for _, r := range res {
		if !keep(&r.SplitwiseCase) {
			continue
		}
		fmt.Fprintf(w, "| %s | %s | %d | %d | %d | %.1f | %.1f | %.1f | %.1f | %.1f | %.1f |\n",
			r.Model, r.Hardware, r.TP, r.Batch, r.Prompt,
			r.Prompt1*1e3, r.Pred.Prompt*1e3, r.Pred.PromptGPU*1e3, r.Token*1e3, r.Pred.Token*1e3, r.Pred.TokenGPU*1e3)
	}
}

// Points gathers every comparison point of d.
func (d *Data) Points() []Point {
	pts := MLPPoints(d.MLP)
	pts = append(pts, AttentionPoints(d.Attention)...)
	return append(pts, AllReducePoints(d.Network)...)
}

// WriteReport writes every error table for the profiles prof gives, as
// Markdown.
func WriteReport(w io.Writer, d *Data, gpus GPUs, prof ProfileFunc, splitwiseModels map[string]*models.Model) error {
	ids := sortedKeys(gpus)
	pts := d.Points()
	var known []Point
	for _, p := range pts {
		if gpus[p.GPU] != nil {
			known = append(known, p)
		}
	}
	pred, err := Predict(known, gpus, prof)
	if err != nil {
		return err
	}
	var kern, attn, ar []Point
	var kp, ap, arp []float64
	for i, p := range known {
		switch {
		case p.Kind == models.OpAllReduce:
			ar, arp = append(ar, p), append(arp, pred[i])
		case p.Kind == models.OpAttnPrefill || p.Kind == models.OpAttnDecode:
			attn, ap = append(attn, p), append(ap, pred[i])
		default:
			kern, kp = append(kern, p), append(kp, pred[i])
		}
	}
	fmt.Fprintln(w, "### Profiles")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| GPU | gemm_efficiency | gemm_half_tokens | bandwidth_efficiency | elementwise_bandwidth_efficiency | kernel_overhead_us | attention_prefill_efficiency | attention_decode_efficiency | attention_kernel_overhead_us | all_reduce_latency_us | link_efficiency |")
	fmt.Fprintln(w, "|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|")
	for _, id := range ids {
		p := prof(gpus[id])
		fmt.Fprintf(w, "| %s | %.3g | %.3g | %.3g | %.3g | %.3g | %.3g | %.3g | %.3g | %.3g | %.3g |\n", id,
			p.GEMMEfficiency, p.GEMMHalfTokens, p.BandwidthEfficiency, p.ElementwiseBandwidthEfficiency, p.KernelOverheadUS,
			p.AttentionPrefillEfficiency, p.AttentionDecodeEfficiency, p.AttentionKernelOverheadUS, p.AllReduceLatencyUS, p.LinkEfficiency)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "### Per-layer kernels (Vidur mlp.csv): APE and bias in %")
	fmt.Fprintln(w)
	KernelTable(w, kern, kp, ids)
	fmt.Fprintln(w)
	if len(attn) > 0 {
		fmt.Fprintln(w, "### Attention (Vidur attention.csv, one layer, 32 query / 4 KV heads per GPU)")
		fmt.Fprintln(w)
		AttentionTable(w, attn, ap)
		fmt.Fprintln(w)
	}
	if len(ar) > 0 {
		fmt.Fprintln(w, "### All-reduce inside one node (Vidur network/*/all_reduce.csv): APE and bias in %")
		fmt.Fprintln(w)
		AllReduceTable(w, ar, arp)
		fmt.Fprintln(w)
	}
	if len(d.Splitwise) > 0 && splitwiseModels != nil {
		res, err := PredictSplitwiseAll(SplitwiseCases(d.Splitwise), splitwiseModels, gpus, prof)
		if err != nil {
			return err
		}
		fmt.Fprintln(w, "### Splitwise static batches (perf_model.csv): APE and bias in %")
		fmt.Fprintln(w)
		SplitwiseTable(w, res)
		fmt.Fprintln(w)
		fmt.Fprintln(w, "Selected Llama-2-70B cases (output 128 tokens):")
		fmt.Fprintln(w)
		SplitwiseDetail(w, res, func(c *SplitwiseCase) bool {
			return c.Model == "llama2-70b" && c.Hardware != "h100-80gb-pcap" && c.Output == 128 &&
				((c.Batch == 1 && (c.Prompt == 512 || c.Prompt == 8192)) || (c.Prompt == 512 && (c.Batch == 16 || c.Batch == 64)))
		})
		fmt.Fprintln(w)
	}
	return nil
}

// LoadGPUs picks GPUs out of a catalog lookup.
func LoadGPUs(lookup func(string) (*hardware.GPU, error), ids ...string) (GPUs, error) {
	out := GPUs{}
	for _, id := range ids {
		g, err := lookup(id)
		if err != nil {
			return nil, err
		}
		out[id] = g
	}
	return out, nil
}
