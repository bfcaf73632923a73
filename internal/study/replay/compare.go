package replay

import (
	"github.com/headroom-sim/headroom/internal/adapter/measured"
	"github.com/headroom-sim/headroom/internal/study/scenario"
	"github.com/headroom-sim/headroom/sim"
	"github.com/headroom-sim/headroom/sim/stats"
)

// Metric is one measured-versus-predicted figure.
type Metric struct {
	Name      string  `json:"name"`
	Measured  float64 `json:"measured"`
	Predicted float64 `json:"predicted"`
	// ErrorPct is (predicted − measured) / measured × 100.
	ErrorPct float64 `json:"error_pct"`
}

func metric(name string, meas, pred float64) Metric {
	m := Metric{Name: name, Measured: meas, Predicted: pred}
	if meas != 0 {
		m.ErrorPct = (pred - meas) / meas * 100
	}
	return m
}

// Comparison is a run's measured metrics next to the simulator's.
type Comparison struct {
	Run             string   `json:"run"`
	Model           string   `json:"model"`
	GPU             string   `json:"gpu"`
	EngineVersion   string   `json:"engine_version"`
	Requests        int      `json:"requests"`
	LoggedBlocks    int      `json:"logged_blocks"`
	PredictedBlocks int      `json:"predicted_blocks"`
	Metrics         []Metric `json:"metrics"`
}

// Quantiles compared for each latency metric.
var Quantiles = []string{"mean", "p50", "p90", "p99"}

// Compare lines up a run's measured summary with a simulation report.
func Compare(run *measured.Run, res *scenario.Resolved, rep *sim.Report) Comparison {
	meas := run.Summarize()
	c := Comparison{Run: run.Name, Model: rep.Model, GPU: rep.GPU, EngineVersion: run.EngineVersion,
		Requests: meas.Completed, LoggedBlocks: run.LoggedBlocks, PredictedBlocks: res.Memory.NumGPUBlocks}
	for _, m := range []struct {
		name       string
		meas, pred stats.Summary
	}{
		{"ttft_ms", meas.TTFTMS, rep.TTFTMS},
		{"tpot_ms", meas.TPOTMS, rep.TPOTMS},
		{"e2e_ms", meas.E2EMS, rep.E2EMS},
	} {
		for _, q := range Quantiles {
			a, _ := m.meas.At(q)
			b, _ := m.pred.At(q)
			c.Metrics = append(c.Metrics, metric(m.name+"."+q, a, b))
		}
	}
	c.Metrics = append(c.Metrics,
		metric("throughput.requests_per_s", meas.RequestsPerS, rep.Throughput.RequestsPerS),
		metric("throughput.output_tokens_per_s", meas.OutputTokensPerS, rep.Throughput.OutputTokensPerS))
	return c
}

// Get returns the named metric.
func (c *Comparison) Get(name string) (Metric, bool) {
	for _, m := range c.Metrics {
		if m.Name == name {
			return m, true
		}
	}
	return Metric{}, false
}
