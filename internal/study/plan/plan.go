package plan

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/headroom-sim/headroom/internal/study/scenario"
	"github.com/headroom-sim/headroom/internal/study/uncertainty"
	"github.com/headroom-sim/headroom/internal/study/workers"
	"github.com/headroom-sim/headroom/sim"
	"github.com/headroom-sim/headroom/sim/memory"
)

// PlanSpec asks how many of which GPU serve a workload within an SLA.
type PlanSpec struct {
	// Scenario gives the model, engine settings, workload (the target load,
	// or a workload.rate_profile whose peak is the target) and SLA; its
	// gpu, tp and replicas are replaced by the candidates.
	Scenario scenario.Scenario `json:"scenario"`
	// GPUs are the candidate GPU ids (default: the whole catalog).
	GPUs []string `json:"gpus,omitempty"`
	// TPs are the candidate tensor-parallel degrees (default 1, 2, 4, 8;
	// each kept where the model splits evenly and one node holds it).
	TPs []int `json:"tps,omitempty"`
	// MaxReplicas bounds the replica search per GPU and TP (default 16).
	MaxReplicas int `json:"max_replicas,omitempty"`
	// Configs, when given, are simulated as they are instead of searching
	// replicas over GPUs × TPs.
	Configs []Config `json:"configs,omitempty"`
	// PricePerGPUHourUSD overrides catalog prices by GPU id.
	PricePerGPUHourUSD map[string]float64 `json:"price_per_gpu_hour_usd,omitempty"`
	// Headroom is the multiple of the target load the recommendation must
	// sustain within the SLA (default 1.3).
	Headroom float64 `json:"headroom,omitempty"`
	// SkipHeadroom checks each candidate at the target and at Headroom ×
	// the target only, without measuring how far above it goes.
	SkipHeadroom bool `json:"skip_headroom,omitempty"`
	// ParetoMetric is the report figure the Pareto front trades against
	// cost ("" = the binding SLA bound: the one that limits the headroom
	// of the cheapest candidates).
	ParetoMetric string `json:"pareto_metric,omitempty"`
	// TargetUtilization is the autoscaler's aim, as a fraction of each
	// replica's capacity within the SLA (rate profiles; default 0.7).
	TargetUtilization float64 `json:"target_utilization,omitempty"`
	// WindowS is the length of the windows a rate profile is reported in
	// (default 900 s; longer profile steps are split).
	WindowS float64 `json:"window_s,omitempty"`
	// Disaggregation, when set, adds disaggregated prefill/decode
	// candidates to the ranking (disagg.go).
	Disaggregation *DisaggSearch `json:"disaggregation,omitempty"`
	// SkipSpeculationVerdict leaves out the answer on speculative
	// decoding (PlanResult.Speculation) when the scenario speculates.
	SkipSpeculationVerdict bool `json:"skip_speculation_verdict,omitempty"`
	// Confidence, when set (0.5 to 0.975), checks every SLA bound at the
	// upper end of its figure's error band at this confidence instead
	// of the point value (confidence.go); 0 checks the point values.
	Confidence float64 `json:"confidence,omitempty"`
}

// Config is one cluster shape: replicas of one GPU and TP, or (with
// Disaggregation) a prefill and a decode pool.
type Config struct {
	GPU            string       `json:"gpu,omitempty"`
	TP             int          `json:"tp,omitempty"`
	Replicas       int          `json:"replicas,omitempty"`
	Disaggregation *DisaggShape `json:"disaggregation,omitempty"`
}

