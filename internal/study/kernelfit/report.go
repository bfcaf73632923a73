package kernelfit

import (
	"fmt"
	"sort"
	"strings"
)

// Bar is an accuracy bar on the held-out median absolute error of one op
// kind (issue 9): GEMM 8%, attention (prefill and decode) 10%, fused MoE
// 12%, vLLM's all-reduce 10%. NCCL collectives are reported against the
// all-reduce bar too.
var Bars = map[string]float64{
	"gemm": 8, "context_attention": 10, "decode_attention": 10, "moe": 12, "all_reduce": 10, "nccl": 10,
}

// Miss is one judged error row above its bar.
type Miss struct {
	System string
	Row    ErrorRow
	Bar    float64
}

// Misses lists the judged rows of the results whose median is above the
// bar of their op kind.
func Misses(results []*Result) []Miss {
	var out []Miss
	for _, r := range results {
		for _, e := range r.Errors {
			bar, ok := Bars[e.Op]
			if ok && e.Judged() && e.MedianAPE > bar {
				out = append(out, Miss{r.System, e, bar})
			}
		}
	}
	return out
}

// SortResults orders results by system name.
func SortResults(results []*Result) {
	sort.Slice(results, func(i, j int) bool { return results[i].System < results[j].System })
}

func pct(v float64) string { return fmt.Sprintf("%.1f", v) }

// ErrorTable renders error rows of several systems as one Markdown table;
// a judged row above its bar is marked with ✗.
func ErrorTable(rows map[string][]ErrorRow, systems []string, markBars bool) string {
	var b strings.Builder
	b.WriteString("| GPU | op | format | points | N | median % | P90 % | bias % |\n|---|---|---|---|---:|---:|---:|---:|\n")
	for _, sys := range systems {
		for _, e := range rows[sys] {
			if e.N == 0 {
				if e.Scope != ScopeHeldOut && e.Scope != "" {
					fmt.Fprintf(&b, "| %s | %s | %s | %s | 0 | — | — | — |\n", sys, e.Op, e.Format, e.Scope)
				}
				continue
			}
			med := pct(e.MedianAPE)
			if bar, ok := Bars[e.Op]; markBars && ok && e.Judged() && e.MedianAPE > bar {
				med += " ✗"
			}
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %d | %s | %s | %+.1f |\n", sys, e.Op, e.Format, e.Scope, e.N, med, pct(e.P90APE), e.Bias)
		}
	}
	return b.String()
}

// g4 prints a coefficient at the four significant digits it is stored at.
func g4(v float64) string { return fmt.Sprintf("%.4g", v) }

func yes(v bool) string {
	if v {
		return "yes"
	}
	return "no"
}

