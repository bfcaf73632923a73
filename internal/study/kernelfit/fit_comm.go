package kernelfit

import (
	"math"
	"sort"

	"github.com/headroom-sim/headroom/sim/steptime"
)

// sizeChoices are the message sizes (bytes per rank) tried as vLLM's
// custom all-reduce limits and its one-shot/two-shot switch.
var sizeChoices = func() []float64 {
	var out []float64
	for b := 64 << 10; b <= 1<<30; b *= 2 {
		out = append(out, float64(b))
	}
	return out
}()

func commSec(pt steptime.CommPoint) float64 { return pt.Sec }

func fitComm(db *steptime.KernelDB, hw steptime.Hardware, p *steptime.Profile, res *Result) {
	var ar, nccl []steptime.CommPoint
	for _, pt := range db.CommPoints() {
		switch {
		case pt.NCCL && (pt.Op == "all_gather" || pt.Op == "reduce_scatter" || pt.Op == "all_reduce"):
			nccl = append(nccl, pt)
		case !pt.NCCL && !pt.Eager:
			ar = append(ar, pt)
		}
	}
	ncclPredict := func(q *steptime.Profile, pt steptime.CommPoint) float64 {
		t, _ := steptime.FormulaNCCL(q, hw, pt.Op, pt.GPUs, pt.Bytes)
		return t
	}
	if fit, hold := splitComm(nccl); len(fit) > 0 {
		q := p.Clone()
		params := []Param{{"nccl_all_reduce_latency_us", 0, 200, 1}, {"nccl_latency_us", 0, 200, 1}, {"nccl_per_gpu_us", 0, 100, 1},
			{"nccl_all_reduce_efficiency", 0.01, 4, 0}, {"nccl_link_efficiency", 0.01, 4, 0}, {"nccl_ll_efficiency", 0.005, 4, 0},
			{"nccl_simple_extra_us", 0, 200, 1}}
		set := func(c *steptime.CommCoeffs, x []float64) {
			c.NCCLAllReduceLatencyUS, c.NCCLLatencyUS, c.NCCLPerGPUUS = x[0], x[1], x[2]
			c.NCCLAllReduceEfficiency, c.NCCLLinkEfficiency, c.NCCLLLEfficiency, c.NCCLSimpleExtraUS = x[3], x[4], x[5], x[6]
		}
		x, _ := fitPoints(fit, params, []float64{10, 8, 1, 0.8, 0.7, 0.2, 5}, func(x []float64) { set(&q.Comm, x) },
			func(pt steptime.CommPoint) float64 { return ncclPredict(&q, pt) }, commSec)
		for i := range x {
			x[i] = round4(x[i])
		}
		set(&p.Comm, x)
		byOp := map[string][]steptime.CommPoint{}
		for _, pt := range hold {
			byOp[pt.Op] = append(byOp[pt.Op], pt)
		}
		res.Errors = append(res.Errors, errorsOf("nccl", "all_reduce, all_gather, reduce_scatter", ScopeHeldOut, hold,
			func(pt steptime.CommPoint) float64 { return ncclPredict(p, pt) }, commSec))
		for _, op := range []string{"all_reduce", "all_gather", "reduce_scatter"} {
			if pts := byOp[op]; len(pts) > 0 {
				res.Errors = append(res.Errors, errorsOf("nccl", op, "held-out sizes (detail)", pts,
					func(pt steptime.CommPoint) float64 { return ncclPredict(p, pt) }, commSec))
			}
		}
	}
	if len(ar) > 0 {
		fitCustom(hw, p, ar, res)
	}
}

