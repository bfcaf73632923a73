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
	Run string `json:"run"`
	// Stage is the benchmark compared (absent: the whole run).
	Stage *int `json:"stage,omitempty"`
	// Basis says what the measured figures are (BasisRequests,
	// BasisAggregate).
	Basis           string   `json:"basis"`
	Model           string   `json:"model"`
	GPU             string   `json:"gpu"`
	EngineVersion   string   `json:"engine_version"`
	Requests        int      `json:"requests"`
	LoggedBlocks    int      `json:"logged_blocks"`
	PredictedBlocks int      `json:"predicted_blocks"`
	Metrics         []Metric `json:"metrics"`
	// Notes say what a rebuilt load assumes.
	Notes []string `json:"notes,omitempty"`
	// Layout and ClosedLoop describe a run of a closed-loop table
	// (MeanResult.Comparison).
	Layout     *Layout     `json:"layout,omitempty"`
	ClosedLoop *ClosedLoop `json:"closed_loop,omitempty"`
	// Error says why the run could not be simulated (it has no metrics).
	Error string `json:"error,omitempty"`
}

// ClosedLoop is the load of a closed-loop run: users each keeping one
// request in flight, fixed lengths, the warm-up left out of the figures.
type ClosedLoop struct {
	Concurrency    int `json:"concurrency"`
	InputTokens    int `json:"input_tokens"`
	OutputTokens   int `json:"output_tokens"`
	WarmupRequests int `json:"warmup_requests"`
}

// Quantiles compared for each latency metric.
var Quantiles = []string{"mean", "p50", "p90", "p99"}

// Compare lines up a run's measured summary with a simulation report.
func Compare(run *measured.Run, res *scenario.Resolved, rep *sim.Report) Comparison {
	meas := run.Summarize()
	c := Comparison{Run: run.Name, Basis: BasisRequests, Model: rep.Model, GPU: rep.GPU, EngineVersion: run.EngineVersion,
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

// ComparePart lines up a part's measured figures with the simulation of
// its whole workload (a part of Filter -1): every quantile that was
// measured, and the throughput when the run states it.
func ComparePart(run *measured.Run, p *Part, rep *sim.Report) Comparison {
	c := Comparison{Run: p.Name, Basis: p.Basis, Model: rep.Model, GPU: rep.GPU, EngineVersion: run.EngineVersion,
		Requests: p.Measured.Completed, LoggedBlocks: run.LoggedBlocks, PredictedBlocks: p.Resolved.Memory.NumGPUBlocks, Notes: p.Notes}
	if p.Stage >= 0 {
		st := p.Stage
		c.Stage = &st
	}
	for _, m := range []struct {
		name string
		pred stats.Summary
	}{{"ttft_ms", rep.TTFTMS}, {"tpot_ms", rep.TPOTMS}, {"itl_ms", rep.ITLMS}, {"e2e_ms", rep.E2EMS}} {
		for _, q := range Quantiles {
			if v, ok := p.Measured.Get(m.name, q); ok {
				b, _ := m.pred.At(q)
				c.Metrics = append(c.Metrics, metric(m.name+"."+q, v, b))
			}
		}
	}
	if v := p.Measured.RequestsPerS; v > 0 {
		c.Metrics = append(c.Metrics, metric("throughput.requests_per_s", v, rep.Throughput.RequestsPerS))
	}
	if v := p.Measured.OutputTokensPerS; v > 0 {
		c.Metrics = append(c.Metrics, metric("throughput.output_tokens_per_s", v, rep.Throughput.OutputTokensPerS))
	}
	return c
}
