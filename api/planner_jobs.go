package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/headroom-sim/headroom/catalogs"
	"github.com/headroom-sim/headroom/internal/study/plan"
	"github.com/headroom-sim/headroom/internal/study/scenario"
	"github.com/headroom-sim/headroom/sim"
)

// The planner job kinds: sweep, plan, curve, maxload and compare, the
// questions of `headroom sweep|plan|curve|maxload|compare` over the API.
// Each kind's check decodes its params (strictly, the scenarios with
// scenario.Decode) and asks the planner's own check of the question
// (plan.Runner.Check, CheckSweep, CheckCurve, CheckMaxLoad, CheckCompare:
// what the question does before it simulates, with the same defaults and
// bounds), so that bad input is a 4xx of POST /v1/jobs; its runner decodes
// them again and asks plan.Runner, whose result struct is the job's
// result. Every simulation a job runs is bounded by jobs.max_requests and
// jobs.max_tokens; scenarios may name stored calibrations, never files.

// registerPlannerJobs adds the planner kinds to the job manager.
func (s *Server) registerPlannerJobs() {
	s.jobs.Register("sweep", s.runSweepJob, s.checkSweepJob)
	s.jobs.Register("plan", s.runPlanJob, s.checkPlanJob)
	s.jobs.Register("curve", s.runCurveJob, s.checkCurveJob)
	s.jobs.Register("maxload", s.runMaxLoadJob, s.checkMaxLoadJob)
	s.jobs.Register("compare", s.runCompareJob, s.checkCompareJob)
}

// runEnv is a run's bound and the calibration store's lookup.
func (s *Server) runEnv(maxRequests int) RunEnv {
	return RunEnv{MaxRequests: maxRequests, Calibration: s.cals.profile, KernelDBDir: s.cfg.KernelDBDir}
}

// jobEnv is the environment of a job's simulations.
func (s *Server) jobEnv() scenario.Env { return s.engine.Env(s.runEnv(s.cfg.Jobs.MaxRequests)) }

// catalog is the catalog served now.
func (s *Server) catalog() *catalogs.Catalog { return s.engine.Env(RunEnv{}).Catalog }

// runner runs a planner job's simulations in the CPU budget: each takes a
// slot (after synchronous calls), so parallel jobs together run at most
// limits.simulations at once.
func (s *Server) runner() *plan.Runner {
	return &plan.Runner{Env: s.jobEnv(), Workers: s.cfg.Limits.Simulations, Slots: jobSlots{s.cpu},
		Admit: func(sc scenario.Scenario, res *scenario.Resolved) error { return s.checkJobTokens(&sc, res) }}
}

// decodeParams decodes a kind's params strictly into dst and checks its
// binding tags.
func (s *Server) decodeParams(params json.RawMessage, dst any) error {
	if err := decodeStrict(params, dst); err != nil {
		return err
	}
	return s.check(dst)
}

// paramScenario decodes the scenario in field of a kind's params, naming
// the fields of its errors from the params (scenario.engine.max_num_seqs).
func paramScenario(raw json.RawMessage, field string) (scenario.Scenario, error) {
	if b := bytes.TrimSpace(raw); len(b) == 0 || b[0] != '{' {
		return scenario.Scenario{}, &ValidationError{Fields: []FieldProblem{{Field: field, Reason: "must be a scenario (a JSON object; {} runs the defaults)"}}}
	}
	sc, err := decodeScenario(raw, "params."+field)
	if err != nil {
		return sc, prefixFields(err, field+".")
	}
	return sc, nil
}

// prefixFields prefixes the fields a 400 problem names; other errors pass
// unchanged.
func prefixFields(err error, prefix string) error {
	p, _ := problemFor(err)
	if p.Status != 400 || len(p.Errors) == 0 || errors.Is(err, ErrMalformed) {
		return err
	}
	out := &ValidationError{}
	for _, f := range p.Errors {
		out.Fields = append(out.Fields, FieldProblem{Field: prefix + f.Field, Reason: f.Reason})
	}
	return out
}

