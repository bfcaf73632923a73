package kerneldb

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/headroom-sim/headroom/sim/steptime"
)

// Bounds on the shapes a row may carry: a table row outside them is a
// corrupt or foreign file, refused with the row named rather than stored.
const (
	maxDim     = 1 << 24 // GEMM m, n, k; tokens; lengths
	maxBatch   = 1 << 20
	maxGPUs    = 1 << 12
	maxLatency = 3600e3 // ms: one kernel call over an hour is not a measurement
)

func checkLatency(i int, ms float64) error {
	if !(ms > 0) || ms > maxLatency || math.IsInf(ms, 0) {
		return fmt.Errorf("row %d: latency %g ms is not a positive duration", i+1, ms)
	}
	return nil
}

func checkDim(i int, name string, v int64, hi int64) error {
	if v < 0 || v > hi {
		return fmt.Errorf("row %d: %s %d is not in [0, %d]", i+1, name, v, hi)
	}
	return nil
}

// gemmFormats maps the tables' gemm_dtype and moe_dtype codes to the
// step-time model's kernel formats; other codes are skipped.
var gemmFormats = map[string]string{
	"bfloat16":    steptime.FormatBF16,
	"fp8":         steptime.FormatFP8,
	"fp8_block":   steptime.FormatFP8Block,
	"nvfp4":       steptime.FormatNVFP4,
	"int4_wo":     steptime.FormatINT4,
	"w4a16_mxfp4": steptime.FormatMXFP4,
}

func addGEMM(db *steptime.KernelDB, rows []gemmRow) error {
	for i, r := range rows {
		f, ok := gemmFormats[r.GEMMDType]
		if !ok {
			continue
		}
		for _, d := range []struct {
			name string
			v    int64
		}{{"m", r.M}, {"n", r.N}, {"k", r.K}} {
			if err := checkDim(i, d.name, d.v, maxDim); err != nil {
				return err
			}
		}
		if err := checkLatency(i, r.Latency); err != nil {
			return err
		}
		if r.M == 0 || r.N == 0 || r.K == 0 {
			continue
		}
		db.AddGEMM(f, int(r.M), int(r.N), int(r.K), r.Latency*1e-3)
	}
	return nil
}

func kvDType(s string) (string, bool) {
	switch s {
	case "bfloat16", "float16", "bf16", "fp16":
		return "bf16", true
	case "fp8", "fp8_e4m3":
		return "fp8", true
	}
	return "", false
}

func addAttention(db *steptime.KernelDB, rows []attentionRow, context bool) error {
	for i, r := range rows {
		kv, ok := kvDType(r.KVCacheDType)
		if !ok {
			continue
		}
		for _, d := range []struct {
			name string
			v    int64
			hi   int64
		}{{"batch_size", r.BatchSize, maxBatch}, {"isl", r.ISL, maxDim}, {"step", r.Step, maxDim},
			{"num_heads", r.NumHeads, 4096}, {"num_key_value_heads", r.NumKVHeads, 4096},
			{"head_dim", r.HeadDim, 4096}, {"window_size", r.WindowSize, maxDim}} {
			if err := checkDim(i, d.name, d.v, d.hi); err != nil {
				return err
			}
		}
		if err := checkLatency(i, r.Latency); err != nil {
			return err
		}
		if r.BatchSize == 0 || r.NumHeads == 0 || r.NumKVHeads == 0 || r.HeadDim == 0 {
			continue
		}
		k := steptime.AttentionKey{KVDType: kv, HeadDim: int(r.HeadDim), Window: int(r.WindowSize),
			Heads: int(r.NumHeads), KVHeads: int(r.NumKVHeads)}
		if context {
			if r.ISL == 0 {
				continue
			}
			db.AddContextAttention(k, int(r.BatchSize), int(r.ISL), r.Latency*1e-3)
			continue
		}
		// step is the KV length including the token being decoded.
		if r.Step == 0 {
			continue
		}
		db.AddDecodeAttention(k, int(r.BatchSize), int(r.Step), r.Latency*1e-3)
	}
	return nil
}

