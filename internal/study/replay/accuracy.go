package replay

import (
	"context"
	"math"
	"slices"
	"sync"

	"github.com/headroom-sim/headroom/catalogs"
	"github.com/headroom-sim/headroom/internal/adapter/measured"
	"github.com/headroom-sim/headroom/internal/study/workers"
	"github.com/headroom-sim/headroom/sim"
	"github.com/headroom-sim/headroom/sim/stats"
	"github.com/headroom-sim/headroom/sim/steptime"
)

// MeanResult is one summary-only run replayed: the measured and predicted
// mean TTFT and TPOT (ms), or the error that stopped it.
type MeanResult struct {
	Run *measured.Run
	// Model and GPU are the catalog ids simulated (the served checkpoint:
	// a run at fp4 of a model with an NVFP4 export names the export); the
	// run's own names when the simulation could not be built.
	Model, GPU                   string
	TTFTMS, TPOTMS               float64 // predicted
	MeasuredTTFTMS, MeasuredTPOT float64
	// PredictedBlocks is the KV-cache size the memory model gave (blocks
	// per GPU).
	PredictedBlocks int
	Err             error
}

// TTFTError and TPOTError are the signed relative errors (predicted over
// measured, minus one).
func (r *MeanResult) TTFTError() float64 { return r.TTFTMS/r.MeasuredTTFTMS - 1 }

// TPOTError is the signed relative TPOT error.
func (r *MeanResult) TPOTError() float64 { return r.TPOTMS/r.MeasuredTPOT - 1 }

// MeanOptions adjust ReplayMeans.
type MeanOptions struct {
	Options
	// Edit changes each run's profile before it runs (a fit's trial
	// coefficients); nil leaves the defaults.
	Edit func(*steptime.Profile)
	// Workers bounds the parallel simulations (0: GOMAXPROCS).
	Workers int
	// Progress, when not nil, is called after each run with the number
	// done so far (from several goroutines, one call at a time).
	Progress func(done, total int)
}

// ReplayMeans replays runs that record mean TTFT and TPOT (as the silicon
// table does) in parallel and returns the predicted means beside the
// measured ones, in the runs' order.
func ReplayMeans(ctx context.Context, runs []*measured.Run, cat *catalogs.Catalog, opt MeanOptions) []MeanResult {
	out := make([]MeanResult, len(runs))
	var (
		mu   sync.Mutex
		done int
	)
	workers.For(len(runs), opt.Workers, func(i int) {
		out[i] = replayMean(ctx, runs[i], cat, opt)
		if opt.Progress != nil {
			mu.Lock()
			done++
			opt.Progress(done, len(runs))
			mu.Unlock()
		}
	})
	return out
}

func replayMean(ctx context.Context, run *measured.Run, cat *catalogs.Catalog, opt MeanOptions) MeanResult {
	r := MeanResult{Run: run, Model: run.Model, GPU: run.GPU}
	if a := run.Aggregate; a != nil {
		r.MeasuredTTFTMS, r.MeasuredTPOT = a.TTFTMS["mean"], a.TPOTMS["mean"]
	}
	if err := ctx.Err(); err != nil {
		r.Err = err
		return r
	}
	rs, err := Config(run, cat, opt.Options)
	if err != nil {
		r.Err = err
		return r
	}
	r.Model, r.GPU, r.PredictedBlocks = rs.Config.Model.ID, rs.Config.GPU.ID, rs.Memory.NumGPUBlocks
	if opt.Edit != nil {
		opt.Edit(&rs.Config.Profile)
	}
	rep, err := sim.Run(ctx, rs.Config)
	if err != nil {
		r.Err = err
		return r
	}
	r.TTFTMS, r.TPOTMS = rep.TTFTMS.Mean, rep.TPOTMS.Mean
	return r
}

// MeanErrors summarises results: the median and P90 absolute errors (%)
// of the runs that replayed, and how many did not.
type MeanErrors struct {
	N, Failed                  int
	TTFTMedian, TTFTP90        float64
	TPOTMedian, TPOTP90        float64
	TTFTBias, TPOTBias         float64 // signed medians
	TTFTWithin20, TPOTWithin10 float64 // share of runs within the overall bars
}

// SummarizeMeans computes the errors of rs.
func SummarizeMeans(rs []MeanResult) MeanErrors {
	var e MeanErrors
	var at, ap, st, sp []float64
	var t20, p10 int
	for i := range rs {
		r := &rs[i]
		if !r.Replayed() {
			e.Failed++
			continue
		}
		et, ep := 100*r.TTFTError(), 100*r.TPOTError()
		at, ap, st, sp = append(at, math.Abs(et)), append(ap, math.Abs(ep)), append(st, et), append(sp, ep)
		if math.Abs(et) <= 20 {
			t20++
		}
		if math.Abs(ep) <= 10 {
			p10++
		}
	}
	e.N = len(at)
	if e.N == 0 {
		return e
	}
	for _, xs := range [][]float64{at, ap, st, sp} {
		slices.Sort(xs)
	}
	e.TTFTMedian, e.TTFTP90, e.TTFTBias = stats.Quantile(at, 0.5), stats.Quantile(at, 0.9), stats.Quantile(st, 0.5)
	e.TPOTMedian, e.TPOTP90, e.TPOTBias = stats.Quantile(ap, 0.5), stats.Quantile(ap, 0.9), stats.Quantile(sp, 0.5)
	e.TTFTWithin20, e.TPOTWithin10 = 100*float64(t20)/float64(e.N), 100*float64(p10)/float64(e.N)
	return e
}
