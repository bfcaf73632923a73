package kernels

import (
	"math"
	"strings"

	"github.com/headroom-sim/headroom/hardware"
	"github.com/headroom-sim/headroom/models"
	"github.com/headroom-sim/headroom/sim/steptime"
)

// Param is one profile coefficient a fit may move, within [Lo, Hi].
type Param struct {
	Name   string
	Lo, Hi float64
	// Offset makes the search step in ln(x + Offset): 0 for fractions,
	// about one unit for microsecond and token coefficients that may be 0.
	Offset float64
	Field  func(*steptime.Profile) *float64
}

// The coefficients the kernel data determine.
var (
	ParamGEMMEfficiency = Param{"gemm_efficiency", 0.05, 1, 0, func(p *steptime.Profile) *float64 { return &p.GEMMEfficiency }}
	ParamGEMMHalfTokens = Param{"gemm_half_tokens", 0, 4096, 1, func(p *steptime.Profile) *float64 { return &p.GEMMHalfTokens }}
	ParamBandwidth      = Param{"bandwidth_efficiency", 0.05, 1, 0, func(p *steptime.Profile) *float64 { return &p.BandwidthEfficiency }}
	ParamKernelOverhead = Param{"kernel_overhead_us", 0, 100, 1, func(p *steptime.Profile) *float64 { return &p.KernelOverheadUS }}
	ParamAttnPrefill    = Param{"attention_prefill_efficiency", 0.02, 1, 0, func(p *steptime.Profile) *float64 { return &p.AttentionPrefillEfficiency }}
	ParamAttnDecode     = Param{"attention_decode_efficiency", 0.05, 1, 0, func(p *steptime.Profile) *float64 { return &p.AttentionDecodeEfficiency }}
	ParamEltBandwidth   = Param{"elementwise_bandwidth_efficiency", 0.05, 1, 0, func(p *steptime.Profile) *float64 { return &p.ElementwiseBandwidthEfficiency }}
	ParamAttnOverhead   = Param{"attention_kernel_overhead_us", 0, 200, 1, func(p *steptime.Profile) *float64 { return &p.AttentionKernelOverheadUS }}
	ParamAllReduceLat   = Param{"all_reduce_latency_us", 0, 500, 1, func(p *steptime.Profile) *float64 { return &p.AllReduceLatencyUS }}
	ParamLinkEfficiency = Param{"link_efficiency", 0.05, 1, 0, func(p *steptime.Profile) *float64 { return &p.LinkEfficiency }}
)

// Minimize is a deterministic compass search: it tries each coordinate
// one step up and down (in ln(x + offset)), keeps any improvement, and
// halves the step when none helps, until the step is below 1e-4 (a
// relative change of 0.01%). It needs no gradients, so the loss may have
// kinks (the roofline's max, the absolute errors).
func Minimize(params []Param, x0 []float64, f func([]float64) float64) ([]float64, float64) {
	n := len(params)
	to := func(i int, x float64) float64 { return math.Log(x + params[i].Offset) }
	from := func(i int, u float64) float64 {
		x := math.Exp(u) - params[i].Offset
		return math.Min(math.Max(x, params[i].Lo), params[i].Hi)
	}
	u := make([]float64, n)
	x := make([]float64, n)
	for i := range params {
		x[i] = math.Min(math.Max(x0[i], params[i].Lo), params[i].Hi)
		u[i] = to(i, x[i])
	}
	best := f(x)
	trial := make([]float64, n)
	for step := 0.5; step > 1e-4; {
		improved := false
		for i := range n {
			for _, d := range []float64{step, -step} {
				copy(trial, x)
				trial[i] = from(i, u[i]+d)
				if trial[i] == x[i] {
					continue
				}
				if v := f(trial); v < best-1e-12 {
					best = v
					x[i] = trial[i]
					u[i] = to(i, x[i])
					improved = true
					break
				}
			}
		}
		if !improved {
			step /= 2
		}
	}
	return x, best
}

// Stage is one fit: some coefficients of one GPU's profile against one
// subset of the points.
type Stage struct {
	Name   string
	Params []Param
	// Select picks the stage's points (already restricted to the GPU).
	Select func(p *Point) bool
	// Starts are extra starting points (values in Params order) tried
	// besides the incoming profile; the best result wins.
	Starts [][]float64
}

// StageResult reports one stage.
type StageResult struct {
	Stage                 string
	GPU                   string
	N                     int
	Values                map[string]float64
	LossBefore, LossAfter float64
}

// IsGEMMKernel selects Vidur's four projection kernels.
func IsGEMMKernel(p *Point) bool { return !p.Aggregate && p.Kind.IsGEMM() && p.Cost.Tokens > 0 }

// IsElementwiseKernel selects the per-layer elementwise kernels (not the
// embedding lookup, which runs once per forward pass).
func IsElementwiseKernel(p *Point) bool {
	return !p.Aggregate && p.Kind == models.OpElementwise && p.Op != "emb"
}