// Candidate is a simulated cluster shape, at the target load.
type Candidate struct {
	Config
	GPUs                          int     `json:"gpus"`
	PricePerGPUHourUSD            float64 `json:"price_per_gpu_hour_usd"`
	CostPerHourUSD                float64 `json:"cost_per_hour_usd"`
	CostPerMillionOutputTokensUSD float64 `json:"cost_per_million_output_tokens_usd"`
	MeetsSLA                      bool    `json:"meets_sla"`
	TTFTP99MS                     float64 `json:"ttft_p99_ms"`
	TPOTP99MS                     float64 `json:"tpot_p99_ms"`
	E2EP99MS                      float64 `json:"e2e_p99_ms"`
	// The bands (80% and 95%) of the candidate's headline figures from the
	// built-in error model, judged on its own run at the target load;
	// nil where no pool stands for a figure.
	TTFTP99MSInterval     *sim.Interval  `json:"ttft_p99_ms_interval,omitempty"`
	TPOTP99MSInterval     *sim.Interval  `json:"tpot_p99_ms_interval,omitempty"`
	E2EP99MSInterval      *sim.Interval  `json:"e2e_p99_ms_interval,omitempty"`
	ThroughputRPSInterval *sim.Interval  `json:"throughput_rps_interval,omitempty"`
	ParetoLatencyMS       float64        `json:"pareto_latency_ms"`
	ThroughputRPS         float64        `json:"throughput_rps"`
	OutputTokensPerS      float64        `json:"output_tokens_per_s"`
	GoodputRPS            float64        `json:"goodput_rps"`
	Checks                []sim.SLACheck `json:"checks"`
	// Headroom is the highest load the cluster sustains within the SLA,
	// as a multiple of the target load, from the same workload (the same
	// requests, lengths and seed, arriving faster); 0 when not measured.
	Headroom float64 `json:"headroom"`
	// HeadroomCapped: the search stopped at this multiple, still within
	// the SLA (the headroom is at least that).
	HeadroomCapped bool `json:"headroom_capped,omitempty"`
	// HeadroomLimiting is the bound that breaks first above that load.
	HeadroomLimiting string `json:"headroom_limiting,omitempty"`
	// Qualifies: meets the SLA at the target with the required headroom.
	Qualifies   bool `json:"qualifies"`
	Recommended bool `json:"recommended"`
	Pareto      bool `json:"pareto"`
	// LostOn says why it is not the recommendation: cost, latency (a tie
	// in cost), headroom, sla; WhyNot says it in words.
	LostOn string `json:"lost_on,omitempty"`
	WhyNot string `json:"why_not,omitempty"`
	// StoppedEarly: the run was stopped once the SLA could no longer hold
	// (a missed candidate's latencies are then not known).
	StoppedEarly bool `json:"stopped_early,omitempty"`
}

// Pruned is a GPU and TP (or a pair of pool types) that cannot serve the
// model at all.
type Pruned struct {
	GPU            string       `json:"gpu"`
	TP             int          `json:"tp"`
	Disaggregation *DisaggShape `json:"disaggregation,omitempty"`
	Reason         string       `json:"reason"`
}

// PlanResult answers the plan: the recommendation, the candidates that
// meet the SLA, those that miss it, those that do not fit.
type PlanResult struct {
	Dimension  string  `json:"dimension"`
	TargetLoad float64 `json:"target_load"`
	// RequiredHeadroom is the multiple of the target load the
	// recommendation sustains within the SLA, at least.
	RequiredHeadroom float64 `json:"required_headroom"`
	// Recommendation is the cheapest candidate that qualifies (ties go to
	// the lower binding latency); null when none does.
	Recommendation *Recommendation `json:"recommendation"`
	// Summary is the answer in one sentence (or why there is none).
	Summary string `json:"summary"`
	// RunnersUp are the nearest alternatives, each with why it lost.
	RunnersUp []RunnerUp `json:"runners_up"`
	// Candidates meet the SLA at the target load: those that qualify,
	// best first, then those short of the headroom, cheapest first.
	Candidates []Candidate `json:"candidates"`
	// Missed miss the SLA at the target even at the most replicas tried
	// (the largest replica count tried for each GPU and TP).
	Missed []Candidate `json:"missed"`
	Pruned []Pruned    `json:"pruned"`
	// ParetoMetric is the latency the front trades against cost, and
	// ParetoLimitMS its SLA bound (0 when it is not an SLA bound).
	ParetoMetric  string  `json:"pareto_metric"`
	ParetoLimitMS float64 `json:"pareto_limit_ms,omitempty"`
	// Notes say what the plan chose for the user (max_model_len, the load
	// it sized for).
	Notes []string `json:"notes"`
	// Day is the rate profile played through the recommendation: replicas
	// per window, an autoscaler against static provisioning for the peak.
	Day *DayPlan `json:"day,omitempty"`
	// Speculation, when the scenario speculates, is whether it pays on
	// the recommendation: its speed-up at the assumed acceptance and the
	// break-even acceptance, at one request in flight and at the target
	// load (speculation.go).
	Speculation *sim.SpeculationVerdict `json:"speculation,omitempty"`
	// Simulations is the number of simulations run.
	Simulations int `json:"simulations"`
}

