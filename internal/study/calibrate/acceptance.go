package calibrate

import (
	"context"
	"fmt"
	"math"

	"github.com/headroom-sim/headroom/catalogs"
	"github.com/headroom-sim/headroom/internal/adapter/measured"
	"github.com/headroom-sim/headroom/internal/study/replay"
	"github.com/headroom-sim/headroom/internal/study/scenario"
	"github.com/headroom-sim/headroom/sim"
	"github.com/headroom-sim/headroom/sim/engine"
	"github.com/headroom-sim/headroom/sim/steptime"
)

// Acceptance fitting: the speculative decoding acceptance of a measured
// run that speculates, from its latencies. A step's cost is the
// simulator's (target verification, rejection sampler, proposer); what a
// step yields is the acceptance, so the time a request spends decoding
// (E2E P50 − TTFT P50, which leaves the request path's TTFT error out)
// pins it. The acceptance is one conditional rate (draft i accepted with
// probability rate^i, Leviathan et al.'s α; EAGLE-3's n-α are nearly
// flat), found by bisection, since the decode time falls as it rises. A
// baseline run of the same server and load without speculation corrects
// the target for the simulator's own error on it: the fit then matches
// the ratio of decode times, not their values.

// AcceptanceOptions tune FitAcceptance.
type AcceptanceOptions struct {
	// Stage is the benchmark of the run to fit on (-1: the run's only).
	Stage int
	// Baseline, when set, is the same server and load without
	// speculation, compared at BaselineStage (-1: its only benchmark).
	Baseline      *measured.Run
	BaselineStage int
	// HoldoutStages checks the fitted acceptance on every other benchmark
	// of the run.
	HoldoutStages bool
	// Counts, when set, are vLLM's spec_decode counters over the run
	// (measured.ReadSpecDecodeCounts): the acceptance is then read off
	// them (per position), not fitted, and CountsSource says where they
	// come from.
	Counts       *measured.SpecDecodeCounts
	CountsSource string
	// Profile replaces the GPU's default step-time coefficients; KernelDB
	// loads the table backend's kernels (nil: the formula backend).
	Profile  *steptime.Profile
	KernelDB scenario.KernelLoader
}

// AcceptanceFit is a fitted acceptance and how it was found.
type AcceptanceFit struct {
	Run                  string `json:"run"`
	Stage                int    `json:"stage"`
	Method               string `json:"method"`
	NumSpeculativeTokens int    `json:"num_speculative_tokens"`
	// Rate is the conditional acceptance (engine.speculative.acceptance
	// rate), PerPosition the per-position rates it gives, and
	// MeanAcceptanceLength and AcceptanceRate what vLLM would report at
	// them (1 + Σ per-position; accepted ÷ drafted).
	Rate                 float64   `json:"rate"`
	PerPosition          []float64 `json:"per_position"`
	MeanAcceptanceLength float64   `json:"mean_acceptance_length"`
	AcceptanceRate       float64   `json:"acceptance_rate"`
	// RateFromMeans is the rate fitted on the mean decode time instead,
	// and MeanAcceptanceLengthFromMeans its mean acceptance length.
	RateFromMeans                 float64 `json:"rate_from_means"`
	MeanAcceptanceLengthFromMeans float64 `json:"mean_acceptance_length_from_means"`
	// The figure matched: the measured median decode time
	// (e2e_ms.p50 − ttft_ms.p50), corrected by the baseline's
	// predicted ÷ measured ratio when a baseline is given.
	MeasuredDecodeMS  float64 `json:"measured_decode_ms"`
	TargetDecodeMS    float64 `json:"target_decode_ms"`
	PredictedDecodeMS float64 `json:"predicted_decode_ms"`
	BaselineRatio     float64 `json:"baseline_ratio,omitempty"`
	Evaluations       int     `json:"evaluations"`
	// FromCounters says the acceptance was read off vLLM's spec_decode
	// counters (PerPosition is then the measurement, Rate its first
	// position, and no decode time was fitted).
	FromCounters bool `json:"from_counters,omitempty"`
	// Source is the text to give as engine.speculative.acceptance.source.
	Source   string            `json:"source"`
	Holdouts []AcceptanceCheck `json:"holdouts,omitempty"`
	Notes    []string          `json:"notes,omitempty"`
}

