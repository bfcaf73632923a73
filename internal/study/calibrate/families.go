package calibrate

import (
	"context"
	"fmt"
	"io/fs"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/headroom-sim/headroom/catalogs"
	"github.com/headroom-sim/headroom/internal/adapter/measured"
	"github.com/headroom-sim/headroom/internal/study/kernelfit"
	"github.com/headroom-sim/headroom/internal/study/replay"
	"github.com/headroom-sim/headroom/internal/study/workers"
	"github.com/headroom-sim/headroom/sim"
	"github.com/headroom-sim/headroom/sim/engine"
	"github.com/headroom-sim/headroom/sim/stats"
	"github.com/headroom-sim/headroom/sim/steptime"
)

// The host costs (steptime.Host) are fitted to, and checked on, families
// of measured runs that see them differently. A closed loop's TTFT is its
// admission path under a cohort of arrivals; an open loop at low load sees
// the path of one request at a time; a stepped run at saturation sees the
// engine's cost per step; request-level runs measured at the engine see
// little of the path. Fitting on one family and checking on the others
// says how much of a fit is the family's own.
const (
	// FamilyClosedLoop: the aiconfigurator-silicon table's closed loops,
	// scored on their mean TTFT and TPOT.
	FamilyClosedLoop = "closed-loop"
	// FamilyOpenLoop: the residency traces (vLLM 0.23, Poisson 2-10
	// req/s), scored on TTFT P50, ITL P50, TPOT mean and E2E P50.
	FamilyOpenLoop = "open-loop"
	// FamilyStepped: the inference-perf stepped runs, scored on every
	// stage's throughput and, at the two lowest loads, TTFT and E2E P50.
	FamilyStepped = "stepped"
	// FamilyRequestLevel: the LLMServingSim and inference-sim runs
	// replayed request by request, scored on TTFT, TPOT and E2E P50.
	FamilyRequestLevel = "request-level"
)

// Families lists the families in the order reports show them.
var Families = []string{FamilyClosedLoop, FamilyOpenLoop, FamilyStepped, FamilyRequestLevel}

// Case is one simulation of a family and the measured figures it is
// scored on.
type Case struct {
	Family string
	Name   string
	// Stage is the benchmark's index in its run (-1: the whole run).
	Stage    int
	Config   sim.Config
	Measured map[string]float64 // metric name ("ttft_ms.p50") → measured value
	run      *measured.Run
	part     *replay.Part
}

// familyMetrics are the metrics each family is scored on (a stepped run's
// latencies only at its two lowest loads, stepLowStages).
var familyMetrics = map[string][]string{
	FamilyClosedLoop:   {"ttft_ms.mean", "tpot_ms.mean"},
	FamilyOpenLoop:     {"ttft_ms.p50", "itl_ms.p50", "tpot_ms.mean", "e2e_ms.p50"},
	FamilyStepped:      {"throughput.requests_per_s", "ttft_ms.p50", "e2e_ms.p50"},
	FamilyRequestLevel: {"ttft_ms.p50", "tpot_ms.p50", "e2e_ms.p50"},
}

// stepLowStages are the stages of a stepped run whose latencies are scored:
// the two lowest loads, below saturation.
const stepLowStages = 2

// familyDirs are the reference-data folders of the run-folder families.
var familyDirs = map[string]string{
	FamilyOpenLoop:     "measured/residency-vllm-h100-qwen3-14b",
	FamilyStepped:      "measured/inference-perf-kubecon",
	FamilyRequestLevel: "measured",
}

// openLoopGPU is the GPU of the residency runs: their files do not name it,
// the data's README says one H100 80GB.
const openLoopGPU = "h100-sxm"

// LoadCases reads the families' runs from the reference data (fsys rooted
// at ../shared/data) and builds their simulations: the closed-loop table's
// rows, each residency run's vanilla copy (the patched copy is the same
// workload on a server with a counter added), every inference-perf stage,
// and the request-level runs that name their model and GPU.
func LoadCases(fsys fs.FS, cat *catalogs.Catalog, opt replay.Options, families []string) ([]Case, error) {
	var out []Case
	for _, fam := range families {
		var cs []Case
		var err error
		switch fam {
		case FamilyClosedLoop:
			cs, err = closedLoopCases(fsys, cat, opt)
		case FamilyOpenLoop, FamilyStepped, FamilyRequestLevel:
			cs, err = folderCases(fsys, cat, opt, fam)
		default:
			err = fmt.Errorf("no family %q (want one of %s)", fam, strings.Join(Families, ", "))
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", fam, err)
		}
		out = append(out, cs...)
	}
	return out, nil
}

