package calibrate

import (
	"context"
	"errors"
	"fmt"
	"math"

	"gonum.org/v1/gonum/optimize"

	"github.com/headroom-sim/headroom/catalogs"
	"github.com/headroom-sim/headroom/internal/adapter/measured"
	"github.com/headroom-sim/headroom/internal/study/replay"
	"github.com/headroom-sim/headroom/internal/study/scenario"
	"github.com/headroom-sim/headroom/sim/steptime"
)

// MinRequests is the fewest completed requests a fit accepts.
const MinRequests = 20

// ErrTooFewRequests is returned for runs too small to fit.
var ErrTooFewRequests = errors.New("too few completed requests to fit")

// Options control a fit.
type Options struct {
	// Start is the profile to start from (nil: the GPU's defaults).
	Start *steptime.Profile
	// MaxEvaluations bounds the simulations (default 400).
	MaxEvaluations int
	// Prior weighs the pull towards the starting coefficients (default
	// 0.002 per coefficient, in the optimiser's coordinates).
	Prior float64
	// Stage, when set, fits on that benchmark's requests only; the whole
	// run is still replayed, so the other benchmarks' load is present.
	Stage *int
	// KernelDB loads the measured kernels of the table step-time backend
	// (nil: the formula backend).
	KernelDB scenario.KernelLoader
}

// Result is a fitted profile and how it fits the run.
type Result struct {
	Profile     steptime.Profile `json:"profile"`
	Before      Evaluation       `json:"before"`
	After       Evaluation       `json:"after"`
	Evaluations int              `json:"evaluations"`
	Fitted      []string         `json:"fitted"`
	// Basis says what the fit matched: replay.BasisRequests (quantiles of
	// the per-request records, arrivals replayed) or replay.BasisAggregate
	// (the tool's own quantiles of each benchmark, load rebuilt from its
	// summary).
	Basis string `json:"basis"`
}

// Fit calibrates the step-time profile on run. It fits on what the run
// measured (replay.Parts): per-request records when it has them, replayed
// with their arrivals and lengths, else the tool's own summary of each
// benchmark, replayed from the load it states; Result.Basis says which.
// Opt.Stage fits on one benchmark.
func Fit(ctx context.Context, run *measured.Run, cat *catalogs.Catalog, opt Options) (*Result, error) {
	stage := -1
	if opt.Stage != nil {
		stage = *opt.Stage
		if run.Stage(stage) == nil {
			return nil, fmt.Errorf("%s: no benchmark %d", run.Name, stage)
		}
	}
	if n := Completed(run, stage); n < MinRequests {
		return nil, fmt.Errorf("%s: %w: %d completed, need at least %d", run.Name, ErrTooFewRequests, n, MinRequests)
	}
	parts, err := replay.Parts(run, cat, replay.Options{KernelDB: opt.KernelDB}, stage)
	if err != nil {
		return nil, err
	}
	ts := targets(parts)
	if len(ts) == 0 {
		return nil, fmt.Errorf("%s: no measured latencies to fit", run.Name)
	}
	base := parts[0].Resolved.Config.Profile
	if opt.Start != nil {
		base = *opt.Start
	}
	if opt.MaxEvaluations <= 0 {
		opt.MaxEvaluations = 400
	}
	if opt.Prior <= 0 {
		opt.Prior = 0.002
	}
	moe := false
	for _, p := range parts {
		moe = moe || p.Resolved.Config.Model.IsMoE()
	}
	gs := groups(max(run.TP, 1), moe)
	x0 := make([]float64, len(gs)) // log scale factors, 0 = the start

	var simErr error
	evals := 0
	run1 := func(p steptime.Profile) ([]prediction, error) {
		evals++
		return simulateParts(ctx, parts, p)
	}
	loss := func(x []float64) float64 {
		if simErr != nil {
			return math.Inf(1)
		}
		rep, err := run1(applyScales(base, gs, x))
		if err != nil {
			simErr = err
			return math.Inf(1)
		}
		l := logLoss(rep, ts)
		for i := range x {
			d := x[i] - x0[i]
			l += opt.Prior * d * d
		}
		return l
	}

	before, err := run1(base)
	if err != nil {
		return nil, err
	}
	prob := optimize.Problem{Func: loss}
	settings := &optimize.Settings{
		FuncEvaluations: opt.MaxEvaluations,
		Converger:       &optimize.FunctionConverge{Absolute: 1e-6, Relative: 1e-4, Iterations: 40},
	}
	r, err := optimize.Minimize(prob, x0, settings, &optimize.NelderMead{SimplexSize: 0.3})
	if simErr != nil {
		return nil, simErr
	}
	if err != nil && r == nil {
		return nil, fmt.Errorf("fit: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	name := replay.StageName(run, stage)
	best := applyScales(base, gs, r.X)
	best.Source = fmt.Sprintf("calibrated on %s", name)
	after, err := run1(best)
	if err != nil {
		return nil, err
	}
	out := &Result{Profile: best, Before: evaluation(name, parts, before, ts), After: evaluation(name, parts, after, ts), Evaluations: evals, Basis: basis(parts)}
	if out.After.Loss > out.Before.Loss {
		// Never return something worse than the start.
		out.Profile, out.After = base, out.Before
	}
	for _, g := range gs {
		out.Fitted = append(out.Fitted, g.name)
	}
	return out, nil
}

// Completed is how many requests of run (of benchmark stage, when >= 0)
// completed: its records' count, or the tools' summaries' where it has no
// records. A fit needs at least MinRequests.
func Completed(run *measured.Run, stage int) int {
	if stage >= 0 {
		if run = run.Stage(stage); run == nil {
			return 0
		}
	}
	if n := run.Summarize().Completed; n > 0 {
		return n
	}
	if run.Aggregate != nil {
		return run.Aggregate.Completed
	}
	n := 0
	for _, s := range run.Stages {
		if s.Aggregate != nil {
			n += s.Aggregate.Completed
		}
	}
	return n
}

// basis names what a fit or an evaluation compared with.
func basis(parts []replay.Part) string {
	b := parts[0].Basis
	for _, p := range parts[1:] {
		if p.Basis != b {
			return "mixed"
		}
	}
	return b
}