// AcceptanceCheck is one benchmark replayed at the fitted acceptance.
type AcceptanceCheck struct {
	Stage  int     `json:"stage"`
	Metric string  `json:"metric"`
	Meas   float64 `json:"measured"`
	Pred   float64 `json:"predicted"`
	Error  float64 `json:"error_pct"`
}

// acceptanceIterations halves the rate's interval to within 1e-4.
const acceptanceIterations = 14

// FitAcceptance fits the acceptance of run (which must record
// speculative decoding the simulator models) at opt.Stage: on the median
// request's decode time (Rate), and on the mean's (RateFromMeans), which
// differ when the run's requests accept unevenly (the simulator draws
// every request from one acceptance model).
func FitAcceptance(ctx context.Context, run *measured.Run, cat *catalogs.Catalog, opt AcceptanceOptions) (*AcceptanceFit, error) {
	sp := run.Engine.Speculative
	if sp == nil {
		return nil, fmt.Errorf("%s: the run records no speculative decoding (--speculative-config) to fit the acceptance of", run.Name)
	}
	if b := opt.Baseline; b != nil && b.Engine.Speculative != nil {
		return nil, fmt.Errorf("baseline %s speculates too: give the same server without --speculative-config", b.Name)
	}
	fit := &AcceptanceFit{Run: run.Name, Stage: opt.Stage, Method: sp.Method, NumSpeculativeTokens: sp.NumSpeculativeTokens}
	if opt.Counts != nil {
		return fit.fromCounters(ctx, run, cat, opt)
	}
	med, err := fitDecode(ctx, run, cat, opt, "p50", fit)
	if err != nil {
		return nil, err
	}
	mean, err := fitDecode(ctx, run, cat, opt, "mean", fit)
	if err != nil {
		return nil, err
	}
	fit.Rate, fit.MeasuredDecodeMS, fit.TargetDecodeMS, fit.PredictedDecodeMS, fit.BaselineRatio = med.rate, med.measured, med.target, med.predicted, med.ratio
	fit.RateFromMeans = mean.rate
	fit.PerPosition = engine.Geometric(fit.Rate, sp.NumSpeculativeTokens)
	for i, p := range fit.PerPosition {
		fit.PerPosition[i] = round4(p)
	}
	fit.MeanAcceptanceLength = round4(engine.MeanAcceptanceLength(fit.PerPosition))
	fit.AcceptanceRate = round4((fit.MeanAcceptanceLength - 1) / float64(sp.NumSpeculativeTokens))
	fit.MeanAcceptanceLengthFromMeans = round4(engine.MeanAcceptanceLength(engine.Geometric(mean.rate, sp.NumSpeculativeTokens)))
	fit.Source = fmt.Sprintf("headroom calibrate --fit acceptance on %s %s (median decode time E2E P50 − TTFT P50, %.1f ms)", run.Name, stageLabel(opt.Stage), med.target)
	if opt.Baseline != nil {
		fit.Source += fmt.Sprintf(", against baseline %s", opt.Baseline.Name)
	}
	if math.Abs(fit.MeanAcceptanceLengthFromMeans-fit.MeanAcceptanceLength) > 0.02 {
		fit.Notes = append(fit.Notes, fmt.Sprintf("the mean request accepts more than the median (mean acceptance length %.3f from the means, %.3f from the medians): the run's requests accept unevenly, which the simulator does not model (one acceptance model for every request); the medians' rate reproduces the percentiles, the means' the tokens per step", fit.MeanAcceptanceLengthFromMeans, fit.MeanAcceptanceLength))
	}
	if opt.HoldoutStages {
		rate := fit.Rate
		if err := fit.checkStages(ctx, run, cat, opt, &engine.Acceptance{Rate: &rate}); err != nil {
			return nil, err
		}
	}
	return fit, nil
}