// fitCustom fits vLLM's tensor-parallel all-reduce: the custom kernel's
// latency and rate on the small messages (every path is the custom one
// there), its one-shot/two-shot switch, then each GPU count's size limit
// above which NCCL serves.
func fitCustom(hw steptime.Hardware, p *steptime.Profile, ar []steptime.CommPoint, res *Result) {
	fit, hold := splitComm(ar)
	arPredict := func(q *steptime.Profile, pt steptime.CommPoint) float64 {
		t, _ := steptime.FormulaAllReduce(q, hw, pt.GPUs, pt.Bytes)
		return t
	}
	gpuSet := map[int]bool{}
	for _, pt := range ar {
		gpuSet[pt.GPUs] = true
	}
	gpus := make([]int, 0, len(gpuSet))
	for n := range gpuSet {
		gpus = append(gpus, n)
	}
	sort.Ints(gpus)
	params := []Param{{"custom_latency_us", 0, 1000, 1}, {"custom_per_gpu_us", 0, 200, 1}, {"custom_link_efficiency", 0.01, 4, 0}}
	set := func(c *steptime.CommCoeffs, x []float64) {
		c.CustomLatencyUS, c.CustomPerGPUUS, c.CustomLinkEfficiency = x[0], x[1], x[2]
	}
	q := p.Clone()
	fitOn := func(pts []steptime.CommPoint, x0 []float64) ([]float64, float64) {
		return fitPoints(pts, params, x0, func(x []float64) { set(&q.Comm, x) },
			func(pt steptime.CommPoint) float64 { return arPredict(&q, pt) }, commSec)
	}
	var small []steptime.CommPoint
	for _, pt := range fit {
		if pt.Bytes <= 256<<10 {
			small = append(small, pt)
		}
	}
	q.Comm.CustomAllReduceMaxBytes, q.Comm.CustomMaxBytesByGPUs, q.Comm.CustomTwoShotBytes = 256<<10, nil, 0
	x, _ := fitOn(small, []float64{5, 0.5, 0.5})
	set(&q.Comm, x)
	// Size limits per GPU count with the one-shot kernel, then the
	// two-shot switch, then the limits again with it.
	limits := func() map[int]float64 {
		out := map[int]float64{}
		for _, n := range gpus {
			var pts []steptime.CommPoint
			for _, pt := range fit {
				if pt.GPUs == n {
					pts = append(pts, pt)
				}
			}
			best, bestL := 0.0, math.Inf(1)
			for _, lim := range sizeChoices {
				r := q.Clone()
				r.Comm.CustomMaxBytesByGPUs = map[int]float64{n: lim}
				pred, meas := make([]float64, len(pts)), make([]float64, len(pts))
				for i, pt := range pts {
					pred[i], meas[i] = arPredict(&r, pt), pt.Sec
				}
				if l := logLoss(pred, meas); l < bestL-1e-9 {
					best, bestL = lim, l
				}
			}
			out[n] = best
		}
		return out
	}
	q.Comm.CustomAllReduceMaxBytes = 0
	q.Comm.CustomMaxBytesByGPUs = limits()
	bestTwo, bestL := 0.0, math.Inf(1)
	for _, two := range append([]float64{0}, sizeChoices...) {
		r := q.Clone()
		r.Comm.CustomTwoShotBytes = two
		pred, meas := make([]float64, len(fit)), make([]float64, len(fit))
		for i, pt := range fit {
			pred[i], meas[i] = arPredict(&r, pt), pt.Sec
		}
		if l := logLoss(pred, meas); l < bestL-1e-9 {
			bestTwo, bestL = two, l
		}
	}
	q.Comm.CustomTwoShotBytes = bestTwo
	q.Comm.CustomMaxBytesByGPUs = limits()
	// Refit the custom kernel on every message it serves.
	var served []steptime.CommPoint
	for _, pt := range fit {
		if pt.Bytes <= q.Comm.CustomMaxBytesByGPUs[pt.GPUs] {
			served = append(served, pt)
		}
	}
	x, _ = fitOn(served, x)
	for i := range x {
		x[i] = round4(x[i])
	}
	set(&q.Comm, x)
	p.Comm.CustomLatencyUS, p.Comm.CustomPerGPUUS, p.Comm.CustomLinkEfficiency = q.Comm.CustomLatencyUS, q.Comm.CustomPerGPUUS, q.Comm.CustomLinkEfficiency
	p.Comm.CustomTwoShotBytes, p.Comm.CustomMaxBytesByGPUs, p.Comm.CustomAllReduceMaxBytes = bestTwo, q.Comm.CustomMaxBytesByGPUs, 0
	res.Errors = append(res.Errors, errorsOf("all_reduce", "vLLM tensor-parallel (graph)", ScopeHeldOut, hold,
		func(pt steptime.CommPoint) float64 { return arPredict(p, pt) }, commSec))
}