// invalid is a one-field validation error.
func invalid(field, format string, a ...any) error {
	return &ValidationError{Fields: []FieldProblem{{Field: field, Reason: fmt.Sprintf(format, a...)}}}
}

// Sweep.

func (s *Server) sweepSpec(params json.RawMessage) (plan.SweepSpec, error) {
	var p SweepParams
	if err := s.decodeParams(params, &p); err != nil {
		return plan.SweepSpec{}, err
	}
	sc, err := paramScenario(p.Scenario, "scenario")
	if err != nil {
		return plan.SweepSpec{}, err
	}
	spec := plan.SweepSpec{Scenario: sc, List: p.List}
	points, values := 1, 0
	for i, a := range p.Axes {
		if p.List && len(a.Values) != len(p.Axes[0].Values) {
			return spec, invalid(fmt.Sprintf("axes[%d].values", i), "a list sweep needs %d values, as axes[0] has", len(p.Axes[0].Values))
		}
		points = min(points*len(a.Values), plan.MaxSweepPoints+1)
		values += len(a.Values)
		spec.Axes = append(spec.Axes, plan.Axis{Path: a.Path, Values: wholeNumbers(a.Values)})
	}
	if p.List {
		points = len(p.Axes[0].Values)
	}
	switch {
	case points > plan.MaxSweepPoints:
		return spec, invalid("axes", "more than %d points", plan.MaxSweepPoints)
	case values > maxSweepValues:
		return spec, invalid("axes", "more than %d values in all", maxSweepValues)
	}
	return spec, nil
}

// wholeNumbers turns JSON numbers without a fraction into integers, so
// that an integer field takes 16000000 (which the YAML the overrides go
// through would otherwise write as 1.6e+07, not an integer).
func wholeNumbers(vs []any) []any {
	out := make([]any, len(vs))
	for i, v := range vs {
		if f, ok := v.(float64); ok && f == math.Trunc(f) && math.Abs(f) < 1<<53 {
			v = int64(f)
		}
		out[i] = v
	}
	return out
}

// maxSweepValues bounds the values of all axes together (each is checked
// at submission).
const maxSweepValues = 2000

// checkSweepJob is the planner's check of the sweep (plan.CheckSweep): a
// point that cannot run is an error in its row of the result, as in
// `headroom sweep`.
func (s *Server) checkSweepJob(params json.RawMessage) error {
	spec, err := s.sweepSpec(params)
	if err != nil {
		return err
	}
	return s.runner().CheckSweep(spec)
}

func (s *Server) runSweepJob(ctx context.Context, params json.RawMessage, progress func(float64)) (any, error) {
	spec, err := s.sweepSpec(params)
	if err != nil {
		return nil, err
	}
	return s.runner().Sweep(ctx, spec, progress)
}

// Plan.