func closedLoopCases(fsys fs.FS, cat *catalogs.Catalog, opt replay.Options) ([]Case, error) {
	runs, err := SiliconRuns(fsys)
	if err != nil {
		return nil, err
	}
	var out []Case
	for _, run := range runs {
		rs, err := replay.Config(run, cat, opt)
		if err != nil {
			continue // a row whose model or GPU the catalog lacks
		}
		a := run.Aggregate
		out = append(out, Case{Family: FamilyClosedLoop, Name: run.Name, Stage: -1, Config: rs.Config, run: run,
			Measured: map[string]float64{"ttft_ms.mean": a.TTFTMS["mean"], "tpot_ms.mean": a.TPOTMS["mean"]}})
	}
	return out, nil
}

func folderCases(fsys fs.FS, cat *catalogs.Catalog, opt replay.Options, fam string) ([]Case, error) {
	dirs, err := measured.FindRunDirs(fsys, familyDirs[fam])
	if err != nil {
		return nil, err
	}
	var out []Case
	for _, dir := range dirs {
		if familyOf(dir) != fam || strings.Contains(dir, "/patched") {
			continue
		}
		run, err := measured.LoadDir(fsys, dir)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", dir, err)
		}
		if fam == FamilyOpenLoop {
			run.GPU = openLoopGPU
		}
		id, err := replay.ResolveModel(cat, run.Model)
		if err != nil || run.GPU == "" {
			continue
		}
		g, err := cat.GPU(run.GPU)
		if err != nil {
			continue
		}
		run.Model, run.GPU = id, g.ID
		ropt := opt
		if run.Engine.Speculative != nil {
			// How many drafts are accepted is the workload's (the prompts
			// and the sampling), not the server's: fitted on the run's
			// first stage, as headroom calibrate --fit acceptance does,
			// and replayed at every stage.
			fit, err := FitAcceptance(context.Background(), run, cat, AcceptanceOptions{Stage: 0, Profile: opt.Profile, KernelDB: opt.KernelDB})
			if err != nil {
				return nil, fmt.Errorf("%s: %w", dir, err)
			}
			rate := fit.Rate
			ropt.Acceptance = &engine.Acceptance{Rate: &rate}
		}
		parts, err := replay.Parts(run, cat, ropt, -1)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", dir, err)
		}
		for i := range parts {
			p := &parts[i]
			m := map[string]float64{}
			for _, name := range familyMetrics[fam] {
				if fam == FamilyStepped && name != "throughput.requests_per_s" && p.Stage >= stepLowStages {
					continue
				}
				metric, q, _ := strings.Cut(name, ".")
				if v, ok := p.Measured.Get(metric, q); ok {
					m[name] = v
				} else if name == "throughput.requests_per_s" && p.Measured.RequestsPerS > 0 {
					m[name] = p.Measured.RequestsPerS
				}
			}
			out = append(out, Case{Family: fam, Name: p.Name, Stage: p.Stage, Config: p.Resolved.Config, Measured: m, run: run, part: p})
		}
	}
	return out, nil
}

// familyOf names the family a reference-data run folder belongs to.
func familyOf(dir string) string {
	switch {
	case strings.Contains(dir, "residency-vllm"):
		return FamilyOpenLoop
	case strings.Contains(dir, "inference-perf-kubecon"):
		return FamilyStepped
	case strings.Contains(dir, "llmservingsim") || strings.Contains(dir, "inference-sim-eval-ground-truth"):
		return FamilyRequestLevel
	}
	return ""
}

// CaseResult is a case simulated with one host: its predicted figures
// (Err set when it did not simulate).
type CaseResult struct {
	Case      *Case
	Predicted map[string]float64
	// Report is the simulated run the predictions were read from (nil
	// when Err is set).
	Report *sim.Report
	Err    error
}