func addMoE(db *steptime.KernelDB, rows []moeRow) error {
	invariant := epInvariant(rows)
	for i, r := range rows {
		f, ok := gemmFormats[r.MoEDType]
		if !ok {
			continue
		}
		for _, d := range []struct {
			name string
			v    int64
			hi   int64
		}{{"num_tokens", r.NumTokens, maxDim}, {"hidden_size", r.HiddenSize, maxDim}, {"inter_size", r.InterSize, maxDim},
			{"topk", r.TopK, 4096}, {"num_experts", r.NumExperts, 1 << 16}, {"moe_tp_size", r.MoETPSize, maxGPUs}, {"moe_ep_size", r.MoEEPSize, maxGPUs}} {
			if err := checkDim(i, d.name, d.v, d.hi); err != nil {
				return err
			}
		}
		if err := checkLatency(i, r.Latency); err != nil {
			return err
		}
		if r.NumTokens == 0 || r.TopK == 0 || r.NumExperts == 0 {
			continue
		}
		k := steptime.MoEKey{Format: f, Routing: r.Distribution, Hidden: int(r.HiddenSize), Inter: int(r.InterSize),
			TopK: int(r.TopK), Experts: int(r.NumExperts), TP: int(max(r.MoETPSize, 1)), EP: int(max(r.MoEEPSize, 1))}
		if k.EP > 1 && invariant[epGroup(r)] {
			continue
		}
		db.AddMoE(k, int(r.NumTokens), r.Latency*1e-3)
	}
	return nil
}

// elementBytes is the element size of the comm tables' dtype codes.
func elementBytes(s string) float64 {
	switch s {
	case "bfloat16", "half", "float16", "fp16", "bf16":
		return 2
	case "int8", "fp8":
		return 1
	case "float", "float32", "fp32":
		return 4
	}
	return 0
}

func addAllReduce(db *steptime.KernelDB, rows []allReduceRow) error {
	for i, r := range rows {
		eb := elementBytes(r.DType)
		if eb == 0 {
			continue
		}
		if err := checkDim(i, "num_gpus", r.NumGPUs, maxGPUs); err != nil {
			return err
		}
		if err := checkDim(i, "message_size", r.MessageSize, 1<<40); err != nil {
			return err
		}
		if err := checkLatency(i, r.Latency); err != nil {
			return err
		}
		var eager bool
		switch r.Backend {
		case "vllm_graph":
		case "vllm_eager":
			eager = true
		default:
			continue
		}
		if r.NumGPUs < 2 || r.MessageSize == 0 {
			continue
		}
		db.AddAllReduce(int(r.NumGPUs), eager, float64(r.MessageSize)*eb, r.Latency*1e-3)
	}
	return nil
}

func addNCCL(db *steptime.KernelDB, rows []ncclRow) error {
	for i, r := range rows {
		// One element type is enough: the curves are per byte.
		if r.DType != "half" {
			continue
		}
		if err := checkDim(i, "num_gpus", r.NumGPUs, maxGPUs); err != nil {
			return err
		}
		if err := checkDim(i, "message_size", r.MessageSize, 1<<40); err != nil {
			return err
		}
		if err := checkLatency(i, r.Latency); err != nil {
			return err
		}
		switch r.OpName {
		case "all_reduce", "all_gather", "reduce_scatter", "alltoall":
		default:
			continue
		}
		if r.NumGPUs < 2 || r.MessageSize == 0 {
			continue
		}
		db.AddNCCL(r.OpName, int(r.NumGPUs), float64(r.MessageSize)*2, r.Latency*1e-3)
	}
	return nil
}

// epGroup is a fused-MoE configuration without its expert-parallel size.
type epGroupKey struct {
	dtype, dist           string
	h, inter, topk, e, tp int64
}