// fromCounters reads the acceptance off vLLM's counters, and checks it
// on the run's benchmarks when asked.
func (f *AcceptanceFit) fromCounters(ctx context.Context, run *measured.Run, cat *catalogs.Catalog, opt AcceptanceOptions) (*AcceptanceFit, error) {
	k := f.NumSpeculativeTokens
	per, err := opt.Counts.PerPosition(k)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", opt.CountsSource, err)
	}
	f.FromCounters = true
	f.PerPosition = make([]float64, k)
	for i, p := range per {
		f.PerPosition[i] = round4(p)
	}
	f.Rate = f.PerPosition[0]
	f.MeanAcceptanceLength = round4(engine.MeanAcceptanceLength(per))
	f.AcceptanceRate = round4((f.MeanAcceptanceLength - 1) / float64(k))
	f.RateFromMeans, f.MeanAcceptanceLengthFromMeans = f.Rate, f.MeanAcceptanceLength
	f.Source = fmt.Sprintf("vLLM's spec_decode counters (%s): %.0f proposals, %.0f of %.0f drafts accepted", opt.CountsSource, opt.Counts.Drafts, opt.Counts.AcceptedTokens, opt.Counts.DraftTokens)
	if d := opt.Counts.DraftTokens; d > 0 {
		if got := opt.Counts.AcceptedTokens / d; math.Abs(got-f.AcceptanceRate) > 0.01 {
			f.Notes = append(f.Notes, fmt.Sprintf("the counters' accepted ÷ drafted (%.4f) differs from the per-position rates' (%.4f): the budget trimmed drafts, or the scrape mixes servers", got, f.AcceptanceRate))
		}
	}
	if opt.HoldoutStages {
		acc := &engine.Acceptance{PerPosition: f.PerPosition}
		if err := f.checkStages(ctx, run, cat, opt, acc); err != nil {
			return nil, err
		}
	}
	return f, nil
}

// decodeFit is one bisection's outcome (ms).
type decodeFit struct {
	rate, measured, target, predicted, ratio float64
}

// fitDecode finds the conditional rate at which the simulated decode
// time (E2E − TTFT at quantile q: p50 or mean) matches the measured one,
// corrected by the baseline's predicted ÷ measured when there is one.
func fitDecode(ctx context.Context, run *measured.Run, cat *catalogs.Catalog, opt AcceptanceOptions, q string, fit *AcceptanceFit) (decodeFit, error) {
	var out decodeFit
	meas, err := measuredDecode(run, cat, opt.Stage, opt, q)
	if err != nil {
		return out, err
	}
	out.measured, out.target = meas, meas
	if b := opt.Baseline; b != nil {
		bm, err := measuredDecode(b, cat, opt.BaselineStage, opt, q)
		if err != nil {
			return out, fmt.Errorf("baseline: %w", err)
		}
		bp, err := predictedDecode(ctx, b, cat, opt.BaselineStage, opt, nil, q)
		if err != nil {
			return out, fmt.Errorf("baseline: %w", err)
		}
		out.ratio = round4(bp / bm)
		out.target = meas * bp / bm
		fit.Notes = append(fit.Notes, fmt.Sprintf("baseline %s (%s): decode predicted %.1f ms, measured %.1f ms: the target is the measured %.1f ms × %.4f", b.Name, q, bp, bm, meas, bp/bm))
	}
	decodeAt := func(rate float64) (float64, error) {
		fit.Evaluations++
		return predictedDecode(ctx, run, cat, opt.Stage, opt, &engine.Acceptance{Rate: &rate}, q)
	}
	lo, hi := 0.0, 1.0
	dLo, err := decodeAt(lo)
	if err != nil {
		return out, err
	}
	dHi, err := decodeAt(hi)
	if err != nil {
		return out, err
	}
	target := out.target
	switch {
	case dLo <= target:
		out.rate, out.predicted = 0, dLo
		if dLo < 0.98*target {
			fit.Notes = append(fit.Notes, fmt.Sprintf("%s: even with no draft accepted the simulated decode (%.1f ms) is faster than the target (%.1f ms): the speculative step is under-priced for this run, and the fit is 0", q, dLo, target))
		} else {
			fit.Notes = append(fit.Notes, fmt.Sprintf("%s: no draft accepted reproduces the target within 2%% (%.1f ms simulated, %.1f ms target): the fit is 0", q, dLo, target))
		}
	case dHi >= target:
		out.rate, out.predicted = 1, dHi
		fit.Notes = append(fit.Notes, fmt.Sprintf("%s: even with every draft accepted the simulated decode (%.1f ms) is no faster than the target (%.1f ms): the fit is 1", q, dHi, target))
	default:
		for range acceptanceIterations {
			if err := ctx.Err(); err != nil {
				return out, err
			}
			mid := (lo + hi) / 2
			d, err := decodeAt(mid)
			if err != nil {
				return out, err
			}
			if d > target {
				lo, dLo = mid, d
			} else {
				hi, dHi = mid, d
			}
		}
		// The end nearer the target.
		out.rate, out.predicted = lo, dLo
		if math.Abs(dHi-target) < math.Abs(dLo-target) {
			out.rate, out.predicted = hi, dHi
		}
	}
	out.rate, out.predicted, out.measured, out.target = round4(out.rate), round4(out.predicted), round4(out.measured), round4(out.target)
	return out, nil
}

