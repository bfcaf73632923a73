package plot

import (
	"github.com/headroom-sim/headroom/sim"
	"github.com/headroom-sim/headroom/sim/stats"
)

// Distributions gathers a run's latency distributions: per request TTFT,
// TPOT and E2E, and every inter-token gap (token-weighted ITL). Each is a
// stats.Histogram, so memory stays bounded (a 4 KiB page for each power of
// two the values span, at most 200 KiB) however many requests run, and
// quantiles are within 0.1% of the samples'.
//
//	d := plot.NewDistributions()
//	rep, err := sim.Run(ctx, cfg, d.Options()...)
//	err = plot.TTFTCDF(w, d)
type Distributions struct {
	ttft, tpot, e2e, itl *stats.Histogram
	requests             int
}

// NewDistributions returns an empty collector.
func NewDistributions() *Distributions {
	return &Distributions{ttft: stats.NewHistogram(), tpot: stats.NewHistogram(), e2e: stats.NewHistogram(), itl: stats.NewHistogram()}
}

// Options feeds the collector from a run (sim.Run(ctx, cfg, d.Options()...)).
func (d *Distributions) Options() []sim.Option { return []sim.Option{sim.WithSinks(d)} }

// Request records one completed request. TPOT is left out for single-token
// outputs, which have none.
func (d *Distributions) Request(r sim.RequestSample) {
	d.requests++
	d.ttft.Add(r.TTFTMS, 1)
	d.e2e.Add(r.E2EMS, 1)
	if r.OutputTokens > 1 {
		d.tpot.Add(r.TPOTMS, 1)
	}
}

// Token records one inter-token gap.
func (d *Distributions) Token(_, gapMS float64) { d.itl.Add(gapMS, 1) }

// Requests is the number of completed requests recorded.
func (d *Distributions) Requests() int { return d.requests }

// TTFTMS, TPOTMS, E2EMS and ITLMS are the histograms, in milliseconds,
// for CDFs of several runs on one chart (Series{Name: "A", Hist:
// a.TTFTMS()}). They are the collector's own: do not add to them.
func (d *Distributions) TTFTMS() *stats.Histogram { return d.ttft }

// TPOTMS is the per-request time-per-output-token histogram (ms).
func (d *Distributions) TPOTMS() *stats.Histogram { return d.tpot }

// E2EMS is the per-request end-to-end latency histogram (ms).
func (d *Distributions) E2EMS() *stats.Histogram { return d.e2e }

// ITLMS is the token-weighted inter-token latency histogram (ms).
func (d *Distributions) ITLMS() *stats.Histogram { return d.itl }