// CoefficientTables renders the fitted coefficients of every result.
func CoefficientTables(results []*Result) string {
	var b strings.Builder
	b.WriteString("GEMM (per format; `FormulaGEMM`):\n\n")
	b.WriteString("| GPU | format | efficiency | half_tokens | tile_tokens | wave_tile_n | bandwidth_efficiency | overhead_us | sharpness | quant_bandwidth_efficiency | unaligned_us | eager_floor_us |\n")
	b.WriteString("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, r := range results {
		p := r.Profile
		for _, f := range p.Formats() {
			c := p.GEMM[f]
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", r.System, f, g4(c.Efficiency), g4(c.HalfTokens),
				g4(c.TileTokens), g4(c.WaveTileN), g4(c.BandwidthEfficiency), g4(c.OverheadUS), g4(c.Sharpness),
				g4(c.QuantBandwidthEfficiency), g4(c.UnalignedUS), g4(c.EagerFloorUS))
		}
	}
	b.WriteString("\nPrefill attention (per KV-cache type; `FormulaContextAttention`):\n\n")
	b.WriteString("| GPU | KV | tensor_efficiency | score_rate_t | overhead_us | block_us | bandwidth_efficiency | tail_sharpness | pack_gqa |\n")
	b.WriteString("|---|---|---:|---:|---:|---:|---:|---:|---|\n")
	for _, r := range results {
		a := r.Profile.Attention
		for _, kv := range sortedNames(a.Prefill) {
			c := a.Prefill[kv]
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", r.System, kv, g4(c.TensorEfficiency), g4(c.ScoreRateT),
				g4(c.OverheadUS), g4(c.BlockUS), g4(c.BandwidthEfficiency), g4(c.TailSharpness), yes(c.PackGQA))
		}
	}
	b.WriteString("\nDecode attention (per KV-cache type; `FormulaDecodeAttention`):\n\n")
	b.WriteString("| GPU | KV | bandwidth_efficiency | overhead_us | block_us | block_bandwidth | combine_us | split_kv | cache_mb | cache_speedup |\n")
	b.WriteString("|---|---|---:|---:|---:|---:|---:|---|---:|---:|\n")
	for _, r := range results {
		a := r.Profile.Attention
		for _, kv := range sortedNames(a.Decode) {
			c := a.Decode[kv]
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", r.System, kv, g4(c.BandwidthEfficiency), g4(c.OverheadUS),
				g4(c.BlockUS), g4(c.BlockBandwidth), g4(c.CombineUS), yes(c.SplitKV), g4(c.CacheMB), g4(c.CacheSpeedup))
		}
	}
	b.WriteString("\nFused MoE (per expert format; `FormulaMoE`):\n\n")
	b.WriteString("| GPU | format | efficiency | k_half | bandwidth_efficiency | overhead_us | block_tokens |\n|---|---|---:|---:|---:|---:|---:|\n")
	for _, r := range results {
		for _, f := range sortedNames(r.Profile.MoE) {
			c := r.Profile.MoE[f]
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s |\n", r.System, f, g4(c.Efficiency), g4(c.KHalf), g4(c.BandwidthEfficiency),
				g4(c.OverheadUS), g4(c.BlockTokens))
		}
	}
	b.WriteString("\nCollectives (`FormulaAllReduce`, `FormulaNCCL`; limits in bytes per rank):\n\n")
	b.WriteString("| GPU | custom_latency_us | custom_per_gpu_us | custom_link_efficiency | custom_two_shot_bytes | custom limit by GPUs | nccl_all_reduce_latency_us | nccl_latency_us | nccl_per_gpu_us | nccl_all_reduce_efficiency | nccl_link_efficiency | nccl_ll_efficiency | nccl_simple_extra_us |\n")
	b.WriteString("|---|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, r := range results {
		c := r.Profile.Comm
		var lim []string
		gpus := make([]int, 0, len(c.CustomMaxBytesByGPUs))
		for n := range c.CustomMaxBytesByGPUs {
			gpus = append(gpus, n)
		}
		sort.Ints(gpus)
		for _, n := range gpus {
			lim = append(lim, fmt.Sprintf("%d: %s", n, g4(c.CustomMaxBytesByGPUs[n])))
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", r.System, g4(c.CustomLatencyUS), g4(c.CustomPerGPUUS),
			g4(c.CustomLinkEfficiency), g4(c.CustomTwoShotBytes), strings.Join(lim, ", "), g4(c.NCCLAllReduceLatencyUS), g4(c.NCCLLatencyUS),
			g4(c.NCCLPerGPUUS), g4(c.NCCLAllReduceEfficiency), g4(c.NCCLLinkEfficiency), g4(c.NCCLLLEfficiency), g4(c.NCCLSimpleExtraUS))
	}
	return b.String()
}

func sortedNames[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Report is the generated part of docs/steptime.md: the fitted formula's
// held-out errors, the table backend's interpolation errors, the notes on
// coefficients taken from elsewhere, and the coefficients.
func Report(results []*Result, interp map[string][]ErrorRow) string {
	SortResults(results)
	systems := make([]string, len(results))
	rows := map[string][]ErrorRow{}
	for i, r := range results {
		systems[i] = r.System
		rows[r.System] = r.Errors
	}
	var b strings.Builder
	b.WriteString("Fitted on, and scored on: every table of `catalogs/kernels` (AIConfigurator's kernel timings of " + strings.Join(systems, ", ") +
		", vLLM 0.19.0) is split by a fixed rule (`internal/study/kernelfit/split.go`) into a fit half and a held-out half; " +
		"the coefficients are fitted on the fit half only, and every error below is on the held-out half. " +
		"No serving run is in these fits. Regenerate: `go run ./cmd/headroom-fit --only kernels`.\n\n")
	b.WriteString("### Fitted formula on held-out points\n\n")
	b.WriteString("Median and P90 of |predicted/measured − 1| and the signed median (positive: the formula is slow), in %. " +
		"Rows scoped `held-out` are judged against the bars (GEMM 8, attention 10, MoE 12, all-reduce 10); ✗ marks a miss.\n\n")
	b.WriteString(ErrorTable(rows, systems, true))
	var notes []string
	for _, r := range results {
		for _, n := range r.Notes {
			notes = append(notes, r.System+": "+n)
		}
	}
	if len(notes) > 0 {
		b.WriteString("\nCoefficients taken from elsewhere:\n\n")
		for _, n := range notes {
			b.WriteString("- " + n + "\n")
		}
	}
	if len(interp) > 0 {
		b.WriteString("\n### Table backend (interpolation) on held-out points\n\n")
		b.WriteString("A KernelDB built from the fit half predicts the held-out half with its Lookup methods (no bar).\n\n")
		b.WriteString(ErrorTable(interp, systems, false))
	}
	b.WriteString("\n### Fitted coefficients\n\n")
	b.WriteString(CoefficientTables(results))
	return b.String()
}