// ErrNoCandidates is returned when no candidate is left to simulate.
var ErrNoCandidates = errors.New("no candidate configuration fits")

// DefaultHeadroom is the load multiple a recommendation sustains.
const DefaultHeadroom = 1.3

func (spec *PlanSpec) defaults(r *Runner) error {
	if spec.Scenario.SLA == nil {
		return ErrNoSLA
	}
	if spec.MaxReplicas <= 0 {
		spec.MaxReplicas = 16
	}
	if spec.Headroom == 0 {
		spec.Headroom = DefaultHeadroom
	}
	if !(spec.Headroom >= 1 && spec.Headroom <= 100) {
		return &scenario.FieldError{Field: "headroom", Reason: fmt.Sprintf("must be in [1, 100], got %g", spec.Headroom)}
	}
	if err := checkConfidence(spec.Confidence); err != nil {
		return err
	}
	if spec.TargetUtilization == 0 {
		spec.TargetUtilization = DefaultTargetUtilization
	}
	if !(spec.TargetUtilization > 0 && spec.TargetUtilization <= 1) {
		return &scenario.FieldError{Field: "target_utilization", Reason: fmt.Sprintf("must be in (0, 1], got %g", spec.TargetUtilization)}
	}
	if spec.WindowS == 0 {
		spec.WindowS = DefaultWindowS
	}
	if !(spec.WindowS >= 1 && spec.WindowS <= 86400) {
		return &scenario.FieldError{Field: "window_s", Reason: fmt.Sprintf("must be in [1, 86400] s, got %g", spec.WindowS)}
	}
	if spec.Scenario.Engine.Speculative.On() && spec.disaggregated() {
		return &ScenarioError{&scenario.FieldError{Field: "engine.speculative", Reason: scenario.SpeculativeDisaggReason}}
	}
	if len(spec.GPUs) == 0 && len(spec.Configs) == 0 {
		for _, g := range r.Env.Catalog.GPUs() {
			spec.GPUs = append(spec.GPUs, g.ID)
		}
	}
	if len(spec.TPs) == 0 {
		spec.TPs = []int{1, 2, 4, 8}
	}
	return nil
}

