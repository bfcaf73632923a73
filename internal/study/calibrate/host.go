package calibrate

import (
	"context"
	"fmt"
	"math"
	"sort"

	"github.com/headroom-sim/headroom/catalogs"
	"github.com/headroom-sim/headroom/internal/adapter/measured"
	"github.com/headroom-sim/headroom/internal/study/kernelfit"
	"github.com/headroom-sim/headroom/internal/study/replay"
	"github.com/headroom-sim/headroom/sim/steptime"
)

// The host costs (steptime.Host) are the same for every GPU: the engine's
// CPU time per step and the API server's and client's time per request and
// token. FitHost fits them to many measured closed-loop runs at once — the
// runs' mean TTFT and TPOT replayed through the simulator — where a kernel
// table cannot see them.

// hostParam is one host coefficient the fit moves.
type hostParam struct {
	kernelfit.Param
	field func(*steptime.Host) *float64
}

var hostParams = []hostParam{
	{kernelfit.Param{Name: "frontend.client_us", Lo: 0, Hi: 200_000, Offset: 100}, func(h *steptime.Host) *float64 { return &h.Frontend.ClientUS }},
	{kernelfit.Param{Name: "frontend.request_us", Lo: 0, Hi: 100_000, Offset: 100}, func(h *steptime.Host) *float64 { return &h.Frontend.RequestUS }},
	{kernelfit.Param{Name: "frontend.per_prompt_token_us", Lo: 0, Hi: 100, Offset: 0.1}, func(h *steptime.Host) *float64 { return &h.Frontend.PerPromptTokenUS }},
	{kernelfit.Param{Name: "frontend.per_step_us", Lo: 0, Hi: 10_000, Offset: 10}, func(h *steptime.Host) *float64 { return &h.Frontend.PerStepUS }},
	{kernelfit.Param{Name: "frontend.per_output_token_us", Lo: 0, Hi: 1000, Offset: 1}, func(h *steptime.Host) *float64 { return &h.Frontend.PerOutputTokenUS }},
	{kernelfit.Param{Name: "cpu.step_overhead_us", Lo: 0, Hi: 50_000, Offset: 10}, func(h *steptime.Host) *float64 { return &h.CPU.StepOverheadUS }},
	{kernelfit.Param{Name: "cpu.per_seq_overhead_us", Lo: 0, Hi: 1000, Offset: 1}, func(h *steptime.Host) *float64 { return &h.CPU.PerSeqOverheadUS }},
}

// HostSplit divides runs into a fit half and a check half: within every
// (model, GPU) group, sorted by name, alternate runs.
func HostSplit(runs []*measured.Run) (fit, check []*measured.Run) {
	groups := map[string][]*measured.Run{}
	for _, r := range runs {
		k := r.Model + "\x00" + r.GPU
		groups[k] = append(groups[k], r)
	}
	keys := make([]string, 0, len(groups))
	for k := range groups {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		g := groups[k]
		sort.SliceStable(g, func(i, j int) bool { return g[i].Name < g[j].Name })
		for i, r := range g {
			if i%2 == 0 {
				fit = append(fit, r)
			} else {
				check = append(check, r)
			}
		}
	}
	return fit, check
}

// HostFit is a fit of the host costs.
type HostFit struct {
	Host        steptime.Host
	Loss        float64
	Evaluations int
}

// FitHost fits the host costs, starting from start, to runs (their mean
// TTFT and TPOT): a compass search on the mean absolute log error of both,
// each run replayed with the trial costs on every GPU's kernel profile.
// progress, when not nil, sees every evaluation.
func FitHost(ctx context.Context, runs []*measured.Run, cat *catalogs.Catalog, start steptime.Host, opt replay.Options, progress func(HostFit)) (*HostFit, error) {
	if len(runs) == 0 {
		return nil, fmt.Errorf("host fit: no runs")
	}
	x0 := make([]float64, len(hostParams))
	params := make([]kernelfit.Param, len(hostParams))
	for i, p := range hostParams {
		x0[i], params[i] = *p.field(&start), p.Param
	}
	evals := 0
	host := func(x []float64) steptime.Host {
		h := start
		for i, p := range hostParams {
			*p.field(&h) = x[i]
		}
		return h
	}
	loss := func(x []float64) float64 {
		evals++
		h := host(x)
		rs := replay.ReplayMeans(ctx, runs, cat, replay.MeanOptions{Options: opt, Edit: func(p *steptime.Profile) {
			p.CPU, p.Frontend = h.CPU, h.Frontend
		}})
		var s float64
		n := 0
		for i := range rs {
			r := &rs[i]
			if !r.Replayed() || !(r.TTFTMS > 0) || !(r.TPOTMS > 0) {
				continue
			}
			s += math.Abs(math.Log(r.TTFTMS/r.MeasuredTTFTMS)) + math.Abs(math.Log(r.TPOTMS/r.MeasuredTPOT))
			n++
		}
		if n == 0 {
			return math.Inf(1)
		}
		if progress != nil {
			progress(HostFit{Host: h, Loss: s / float64(n), Evaluations: evals})
		}
		return s / float64(n)
	}
	// Each evaluation replays every run: stop at 3% steps.
	x, l := kernelfit.MinimizeTo(params, x0, loss, 0.03, 120)
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	h := host(x)
	for _, p := range hostParams {
		v := p.field(&h)
		*v = roundSig(*v)
	}
	return &HostFit{Host: h, Loss: l, Evaluations: evals}, nil
}

func roundSig(x float64) float64 {
	if x == 0 || math.IsNaN(x) || math.IsInf(x, 0) {
		return x
	}
	e := math.Pow(10, 2-math.Floor(math.Log10(math.Abs(x))))
	return math.Round(x*e) / e
}
