package plan

import (
	"context"
	"fmt"

	"github.com/headroom-sim/headroom/hardware"
	"github.com/headroom-sim/headroom/internal/study/scenario"
	"github.com/headroom-sim/headroom/internal/study/uncertainty"
	"github.com/headroom-sim/headroom/sim"
	"github.com/headroom-sim/headroom/sim/stats"
	"github.com/headroom-sim/headroom/sim/workload"
)

// CurveSpec is a load staircase, run as one simulation whose stages step
// through the loads (as load tests do: each step inherits the queue the
// previous one left).
type CurveSpec struct {
	Scenario      scenario.Scenario `json:"scenario"`
	RatesRPS      []float64         `json:"rates_rps,omitempty"`
	Concurrencies []int             `json:"concurrencies,omitempty"`
	// StepDurationS is each step's length (default 60 s).
	StepDurationS float64 `json:"step_duration_s,omitempty"`
}

// CurvePoint is one step of the staircase.
type CurvePoint struct {
	Load             float64       `json:"load"`
	ThroughputRPS    float64       `json:"throughput_rps"`
	OutputTokensPerS float64       `json:"output_tokens_per_s"`
	Completed        int           `json:"completed"`
	TTFTMS           stats.Summary `json:"ttft_ms"`
	TPOTMS           stats.Summary `json:"tpot_ms"`
	ITLMS            stats.Summary `json:"itl_ms"`
	E2EMS            stats.Summary `json:"e2e_ms"`
	GoodputRPS       *float64      `json:"goodput_rps,omitempty"`
	SLAMet           *bool         `json:"sla_met,omitempty"`
	Knee             bool          `json:"knee"`
	// The step's error bands (80% and 95%) from the built-in error model,
	// judged as a run of its own at the step's load (uncertainty.
	// StageReport); the point values above stay where they are.
	TTFTMSInterval     *sim.SummaryInterval    `json:"ttft_ms_interval,omitempty"`
	TPOTMSInterval     *sim.SummaryInterval    `json:"tpot_ms_interval,omitempty"`
	ITLMSInterval      *sim.SummaryInterval    `json:"itl_ms_interval,omitempty"`
	E2EMSInterval      *sim.SummaryInterval    `json:"e2e_ms_interval,omitempty"`
	ThroughputInterval *sim.ThroughputInterval `json:"throughput_interval,omitempty"`
	Uncertainty        *sim.Uncertainty        `json:"uncertainty,omitempty"`
}

// CurveResult is the throughput–latency curve.
type CurveResult struct {
	Dimension string       `json:"dimension"`
	Points    []CurvePoint `json:"points"`
	// Knee is the index of the knee point (-1: none): the last step within
	// the SLA when there is one, otherwise the last step before throughput
	// stops following the load or TTFT triples.
	Knee       int    `json:"knee"`
	KneeReason string `json:"knee_reason"`
}

// Curve runs the staircase.
func (r *Runner) Curve(ctx context.Context, spec CurveSpec, progress func(float64)) (*CurveResult, error) {
	s, dim, loads, err := spec.staircase()
	if err != nil {
		return nil, err
	}
	res := &CurveResult{Knee: -1, Dimension: dim}
	if progress != nil {
		progress(0)
	}
	m, err := uncertainty.Builtin()
	if err != nil {
		return nil, err
	}
	out := r.Run(ctx, s)
	if out.Err != nil {
		return nil, out.Err
	}
	if progress != nil {
		progress(1)
	}
	cfg := &out.Resolved.Config
	ranks := cfg.Replicas * max(cfg.DP, 1)
	for i, st := range out.Report.Stages {
		p := CurvePoint{Load: loads[i], ThroughputRPS: st.Throughput.RequestsPerS, OutputTokensPerS: st.Throughput.OutputTokensPerS,
			Completed: st.Requests.Completed, TTFTMS: st.TTFTMS, TPOTMS: st.TPOTMS, ITLMS: st.ITLMS, E2EMS: st.E2EMS, GoodputRPS: st.GoodputRPS}
		if st.SLA != nil {
			met := st.SLA.Met
			p.SLAMet = &met
		}
		if sub := uncertainty.StageReport(out.Report, i, ranks); sub != nil {
			m.Judge(cfg, sub)
			p.TTFTMSInterval, p.TPOTMSInterval, p.ITLMSInterval, p.E2EMSInterval = sub.TTFTMSInterval, sub.TPOTMSInterval, sub.ITLMSInterval, sub.E2EMSInterval
			p.ThroughputInterval, p.Uncertainty = sub.ThroughputInterval, sub.Uncertainty
		}
		res.Points = append(res.Points, p)
	}
	res.markKnee()
	return res, nil
}

