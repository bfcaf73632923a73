package calibrate

import (
	"context"
	"fmt"
	"math"

	"github.com/headroom-sim/headroom/internal/study/replay"
	"github.com/headroom-sim/headroom/internal/study/workers"
	"github.com/headroom-sim/headroom/sim"
	"github.com/headroom-sim/headroom/sim/stats"
	"github.com/headroom-sim/headroom/sim/steptime"
)

// Quantiles a fit matches for each latency metric.
var Quantiles = []string{"mean", "p50", "p90", "p99"}

// Metrics a fit matches.
var Metrics = []string{"ttft_ms", "tpot_ms", "e2e_ms"}

// target is one measured figure of one part of the replay.
type target struct {
	part             int
	metric, quantile string
	value            float64
}

// targets collects the parts' measured quantiles (positive values only).
func targets(parts []replay.Part) []target {
	var out []target
	for i := range parts {
		for _, m := range Metrics {
			for _, q := range Quantiles {
				if v, ok := parts[i].Measured.Get(m, q); ok {
					out = append(out, target{i, m, q, v})
				}
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

// simulateParts simulates every part with profile p, in parallel (each
// simulation is deterministic, so the order does not matter).
func simulateParts(ctx context.Context, parts []replay.Part, p steptime.Profile) ([]prediction, error) {
	out := make([]prediction, len(parts))
	errs := make([]error, len(parts))
	workers.For(len(parts), 0, func(i int) {
		cfg := parts[i].Resolved.Config
		cfg.Profile = p
		out[i], errs[i] = simulate(ctx, cfg, parts[i].Filter)
	})
	for i, err := range errs {
		if err != nil {
			return nil, fmt.Errorf("%s: %w", parts[i].Name, err)
		}
	}
	return out, nil
}

// predicted reads the figure a target names.
func predicted(ps []prediction, t target) float64 {
	v, _ := ps[t.part][t.metric].At(t.quantile)
	return v
}

// logLoss is the mean squared log-ratio of predicted to measured figures:
// scale-free, so a 10% error weighs the same on TTFT as on TPOT.
func logLoss(rep []prediction, ts []target) float64 {
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