// Plan answers the spec: each GPU × TP that fits gets the fewest replicas
// meeting the SLA at Headroom × the target (doubling, then bisecting; a
// probe that can no longer meet it is stopped early), then a run at the
// target for its figures and a search for its headroom, in parallel
// across candidates; each pair of pool types asked for
// (spec.Disaggregation) gets the fewest replicas per pool the same way
// (disagg.go). The cheapest that qualifies is the recommendation. With a
// rate profile the target is its peak, and the profile is then played
// through an aggregated recommendation (see DayPlan). With no candidate
// left it returns the result (what was pruned) and a *NoCandidatesError.
func (r *Runner) Plan(ctx context.Context, spec PlanSpec, progress func(float64)) (*PlanResult, error) {
	ps, err := r.prepare(&spec)
	if err != nil {
		if ps != nil {
			return ps.res, err
		}
		return nil, err
	}
	base, profile, dim, target, res := ps.base, ps.profile, ps.dim, ps.target, ps.res
	live, disagg := ps.live, ps.disagg
	if spec.Confidence > 0 && profile != nil {
		return nil, &scenario.FieldError{Field: "confidence", Reason: "not with a workload.rate_profile: its day is judged window by window on the point values"}
	}
	steps := len(live) + len(disagg)
	if profile != nil {
		steps += len(live)/2 + 1 // the day: capacity searches and two long runs
	}
	prog := NewProgress(steps, progress)
	q := &searcher{r: r, spec: &spec, base: base, dim: dim, target: target}
	live = append(live, disagg...)
	results := make([]shapeResult, len(live))
	parallel(ctx, len(live), r.Workers, func(i int) {
		defer prog.Step()
		results[i] = q.search(ctx, live[i])
	})
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	for _, f := range results {
		if f.err != nil {
			return nil, f.err
		}
		res.Candidates = append(res.Candidates, f.candidates...)
		if f.missed != nil {
			res.Missed = append(res.Missed, *f.missed)
		}
	}
	if err := r.recommend(&spec, res); err != nil {
		return nil, err
	}
	switch rec := res.Recommendation; {
	case profile == nil || rec == nil:
	case rec.Disaggregation != nil:
		// The autoscaler starts and drains the replicas of one pool.
		res.Notes = append(res.Notes, "the rate profile is not played through the recommendation: it is disaggregated, and the autoscaler scales one pool of replicas (plan the profile without disaggregation for its day)")
	default:
		day, err := r.planDay(ctx, q, profile, res, prog)
		if err != nil {
			return nil, err
		}
		res.Day = day
	}
	if rec := res.Recommendation; rec != nil && rec.Disaggregation == nil && base.Engine.Speculative.On() && !spec.SkipSpeculationVerdict {
		v, err := r.Speculation(ctx, rec.Config.Scenario(withLoad(base, dim, target)), nil)
		if err != nil {
			return nil, fmt.Errorf("speculation verdict: %w", err)
		}
		res.Speculation = v
	}
	res.Simulations = q.simulations()
	return res, nil
}

// planSetup is a plan up to its first simulation: the workloads, the
// load, the candidates that can start and what was pruned.
type planSetup struct {
	base         scenario.Scenario
	profile      *scenario.Scenario
	dim          string
	target       float64
	res          *PlanResult
	live, disagg []Config // aggregated shapes (replicas 0: searched), disaggregated pairs
}

// prepare does what Plan does before it simulates, for Plan and Check.
// Errors of the scenario's making are *ScenarioError.
func (r *Runner) prepare(spec *PlanSpec) (*planSetup, error) {
	if err := spec.defaults(r); err != nil {
		return nil, err
	}
	base, profile, notes, err := r.planWorkload(spec)
	if err != nil {
		return nil, err
	}
	dim, target, err := loadOf(&base)
	if err != nil {
		return nil, &ScenarioError{&scenario.FieldError{Field: "workload.stages", Reason: err.Error()}}
	}
	res := &PlanResult{Dimension: dim, TargetLoad: target, RequiredHeadroom: spec.Headroom,
		Candidates: []Candidate{}, Missed: []Candidate{}, Pruned: []Pruned{}, RunnersUp: []RunnerUp{}, Notes: notes}
	ps := &planSetup{base: base, profile: profile, dim: dim, target: target, res: res}

	var shapes []Config // Replicas 0: search them
	if len(spec.Configs) > 0 {
		for _, c := range spec.Configs {
			if c.Disaggregation == nil {
				shapes = append(shapes, Config{GPU: c.GPU, TP: max(c.TP, 1), Replicas: max(c.Replicas, 1)})
			}
		}
	} else {
		for _, g := range spec.GPUs {
			for _, tp := range spec.TPs {
				shapes = append(shapes, Config{GPU: g, TP: tp})
			}
		}
	}
	// Prune what cannot start before simulating anything.
	for _, c := range shapes {
		s := Config{GPU: c.GPU, TP: c.TP, Replicas: 1}.Scenario(base)
		if _, err := s.CheckFits(r.env()); err != nil {
			if cannotStart(err) {
				res.Pruned = append(res.Pruned, Pruned{GPU: c.GPU, TP: c.TP, Reason: err.Error()})
				continue
			}
			return nil, &ScenarioError{err}
		}
		ps.live = append(ps.live, c)
	}
	disagg, dpruned, err := r.disaggPairs(spec, base)
	if err != nil {
		return nil, err
	}
	ps.disagg = disagg
	res.Pruned = append(res.Pruned, dpruned...)
	if len(ps.live)+len(disagg) == 0 {
		return ps, &NoCandidatesError{Pruned: res.Pruned}
	}
	return ps, nil
}

