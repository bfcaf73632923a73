package uncertainty

import (
	"context"
	"maps"
	"math"
	"slices"

	"github.com/headroom-sim/headroom/internal/study/calibrate"
	"github.com/headroom-sim/headroom/sim/steptime"
)

// Residual is one validation figure: a measured run's metric as the
// simulator predicts it and as it was measured, and the regime the
// prediction was made in.
type Residual struct {
	Family string `json:"family"`
	Case   string `json:"case"`
	// Group is the unit the coverage check holds out: the family, the
	// model and the GPU ("closed-loop qwen3-32b@h200"). Runs of one group
	// share their errors' causes, so they are held out together.
	Group     string  `json:"group"`
	Metric    string  `json:"metric"`
	Regime    Regime  `json:"regime"`
	Predicted float64 `json:"predicted"`
	Measured  float64 `json:"measured"`
}

// LogError is the signed log error, log(predicted / measured): positive
// when the simulator predicted more (slower, or more throughput) than was
// measured.
func (r Residual) LogError() float64 { return math.Log(r.Predicted / r.Measured) }

// Replay replays every case with host costs h, scored on every figure its
// benchmark measured (calibrate.Case.MeasuredFigures), and returns the
// residuals of the cases that simulated, in the cases' order, metrics
// sorted. nWorkers bounds the parallel simulations (0: one per CPU).
func Replay(ctx context.Context, cases []calibrate.Case, h steptime.Host, nWorkers int) ([]Residual, error) {
	wide := make([]calibrate.Case, len(cases))
	for i := range cases {
		wide[i] = cases[i]
		wide[i].Measured = cases[i].MeasuredFigures()
	}
	rs := calibrate.EvaluateHost(ctx, wide, h, nWorkers)
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return Residuals(rs), nil
}

// Residuals turns case results into residuals (a result that did not
// simulate has none).
func Residuals(rs []calibrate.CaseResult) []Residual {
	var out []Residual
	for i := range rs {
		r := &rs[i]
		if r.Err != nil || r.Report == nil {
			continue
		}
		c := r.Case
		reg := RegimeOf(&c.Config, r.Report)
		group := c.Family + " " + r.Report.Model + "@" + r.Report.GPU
		for _, n := range slices.Sorted(maps.Keys(c.Measured)) {
			if _, ok := r.Error(n); !ok {
				continue
			}
			out = append(out, Residual{Family: c.Family, Case: c.Name, Group: group, Metric: n, Regime: reg,
				Predicted: r.Predicted[n], Measured: c.Measured[n]})
		}
	}
	return out
}