// staircase is the one simulation the curve runs: the scenario with its
// load replaced by the steps, the dimension and the load of each step.
func (spec *CurveSpec) staircase() (s scenario.Scenario, dim string, loads []float64, err error) {
	if (len(spec.RatesRPS) == 0) == (len(spec.Concurrencies) == 0) {
		return s, "", nil, &hardware.FieldError{Field: "rates_rps", Reason: "give rates_rps or concurrencies (one of them)"}
	}
	dur := spec.StepDurationS
	if dur <= 0 {
		dur = 60
	}
	s = spec.Scenario
	s.Workload.Trace = nil
	s.Workload.Requests = 0
	var stages []workload.StageSpec
	if len(spec.RatesRPS) > 0 {
		dim = DimRate
		for i, v := range spec.RatesRPS {
			if !(v > 0) {
				return s, "", nil, &hardware.FieldError{Field: fmt.Sprintf("rates_rps[%d]", i), Reason: "must be > 0"}
			}
			stages = append(stages, workload.StageSpec{DurationS: dur, RateRPS: v})
			loads = append(loads, v)
		}
		if s.Workload.Arrival.Type == workload.ArrivalClosedLoop {
			s.Workload.Arrival = workload.ArrivalSpec{}
		}
	} else {
		dim = DimConcurrency
		for i, v := range spec.Concurrencies {
			if v < 1 {
				return s, "", nil, &hardware.FieldError{Field: fmt.Sprintf("concurrencies[%d]", i), Reason: "must be >= 1"}
			}
			stages = append(stages, workload.StageSpec{DurationS: dur, Concurrency: v})
			loads = append(loads, float64(v))
		}
		s.Workload.Arrival = workload.ArrivalSpec{ThinkTimeMS: s.Workload.Arrival.ThinkTimeMS}
	}
	// Only the arrival shape (poisson, gamma cv) and think time carry over.
	a := &s.Workload.Arrival
	a.RateRPS, a.Concurrency = 0, 0
	if a.Type == workload.ArrivalClosedLoop {
		a.Type = ""
	}
	s.Workload.Stages = stages
	// Each step's peak running requests and KV usage, for its bands.
	s.Report.Timeseries = true
	return s, dim, loads, nil
}

func (c *CurveResult) markKnee() {
	if len(c.Points) == 0 {
		return
	}
	if c.Points[0].SLAMet != nil {
		for i, p := range c.Points {
			if *p.SLAMet {
				c.Knee, c.KneeReason = i, "last step within the SLA"
			} else {
				break
			}
		}
	} else {
		base := c.Points[0].TTFTMS.P50
		for i, p := range c.Points {
			follows := c.Dimension != DimRate || p.ThroughputRPS >= 0.9*p.Load
			if follows && (base == 0 || p.TTFTMS.P50 <= 3*base) {
				c.Knee, c.KneeReason = i, "last step whose throughput follows the load with TTFT p50 within 3× the lightest step's"
			} else {
				break
			}
		}
	}
	if c.Knee >= 0 {
		c.Points[c.Knee].Knee = true
	}
}