// NoCandidatesError is ErrNoCandidates with what was pruned and why.
type NoCandidatesError struct{ Pruned []Pruned }

func (e *NoCandidatesError) Error() string {
	var reasons []string
	for _, p := range e.Pruned[:min(3, len(e.Pruned))] {
		reasons = append(reasons, fmt.Sprintf("%s tp %d: %s", p.GPU, p.TP, p.Reason))
	}
	if len(reasons) == 0 {
		return ErrNoCandidates.Error() + ": no GPU and TP to try"
	}
	return fmt.Sprintf("%v: every GPU and TP was pruned (%s)", ErrNoCandidates, strings.Join(reasons, "; "))
}
func (e *NoCandidatesError) Unwrap() error { return ErrNoCandidates }

// cannotStart reports whether a CheckFits error says the configuration
// cannot start (it is pruned) rather than that the plan cannot go on.
func cannotStart(err error) bool {
	var fe *scenario.FieldError
	return errors.Is(err, memory.ErrDoesNotFit) || errors.As(err, &fe)
}

// candidate summarises one simulated configuration at the target load.
func (r *Runner) candidate(spec *PlanSpec, v verdict, cfg Config) (Candidate, error) {
	c := Candidate{Config: cfg, GPUs: cfg.gpus(), Checks: []sim.SLACheck{}}
	if v.res != nil {
		c.GPUs, c.CostPerHourUSD, c.PricePerGPUHourUSD = clusterCost(spec, v.res)
	}
	rep := v.rep
	if rep == nil {
		c.StoppedEarly = true
		return c, nil
	}
	c.TTFTP99MS, c.TPOTP99MS, c.E2EP99MS = rep.TTFTMS.P99, rep.TPOTMS.P99, rep.E2EMS.P99
	c.ThroughputRPS, c.OutputTokensPerS = rep.Throughput.RequestsPerS, rep.Throughput.OutputTokensPerS
	if v.res != nil {
		m, err := uncertainty.Builtin()
		if err != nil {
			return c, err
		}
		m.Judge(&v.res.Config, rep)
		c.TTFTP99MSInterval, c.TPOTP99MSInterval, c.E2EP99MSInterval = rep.TTFTMSInterval.At("p99"), rep.TPOTMSInterval.At("p99"), rep.E2EMSInterval.At("p99")
		if t := rep.ThroughputInterval; t != nil {
			c.ThroughputRPSInterval = t.RequestsPerS
		}
	}
	if c.OutputTokensPerS > 0 {
		c.CostPerMillionOutputTokensUSD = c.CostPerHourUSD / (c.OutputTokensPerS * 3600) * 1e6
	}
	if rep.SLA != nil {
		c.MeetsSLA, c.Checks = rep.SLA.Met, rep.SLA.Checks
	}
	if rep.GoodputRPS != nil {
		c.GoodputRPS = *rep.GoodputRPS
	}
	if spec.ParetoMetric != "" {
		val, err := Metric(rep, spec.ParetoMetric)
		if err != nil {
			return c, fmt.Errorf("pareto_metric: %w", err)
		}
		c.ParetoLatencyMS = val
	}
	return c, nil
}

// parallel runs f(0..n-1) on up to w goroutines, skipping those that
// would start after ctx ended.
func parallel(ctx context.Context, n, w int, f func(i int)) {
	workers.For(n, w, func(i int) {
		if ctx.Err() == nil {
			f(i)
		}
	})
}