func epGroup(r moeRow) epGroupKey {
	return epGroupKey{r.MoEDType, r.Distribution, r.HiddenSize, r.InterSize, r.TopK, r.NumExperts, max(r.MoETPSize, 1)}
}

// epInvariant finds the configurations whose expert-parallel rows do not
// measure expert parallelism: a rank holding 1/ep of the experts (ep ≥ 4)
// that takes as long as one holding all of them (median ratio ≥ 0.9 over
// at least four shared token counts) ran the whole layer. AIConfigurator's
// w4a16_mxfp4 rows on H200 and B200 are such (ratios 0.98–1.01, against
// 0.02–0.6 for every other format); the replay of their EP splits would
// be the unsplit kernel's time.
func epInvariant(rows []moeRow) map[epGroupKey]bool {
	type pt struct{ ep, tokens int64 }
	lat := map[epGroupKey]map[pt]float64{}
	for _, r := range rows {
		g := epGroup(r)
		if lat[g] == nil {
			lat[g] = map[pt]float64{}
		}
		p := pt{max(r.MoEEPSize, 1), r.NumTokens}
		if v, ok := lat[g][p]; !ok || r.Latency < v {
			lat[g][p] = r.Latency
		}
	}
	out := map[epGroupKey]bool{}
	for g, m := range lat {
		ratios := map[int64][]float64{} // by ep
		for p, v := range m {
			if base, ok := m[pt{1, p.tokens}]; ok && p.ep >= 4 && base > 0 {
				ratios[p.ep] = append(ratios[p.ep], v/base)
			}
		}
		for _, rs := range ratios {
			if len(rs) >= 4 {
				sort.Float64s(rs)
				if rs[len(rs)/2] >= 0.9 {
					out[g] = true
				}
			}
		}
	}
	return out
}

// mlaGEMM maps an MLA module row's gemm_type to the kernel format of the
// projections ("" for one the step model does not use).
func mlaGEMM(s string) string {
	switch s {
	case "bfloat16", "bf16":
		return steptime.FormatBF16
	case "fp8_block":
		return steptime.FormatFP8Block
	case "nvfp4":
		return steptime.FormatNVFP4
	}
	return ""
}

// addMLA records MLA module rows measured at the dimensions the step
// model reads them for (steptime.MLAModuleDims: DeepSeek-V3's; a row
// naming another model is skipped), without the all-reduce (tp_size 1).
func addMLA(db *steptime.KernelDB, rows []mlaRow, context bool) error {
	for i, r := range rows {
		for _, d := range []struct {
			name string
			v    int64
			hi   int64
		}{{"batch_size", r.BatchSize, maxBatch}, {"isl", r.ISL, maxDim}, {"step", r.Step, maxDim}, {"num_heads", r.NumHeads, 4096}, {"tp_size", r.TPSize, 4096}} {
			if err := checkDim(i, d.name, d.v, d.hi); err != nil {
				return err
			}
		}
		if err := checkLatency(i, r.Latency); err != nil {
			return err
		}
		kv, ok := kvDType(r.KVCacheDType)
		gemm := mlaGEMM(r.GEMMType)
		if !ok || gemm == "" || r.BatchSize == 0 || r.NumHeads == 0 || r.TPSize > 1 ||
			(r.Model != "" && !strings.EqualFold(r.Model, "deepseek-ai/DeepSeek-V3")) {
			continue
		}
		k := steptime.MLAKey{KVDType: kv, GEMM: gemm, Heads: int(r.NumHeads)}
		if context {
			if r.ISL == 0 {
				continue
			}
			db.AddMLAModule(true, k, int(r.BatchSize), int(r.ISL), r.Latency*1e-3)
			continue
		}
		// step is the KV length including the token being decoded.
		if r.Step == 0 {
			continue
		}
		db.AddMLAModule(false, k, int(r.BatchSize), int(r.Step), r.Latency*1e-3)
	}
	return nil
}
