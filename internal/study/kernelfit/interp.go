package kernelfit

import (
	"strconv"

	"github.com/headroom-sim/headroom/sim/steptime"
)

// InterpolationErrors measures the table backend (steptime.KernelDB's
// Lookup methods) the way the formula is measured: a database built from
// the fit half of each table predicts the held-out half. GEMM holds out
// whole (n, k) sites (the checkerboard of split.go), attention the
// (batch, length) checkerboard within each head configuration, fused MoE
// every other token count of each configuration (the lookup needs the exact
// configuration), collectives every other message size. Points the
// database cannot reach (ok = false) are counted as misses in the scope.
func InterpolationErrors(db *steptime.KernelDB, hw steptime.Hardware) []ErrorRow {
	var out []ErrorRow
	for _, f := range db.GEMMFormats() {
		var wide []steptime.GEMMPoint
		for _, pt := range db.GEMMPoints(f) {
			if pt.N >= MinGEMMDim && pt.K >= MinGEMMDim {
				wide = append(wide, pt)
			}
		}
		fit, hold := splitGEMM(wide)
		part := steptime.NewKernelDB(db.System, "fit half")
		for _, pt := range fit {
			part.AddGEMM(f, pt.M, pt.N, pt.K, pt.Sec)
		}
		part.Finish()
		wb, ab := steptime.FormatBytes(f)
		roof := hw.Roof(f)
		out = append(out, lookupErrors("gemm", f, hold, func(pt steptime.GEMMPoint) (float64, bool) {
			return part.LookupGEMM(f, pt.M, pt.N, pt.K, roof, wb, ab)
		}, func(pt steptime.GEMMPoint) float64 { return pt.Sec }))
	}
	roof := steptime.Roof{FLOPS: hw.AttentionFLOPS, BytesPerSec: hw.BytesPerSec}
	for _, context := range []bool{true, false} {
		op := "decode_attention"
		if context {
			op = "context_attention"
		}
		for _, kv := range []string{"bf16", "fp8"} {
			var pts []steptime.AttentionPoint
			for _, pt := range db.AttentionPoints(context) {
				if pt.Key.KVDType == kv {
					pts = append(pts, pt)
				}
			}
			if len(pts) == 0 {
				continue
			}
			fit, hold := splitAttention(pts)
			part := steptime.NewKernelDB(db.System, "fit half")
			for _, pt := range fit {
				if context {
					part.AddContextAttention(pt.Key, pt.Batch, pt.Len, pt.Sec)
				} else {
					part.AddDecodeAttention(pt.Key, pt.Batch, pt.Len, pt.Sec)
				}
			}
			part.Finish()
			out = append(out, lookupErrors(op, "kv "+kv, hold, func(pt steptime.AttentionPoint) (float64, bool) {
				shape := attentionShape(pt.Key)
				if context {
					return part.LookupContextAttention(shape, float64(pt.Batch), float64(pt.Len), roof)
				}
				return part.LookupDecodeAttention(shape, float64(pt.Batch), float64(pt.Len), roof)
			}, attentionSec))
		}
	}
	byFormat := map[string][]steptime.MoEPoint{}
	var formats []string
	for _, pt := range db.MoEPoints() {
		if pt.Key.Routing != Routing {
			continue
		}
		if byFormat[pt.Key.Format] == nil {
			formats = append(formats, pt.Key.Format)
		}
		byFormat[pt.Key.Format] = append(byFormat[pt.Key.Format], pt)
	}
	for _, f := range formats {
		part := steptime.NewKernelDB(db.System, "fit half")
		var hold []steptime.MoEPoint
		seen := map[steptime.MoEKey]int{}
		for _, pt := range byFormat[f] { // MoEPoints lists each curve by token count
			if seen[pt.Key]%2 == 0 {
				part.AddMoE(pt.Key, pt.Tokens, pt.Sec)
			} else {
				hold = append(hold, pt)
			}
			seen[pt.Key]++
		}
		part.Finish()
		out = append(out, lookupErrors("moe", f+" "+Routing, hold, func(pt steptime.MoEPoint) (float64, bool) {
			return part.LookupMoE(pt.Key, pt.Tokens, hw)
		}, func(pt steptime.MoEPoint) float64 { return pt.Sec }))
	}
	var ar, nccl []steptime.CommPoint
	for _, pt := range db.CommPoints() {
		switch {
		case pt.NCCL && pt.Op != "alltoall":
			nccl = append(nccl, pt)
		case !pt.NCCL && !pt.Eager:
			ar = append(ar, pt)
		}
	}
	for _, group := range []struct {
		op  string
		pts []steptime.CommPoint
	}{{"all_reduce", ar}, {"nccl", nccl}} {
		if len(group.pts) == 0 {
			continue
		}
		fit, hold := splitComm(group.pts)
		part := steptime.NewKernelDB(db.System, "fit half")
		for _, pt := range fit {
			if pt.NCCL {
				part.AddNCCL(pt.Op, pt.GPUs, pt.Bytes, pt.Sec)
			} else {
				part.AddAllReduce(pt.GPUs, pt.Eager, pt.Bytes, pt.Sec)
			}
		}
		part.Finish()
		format := "vLLM tensor-parallel (graph)"
		if group.op == "nccl" {
			format = "all_reduce, all_gather, reduce_scatter"
		}
		out = append(out, lookupErrors(group.op, format, hold, func(pt steptime.CommPoint) (float64, bool) {
			if pt.NCCL {
				return part.LookupNCCL(pt.Op, pt.GPUs, pt.Bytes)
			}
			return part.LookupAllReduce(pt.GPUs, false, pt.Bytes)
		}, commSec))
	}
	return out
}

// lookupErrors summarises a lookup against the held-out measurements; the
// scope counts the points the lookup could not serve.
func lookupErrors[T any](op, format string, hold []T, lookup func(T) (float64, bool), measured func(T) float64) ErrorRow {
	var pred, meas []float64
	miss := 0
	for _, pt := range hold {
		t, ok := lookup(pt)
		if !ok || !(t > 0) {
			miss++
			continue
		}
		pred, meas = append(pred, t), append(meas, measured(pt))
	}
	scope := ScopeHeldOut
	if miss > 0 {
		scope = "held-out, " + strconv.Itoa(miss) + " of " + strconv.Itoa(len(hold)) + " not covered"
	}
	return summarize(op, format, scope, pred, meas)
}
