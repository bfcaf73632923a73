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
}

// Result is a fitted profile and how it fits the run.
type Result struct {
	Profile     steptime.Profile `json:"profile"`
	Before      Evaluation       `json:"before"`
	After       Evaluation       `json:"after"`
	Evaluations int              `json:"evaluations"`
	Fitted      []string         `json:"fitted"`
}

// Fit calibrates the step-time profile on run.
func Fit(ctx context.Context, run *measured.Run, cat *catalogs.Catalog, opt Options) (*Result, error) {
	stage := -1
	if opt.Stage != nil {
		stage = *opt.Stage
	}
	focus := run
	if stage >= 0 {
		if focus = run.Stage(stage); focus == nil {
			return nil, fmt.Errorf("%s: no benchmark %d", run.Name, stage)
		}
	}
	sum := focus.Summarize()
	completed := sum.Completed
	if completed == 0 && focus.Aggregate != nil {
		completed = focus.Aggregate.Completed
	}
	if completed < MinRequests {
		return nil, fmt.Errorf("%s: %w: %d completed, need at least %d", run.Name, ErrTooFewRequests, completed, MinRequests)
	}
	ts := targets(run, stage)
	if len(ts) == 0 {
		return nil, fmt.Errorf("%s: no measured latencies to fit", run.Name)
	}
	res, err := replay.Config(run, cat, replay.Options{})
	if err != nil {
		return nil, err
	}
	base := res.Config.Profile
	if opt.Start != nil {
		base = *opt.Start
	}
	if opt.MaxEvaluations <= 0 {
		opt.MaxEvaluations = 400
	}
	if opt.Prior <= 0 {
		opt.Prior = 0.002
	}
	gs := groups(max(run.TP, 1), res.Config.Model.IsMoE())
	x0 := make([]float64, len(gs)) // log scale factors, 0 = the start
	cfg := res.Config

	var simErr error
	evals := 0
	run1 := func(p steptime.Profile) (prediction, error) {
		evals++
		c := cfg
		c.Profile = p
		return simulate(ctx, c, stage)
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
	best := applyScales(base, gs, r.X)
	best.Source = fmt.Sprintf("calibrated on %s", stageName(run, stage))
	after, err := run1(best)
	if err != nil {
		return nil, err
	}
	name := stageName(run, stage)
	out := &Result{Profile: best, Before: evaluation(name, before, ts), After: evaluation(name, after, ts), Evaluations: evals}
	if out.After.Loss > out.Before.Loss {
		// Never return something worse than the start.
		out.Profile, out.After = base, out.Before
	}
	for _, g := range gs {
		out.Fitted = append(out.Fitted, g.name)
	}
	return out, nil
}