// planSpec decodes a plan job, with GPU names turned into catalog ids.
func (s *Server) planSpec(params json.RawMessage) (plan.PlanSpec, error) {
	var p PlanParams
	if err := s.decodeParams(params, &p); err != nil {
		return plan.PlanSpec{}, err
	}
	sc, err := paramScenario(p.Scenario, "scenario")
	if err != nil {
		return plan.PlanSpec{}, err
	}
	spec := plan.PlanSpec{Scenario: sc, TPs: p.TPs, MaxReplicas: p.MaxReplicas, SkipHeadroom: p.SkipHeadroom, Headroom: p.Headroom,
		TargetUtilization: p.TargetUtilization, WindowS: p.WindowS, ParetoMetric: p.ParetoMetric}
	cat := s.catalog()
	for i, id := range p.GPUs {
		g, err := cat.GPU(id)
		if err != nil {
			return spec, fmt.Errorf("gpus[%d]: %w", i, err)
		}
		if !slices.Contains(spec.GPUs, g.ID) {
			spec.GPUs = append(spec.GPUs, g.ID)
		}
	}
	for i, c := range p.Configs {
		g, err := cat.GPU(c.GPU)
		if err != nil {
			return spec, fmt.Errorf("configs[%d].gpu: %w", i, err)
		}
		spec.Configs = append(spec.Configs, plan.Config{GPU: g.ID, TP: max(c.TP, 1), Replicas: max(c.Replicas, 1)})
	}
	if len(p.PricePerGPUHourUSD) > 0 {
		spec.PricePerGPUHourUSD = map[string]float64{}
		for id, v := range p.PricePerGPUHourUSD {
			g, err := cat.GPU(id)
			if err != nil {
				return spec, fmt.Errorf("price_per_gpu_hour_usd.%s: %w", id, err)
			}
			spec.PricePerGPUHourUSD[g.ID] = v
		}
	}
	if d := p.Disaggregation; d != nil {
		if spec.Disaggregation, err = s.disaggSearch(d); err != nil {
			return spec, err
		}
	}
	if m := p.ParetoMetric; m != "" && !slices.Contains(reportMetrics(), m) {
		return spec, invalid("pareto_metric", "%q is not a report figure (e.g. e2e_ms.p99, ttft_ms.p99, tpot_ms.p99, itl_ms.p99)", m)
	}
	return spec, nil
}

// reportMetrics are the figures plan.Metric reads from a report.
func reportMetrics() []string {
	names, _ := plan.Metrics(&sim.Report{})
	return append(names, "goodput_rps")
}

// checkPlanJob is the planner's check of the plan (plan.Runner.Check):
// the candidates pruned as the plan prunes them (none left is 422, saying
// why), the workload it sizes for and a rate profile's run within
// jobs.max_requests and jobs.max_tokens.
func (s *Server) checkPlanJob(params json.RawMessage) error {
	spec, err := s.planSpec(params)
	if err != nil {
		return err
	}
	return s.runner().Check(spec)
}

func (s *Server) runPlanJob(ctx context.Context, params json.RawMessage, progress func(float64)) (any, error) {
	spec, err := s.planSpec(params)
	if err != nil {
		return nil, err
	}
	res, err := s.runner().Plan(ctx, spec, progress)
	if err != nil {
		return nil, err // a *plan.NoCandidatesError says what was pruned
	}
	return res, nil
}

// Curve.

func (s *Server) curveSpec(params json.RawMessage) (plan.CurveSpec, error) {
	var p CurveParams
	if err := s.decodeParams(params, &p); err != nil {
		return plan.CurveSpec{}, err
	}
	sc, err := paramScenario(p.Scenario, "scenario")
	if err != nil {
		return plan.CurveSpec{}, err
	}
	return plan.CurveSpec{Scenario: sc, RatesRPS: p.RatesRPS, Concurrencies: p.Concurrencies, StepDurationS: p.StepDurationS}, nil
}

// checkCurveJob is the planner's check of the staircase (plan.CheckCurve):
// its loads, and the one simulation of its stages within jobs.max_requests
// and jobs.max_tokens.
func (s *Server) checkCurveJob(params json.RawMessage) error {
	spec, err := s.curveSpec(params)
	if err != nil {
		return err
	}
	return s.runner().CheckCurve(spec)
}

func (s *Server) runCurveJob(ctx context.Context, params json.RawMessage, progress func(float64)) (any, error) {
	spec, err := s.curveSpec(params)
	if err != nil {
		return nil, err
	}
	return s.runner().Curve(ctx, spec, progress)
}

// Maxload.

func (s *Server) loadSpec(params json.RawMessage) (plan.LoadSpec, error) {
	var p MaxLoadParams
	if err := s.decodeParams(params, &p); err != nil {
		return plan.LoadSpec{}, err
	}
	sc, err := paramScenario(p.Scenario, "scenario")
	if err != nil {
		return plan.LoadSpec{}, err
	}
	return plan.LoadSpec{Scenario: sc, MaxLoad: p.MaxLoad, Tolerance: p.Tolerance, MaxProbes: p.MaxProbes, MinDurationS: p.MinDurationS, SkipBands: p.SkipBands}, nil
}