// IsAttentionFitPoint selects the attention kernels the fit uses: every
// decode, and every prefill with the work Vidur's kernel did
// (attn_prefill_square, see AttentionPoints). The prefill efficiency is
// thus the kernel's throughput on the work it does, which the model then
// applies to the causal work a causal kernel does.
func IsAttentionFitPoint(p *Point) bool {
	return p.Kind == models.OpAttnDecode || p.Op == "attn_prefill_square"
}

// IsDGXAllReduce selects all-reduces inside one NVSwitch node.
func IsDGXAllReduce(p *Point) bool {
	return p.Kind == models.OpAllReduce && strings.HasSuffix(p.Model, "_dgx")
}

// DefaultStages are the fits of DefaultProfile's kernel coefficients, in
// order: GEMMs (with the per-kernel overhead), attention prefill, attention
// decode, all-reduce.
var DefaultStages = []Stage{
	{
		Name:   "gemm",
		Params: []Param{ParamGEMMEfficiency, ParamGEMMHalfTokens, ParamBandwidth, ParamKernelOverhead},
		Select: IsGEMMKernel,
		Starts: [][]float64{{0.75, 8, 0.8, 2}, {0.75, 128, 0.8, 5}, {0.75, 512, 0.8, 10}},
	},
	{
		Name:   "elementwise",
		Params: []Param{ParamEltBandwidth},
		Select: func(p *Point) bool { return p.Aggregate && p.Kind == models.OpElementwise },
		Starts: [][]float64{{0.5}},
	},
	{
		Name:   "attention",
		Params: []Param{ParamAttnPrefill, ParamAttnDecode, ParamAttnOverhead},
		Select: IsAttentionFitPoint,
		Starts: [][]float64{{0.3, 0.7, 5}, {0.3, 0.7, 15}},
	},
	{
		Name:   "all_reduce",
		Params: []Param{ParamAllReduceLat, ParamLinkEfficiency},
		Select: IsDGXAllReduce,
		Starts: [][]float64{{5, 0.8}, {50, 0.5}},
	},
}

// NeutralStart is where the fits start: DefaultProfile(g) with every
// fitted coefficient set back to the round values the defaults had before
// they were fitted, so that a refit does not depend on the values it
// replaces.
func NeutralStart(g *hardware.GPU) steptime.Profile {
	p := steptime.DefaultProfile(g)
	p.GEMMEfficiency, p.GEMMHalfTokens, p.BandwidthEfficiency, p.KernelOverheadUS = 0.75, 24, 0.82, 2
	p.ElementwiseBandwidthEfficiency = 0.82
	p.AttentionPrefillEfficiency, p.AttentionDecodeEfficiency, p.AttentionKernelOverheadUS = 0.55, 0.70, 2
	p.AllReduceLatencyUS, p.LinkEfficiency = 12, 0.75
	return p
}

// Fit runs the stages for one GPU, starting from start, and returns the
// fitted profile. Stages without points for the GPU leave their
// coefficients unchanged.
func Fit(pts []Point, g *hardware.GPU, start steptime.Profile, stages []Stage) (steptime.Profile, []StageResult, error) {
	prof := start
	gpus := GPUs{g.ID: g}
	var results []StageResult
	for _, st := range stages {
		var sel []Point
		for i := range pts {
			if pts[i].GPU == g.ID && st.Select(&pts[i]) {
				sel = append(sel, pts[i])
			}
		}
		if len(sel) == 0 {
			continue
		}
		all := make([]int, len(sel))
		for i := range all {
			all[i] = i
		}
		var ferr error
		loss := func(x []float64) float64 {
			p := prof
			for i, par := range st.Params {
				*par.Field(&p) = x[i]
			}
			pred, err := Predict(sel, gpus, func(*hardware.GPU) steptime.Profile { return p })
			if err != nil {
				ferr = err
				return math.Inf(1)
			}
			return Loss(pred, sel, all)
		}
		x0 := make([]float64, len(st.Params))
		for i, par := range st.Params {
			x0[i] = *par.Field(&prof)
		}
		before := loss(x0)
		bestX, bestL := Minimize(st.Params, x0, loss)
		for _, s := range st.Starts {
			x, l := Minimize(st.Params, s, loss)
			if l < bestL {
				bestX, bestL = x, l
			}
		}
		if ferr != nil {
			return prof, results, ferr
		}
		res := StageResult{Stage: st.Name, GPU: g.ID, N: len(sel), Values: map[string]float64{}, LossBefore: before, LossAfter: bestL}
		for i, par := range st.Params {
			*par.Field(&prof) = bestX[i]
			res.Values[par.Name] = bestX[i]
		}
		results = append(results, res)
	}
	return prof, results, nil
}