// Error is metric's relative error (predicted / measured − 1), ok false
// when either is missing.
func (r *CaseResult) Error(metric string) (float64, bool) {
	m, okm := r.Case.Measured[metric]
	p, okp := r.Predicted[metric]
	if !okm || !okp || !(m > 0) || !(p > 0) {
		return 0, false
	}
	return p/m - 1, true
}

// EvaluateHost simulates every case with host costs h (the cases' own CPU and
// frontend coefficients replaced; V0 runs take h's CPUV0).
func EvaluateHost(ctx context.Context, cases []Case, h steptime.Host, nWorkers int) []CaseResult {
	out := make([]CaseResult, len(cases))
	workers.For(len(cases), nWorkers, func(i int) {
		c := &cases[i]
		out[i] = CaseResult{Case: c}
		if err := ctx.Err(); err != nil {
			out[i].Err = err
			return
		}
		cfg := c.Config
		cfg.Profile = cfg.Profile.Clone()
		cfg.Profile.CPU, cfg.Profile.CPUV0, cfg.Profile.Frontend = h.CPU, h.CPUV0, h.Frontend
		replay.VersionedFrontend(&cfg.Profile, c.runVersion())
		rep, err := sim.Run(ctx, cfg)
		if err != nil {
			out[i].Err = err
			return
		}
		out[i].Predicted, out[i].Report = casePredicted(rep, c), rep
	})
	return out
}

func (c *Case) runVersion() string {
	if c.run == nil {
		return ""
	}
	return c.run.EngineVersion
}

// casePredicted reads a case's metrics off its simulated report.
func casePredicted(rep *sim.Report, c *Case) map[string]float64 {
	p := map[string]float64{}
	sum := map[string]stats.Summary{"ttft_ms": rep.TTFTMS, "tpot_ms": rep.TPOTMS, "itl_ms": rep.ITLMS, "e2e_ms": rep.E2EMS}
	for name := range c.Measured {
		if name == "throughput.requests_per_s" {
			p[name] = rep.Throughput.RequestsPerS
			continue
		}
		metric, q, _ := strings.Cut(name, ".")
		if v, ok := sum[metric].At(q); ok {
			p[name] = v
		}
	}
	return p
}

// FamilyFigures are one family's errors per metric.
type FamilyFigures struct {
	Family string
	N      int // cases simulated
	Failed int
	// Metrics maps a metric to the median absolute and signed errors (%)
	// over the family's cases.
	Metrics map[string]MetricErrors
	// Loss is the mean absolute log error over every scored figure.
	Loss float64
}

// MetricErrors summarise one metric's relative errors.
type MetricErrors struct {
	N                       int
	MedianAbsPct, MedianPct float64
	WorstPct                float64 // the largest absolute error
}

// Summarize groups results by family.
func Summarize(rs []CaseResult) []FamilyFigures {
	by := map[string]*FamilyFigures{}
	errs := map[string]map[string][]float64{}
	logs := map[string][]float64{}
	for i := range rs {
		r := &rs[i]
		fam := r.Case.Family
		f := by[fam]
		if f == nil {
			f = &FamilyFigures{Family: fam, Metrics: map[string]MetricErrors{}}
			by[fam], errs[fam] = f, map[string][]float64{}
		}
		if r.Err != nil {
			f.Failed++
			continue
		}
		f.N++
		for name := range r.Case.Measured {
			if e, ok := r.Error(name); ok {
				errs[fam][name] = append(errs[fam][name], e)
				logs[fam] = append(logs[fam], math.Abs(math.Log1p(e)))
			}
		}
	}
	var out []FamilyFigures
	for _, fam := range Families {
		f := by[fam]
		if f == nil {
			continue
		}
		for name, es := range errs[fam] {
			abs := make([]float64, len(es))
			worst := 0.0
			for i, e := range es {
				abs[i] = math.Abs(e)
				worst = math.Max(worst, abs[i])
			}
			f.Metrics[name] = MetricErrors{N: len(es), MedianAbsPct: 100 * stats.Median(abs), MedianPct: 100 * stats.Median(es), WorstPct: 100 * worst}
		}
		if l := logs[fam]; len(l) > 0 {
			var s float64
			for _, x := range l {
				s += x
			}
			f.Loss = s / float64(len(l))
		}
		out = append(out, *f)
	}
	return out
}