func stageLabel(stage int) string {
	if stage < 0 {
		return "(whole run)"
	}
	return fmt.Sprintf("stage %d", stage)
}

// checkStages replays every other benchmark at acceptance acc.
func (f *AcceptanceFit) checkStages(ctx context.Context, run *measured.Run, cat *catalogs.Catalog, opt AcceptanceOptions, acc *engine.Acceptance) error {
	for _, st := range run.Stages {
		if st.Index == opt.Stage {
			continue
		}
		parts, err := replay.Parts(run, cat, replay.Options{Profile: opt.Profile, KernelDB: opt.KernelDB, Acceptance: acc}, st.Index)
		if err != nil {
			return err
		}
		p := parts[0]
		rep, err := sim.Run(ctx, p.Resolved.Config)
		if err != nil {
			return fmt.Errorf("%s: %w", p.Name, err)
		}
		for _, c := range []struct {
			metric string
			pred   float64
		}{{"e2e_ms.p50", rep.E2EMS.P50}, {"ttft_ms.p50", rep.TTFTMS.P50}} {
			metric, q := c.metric[:len(c.metric)-4], "p50"
			if m, ok := p.Measured.Get(metric, q); ok && m > 0 {
				f.Holdouts = append(f.Holdouts, AcceptanceCheck{Stage: st.Index, Metric: c.metric, Meas: m, Pred: round4(c.pred), Error: round4(100 * (c.pred - m) / m)})
			}
		}
		if m := p.Measured.RequestsPerS; m > 0 {
			pr := rep.Throughput.RequestsPerS
			f.Holdouts = append(f.Holdouts, AcceptanceCheck{Stage: st.Index, Metric: "throughput.requests_per_s", Meas: m, Pred: round4(pr), Error: round4(100 * (pr - m) / m)})
		}
	}
	return nil
}

// measuredDecode is a benchmark's measured E2E − TTFT at quantile q, in
// ms.
func measuredDecode(run *measured.Run, cat *catalogs.Catalog, stage int, opt AcceptanceOptions, q string) (float64, error) {
	parts, err := replay.Parts(run, cat, replay.Options{Profile: opt.Profile, KernelDB: opt.KernelDB}, stage)
	if err != nil {
		return 0, err
	}
	if len(parts) != 1 {
		return 0, fmt.Errorf("%s holds %d benchmarks: give the stage to fit on", run.Name, len(parts))
	}
	m := parts[0].Measured
	e2e, ok1 := m.Get("e2e_ms", q)
	ttft, ok2 := m.Get("ttft_ms", q)
	if !ok1 || !ok2 || !(e2e > ttft) {
		return 0, fmt.Errorf("%s: no E2E and TTFT %s (E2E above TTFT) to fit the acceptance on", parts[0].Name, q)
	}
	return e2e - ttft, nil
}

// predictedDecode replays a benchmark (at acc, when the run speculates
// and acc is set) and returns its simulated E2E − TTFT at quantile q
// (p50 or mean), in ms.
func predictedDecode(ctx context.Context, run *measured.Run, cat *catalogs.Catalog, stage int, opt AcceptanceOptions, acc *engine.Acceptance, q string) (float64, error) {
	parts, err := replay.Parts(run, cat, replay.Options{Profile: opt.Profile, KernelDB: opt.KernelDB, Acceptance: acc}, stage)
	if err != nil {
		return 0, err
	}
	if len(parts) != 1 {
		return 0, fmt.Errorf("%s holds %d benchmarks: give the stage to fit on", run.Name, len(parts))
	}
	rep, err := sim.Run(ctx, parts[0].Resolved.Config)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", parts[0].Name, err)
	}
	if q == "mean" {
		return rep.E2EMS.Mean - rep.TTFTMS.Mean, nil
	}
	return rep.E2EMS.P50 - rep.TTFTMS.P50, nil
}

func round4(v float64) float64 { return math.Round(v*1e4) / 1e4 }
