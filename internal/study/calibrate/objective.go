package calibrate

import (
	"context"
	"math"

	"github.com/headroom-sim/headroom/internal/adapter/measured"
	"github.com/headroom-sim/headroom/sim"
	"github.com/headroom-sim/headroom/sim/stats"
)

// Quantiles a fit matches for each latency metric.
var Quantiles = []string{"mean", "p50", "p90", "p99"}

// Metrics a fit matches.
var Metrics = []string{"ttft_ms", "tpot_ms", "e2e_ms"}

// target is one measured figure.
type target struct {
	metric, quantile string
	value            float64
}

// targets collects a run's measured quantiles (positive values only):
// from its requests, or from the tool's aggregate when it has none. stage
// >= 0 keeps that benchmark's requests only.
func targets(run *measured.Run, stage int) []target {
	if stage >= 0 {
		if run = run.Stage(stage); run == nil {
			return nil
		}
	}
	s := run.Summarize()
	var out []target
	if s.Completed == 0 && run.Aggregate != nil {
		a := run.Aggregate
		for _, m := range []struct {
			name string
			qs   map[string]float64
		}{{"ttft_ms", a.TTFTMS}, {"tpot_ms", a.TPOTMS}, {"e2e_ms", a.E2EMS}} {
			for _, q := range Quantiles {
				if v := m.qs[q]; v > 0 {
					out = append(out, target{m.name, q, v})
				}
			}
		}
		return out
	}
	for _, m := range []struct {
		name string
		sum  stats.Summary
	}{{"ttft_ms", s.TTFTMS}, {"tpot_ms", s.TPOTMS}, {"e2e_ms", s.E2EMS}} {
		if m.sum.Count == 0 {
			continue
		}
		for _, q := range Quantiles {
			if v, _ := m.sum.At(q); v > 0 {
				out = append(out, target{m.name, q, v})
			}
		}
	}
	return out
}

// prediction holds a simulation's latency summaries by metric.
type prediction map[string]stats.Summary

// collector gathers a simulation's per-request latencies of one stage
// (all stages when stage < 0).
type collector struct {
	stage           int
	ttft, tpot, e2e []float64
}

func (c *collector) option() sim.Option {
	return sim.WithRequestSink(func(s sim.RequestSample) {
		if c.stage >= 0 && s.Stage != c.stage {
			return
		}
		c.ttft = append(c.ttft, s.TTFTMS)
		c.e2e = append(c.e2e, s.E2EMS)
		if s.OutputTokens > 1 {
			c.tpot = append(c.tpot, s.TPOTMS)
		}
	})
}

func (c *collector) prediction() prediction {
	return prediction{"ttft_ms": stats.Summarize(c.ttft), "tpot_ms": stats.Summarize(c.tpot), "e2e_ms": stats.Summarize(c.e2e)}
}

// simulate runs cfg and summarises the latencies of stage's requests.
func simulate(ctx context.Context, cfg sim.Config, stage int) (prediction, error) {
	c := &collector{stage: stage}
	if _, err := sim.Run(ctx, cfg, c.option()); err != nil {
		return nil, err
	}
	return c.prediction(), nil
}

// predicted reads the figure a target names.
func predicted(p prediction, t target) float64 {
	v, _ := p[t.metric].At(t.quantile)
	return v
}

// logLoss is the mean squared log-ratio of predicted to measured figures:
// scale-free, so a 10% error weighs the same on TTFT as on TPOT.
func logLoss(rep prediction, ts []target) float64 {
	var sum float64
	for _, t := range ts {
		p := predicted(rep, t)
		if p <= 0 {
			p = 1e-3
		}
		d := math.Log(p / t.value)
		sum += d * d
	}
	return sum / float64(len(ts))
}