// MetricNames lists a family's scored metrics in a stable order.
func (f *FamilyFigures) MetricNames() []string {
	var names []string
	for n := range f.Metrics {
		names = append(names, n)
	}
	order := familyMetrics[f.Family]
	sort.Slice(names, func(i, j int) bool {
		return slices.Index(order, names[i]) < slices.Index(order, names[j])
	})
	return names
}

// FamilyHostParams are the host coefficients the family fit moves; the
// others keep their sourced values (docs/accuracy.md says which is which).
var FamilyHostParams = []hostParam{
	{kernelfit.Param{Name: "frontend.client_us", Lo: 0, Hi: 200_000, Offset: 100}, func(h *steptime.Host) *float64 { return &h.Frontend.ClientUS }},
	{kernelfit.Param{Name: "frontend.per_step_us", Lo: 0, Hi: 10_000, Offset: 10}, func(h *steptime.Host) *float64 { return &h.Frontend.PerStepUS }},
	{kernelfit.Param{Name: "cpu.step_overhead_us", Lo: 0, Hi: 50_000, Offset: 10}, func(h *steptime.Host) *float64 { return &h.CPU.StepOverheadUS }},
	{kernelfit.Param{Name: "cpu.per_seq_overhead_us", Lo: 0, Hi: 1000, Offset: 1}, func(h *steptime.Host) *float64 { return &h.CPU.PerSeqOverheadUS }},
	{kernelfit.Param{Name: "cpu_v0.step_overhead_us", Lo: 0, Hi: 50_000, Offset: 10}, func(h *steptime.Host) *float64 { return &h.CPUV0.StepOverheadUS }},
	{kernelfit.Param{Name: "cpu_v0.per_seq_overhead_us", Lo: 0, Hi: 1000, Offset: 1}, func(h *steptime.Host) *float64 { return &h.CPUV0.PerSeqOverheadUS }},
}

// FamilyLoss is the fit's loss over results: the mean of each family's
// Loss, so that every family weighs the same whatever its size.
func FamilyLoss(rs []CaseResult) float64 {
	figs := Summarize(rs)
	if len(figs) == 0 {
		return math.Inf(1)
	}
	var s float64
	for _, f := range figs {
		if f.N == 0 {
			return math.Inf(1)
		}
		s += f.Loss
	}
	return s / float64(len(figs))
}

// FitHostFamilies fits the FamilyHostParams of start to cases (FamilyLoss)
// by a compass search in steps down to 3%, at most maxEvals evaluations.
// A parameter none of the cases sees (the V0 engine's, without a V0 run)
// stays where it is. progress, when not nil, sees every evaluation.
func FitHostFamilies(ctx context.Context, cases []Case, start steptime.Host, maxEvals int, progress func(HostFit)) (*HostFit, error) {
	if len(cases) == 0 {
		return nil, fmt.Errorf("host fit: no cases")
	}
	var params []hostParam
	v0 := slices.ContainsFunc(cases, func(c Case) bool { return c.Config.Engine.Scheduler == engine.SchedulerV0 })
	for _, p := range FamilyHostParams {
		if strings.HasPrefix(p.Name, "cpu_v0.") && !v0 {
			continue
		}
		params = append(params, p)
	}
	x0 := make([]float64, len(params))
	kp := make([]kernelfit.Param, len(params))
	for i, p := range params {
		x0[i], kp[i] = *p.field(&start), p.Param
	}
	host := func(x []float64) steptime.Host {
		h := start
		for i, p := range params {
			*p.field(&h) = x[i]
		}
		return h
	}
	evals := 0
	loss := func(x []float64) float64 {
		evals++
		h := host(x)
		l := FamilyLoss(EvaluateHost(ctx, cases, h, 0))
		if progress != nil {
			progress(HostFit{Host: h, Loss: l, Evaluations: evals})
		}
		return l
	}
	x, l := kernelfit.MinimizeTo(kp, x0, loss, 0.03, maxEvals)
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	h := host(x)
	for _, p := range params {
		v := p.field(&h)
		*v = roundSig(*v)
	}
	return &HostFit{Host: h, Loss: l, Evaluations: evals}, nil
}