// checkMaxLoadJob is the planner's check of the search (plan.CheckMaxLoad).
func (s *Server) checkMaxLoadJob(params json.RawMessage) error {
	spec, err := s.loadSpec(params)
	if err != nil {
		return err
	}
	return s.runner().CheckMaxLoad(spec)
}

func (s *Server) runMaxLoadJob(ctx context.Context, params json.RawMessage, progress func(float64)) (any, error) {
	spec, err := s.loadSpec(params)
	if err != nil {
		return nil, err
	}
	return s.runner().MaxLoad(ctx, spec, plan.NewProgress(1, progress))
}

// Compare.

func (s *Server) compareSpec(params json.RawMessage) (plan.CompareSpec, error) {
	var p CompareParams
	if err := s.decodeParams(params, &p); err != nil {
		return plan.CompareSpec{}, err
	}
	a, err := paramScenario(p.A, "a")
	if err != nil {
		return plan.CompareSpec{}, err
	}
	b, err := paramScenario(p.B, "b")
	if err != nil {
		return plan.CompareSpec{}, err
	}
	return plan.CompareSpec{A: a, B: b, NameA: p.NameA, NameB: p.NameB, KeepWorkloads: p.KeepWorkloads}, nil
}

// checkCompareJob is the planner's check of both sides as they will run
// (plan.CheckCompare: B on A's workload unless keep_workloads).
func (s *Server) checkCompareJob(params json.RawMessage) error {
	spec, err := s.compareSpec(params)
	if err != nil {
		return err
	}
	return s.runner().CheckCompare(spec)
}

func (s *Server) runCompareJob(ctx context.Context, params json.RawMessage, progress func(float64)) (any, error) {
	spec, err := s.compareSpec(params)
	if err != nil {
		return nil, err
	}
	res, err := s.runner().Compare(ctx, spec, progress)
	if err != nil {
		return nil, err
	}
	n := s.cfg.Limits.TimeseriesPoints
	notes := append(coarsenNote("report_a.timeseries", coarsen(res.ReportA, n), n),
		coarsenNote("report_b.timeseries", coarsen(res.ReportB, n), n)...)
	return Noted{Value: res, Notes: notes}, nil
}

// disaggSearch turns a plan's disaggregation params into the search, with
// GPU names turned into catalog ids.
func (s *Server) disaggSearch(d *PlanDisaggregation) (*plan.DisaggSearch, error) {
	cat := s.catalog()
	out := &plan.DisaggSearch{PrefillTPs: d.PrefillTPs, DecodeTPs: d.DecodeTPs, MaxReplicas: d.MaxReplicas}
	for _, l := range []struct {
		field string
		ids   []string
		dst   *[]string
	}{{"prefill_gpus", d.PrefillGPUs, &out.PrefillGPUs}, {"decode_gpus", d.DecodeGPUs, &out.DecodeGPUs}} {
		for i, id := range l.ids {
			g, err := cat.GPU(id)
			if err != nil {
				return nil, fmt.Errorf("disaggregation.%s[%d]: %w", l.field, i, err)
			}
			*l.dst = append(*l.dst, g.ID)
		}
	}
	for i, sh := range d.Shapes {
		var pools [2]plan.PoolShape
		for j, c := range []PlanConfig{sh.Prefill, sh.Decode} {
			g, err := cat.GPU(c.GPU)
			if err != nil {
				return nil, fmt.Errorf("disaggregation.shapes[%d].%s.gpu: %w", i, []string{"prefill", "decode"}[j], err)
			}
			pools[j] = plan.PoolShape{GPU: g.ID, TP: max(c.TP, 1), Replicas: max(c.Replicas, 1)}
		}
		out.Shapes = append(out.Shapes, plan.DisaggShape{Prefill: pools[0], Decode: pools[1]})
	}
	return out, nil
}
