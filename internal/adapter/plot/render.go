package plot

import (
	"errors"
	"fmt"
	"io"

	"github.com/headroom-sim/headroom/internal/study/plan"
	"github.com/headroom-sim/headroom/sim"
)

// ContentType is the media type of every chart.
const ContentType = "image/svg+xml"

// ErrNoChart is returned by Render for a result it has no chart for.
var ErrNoChart = errors.New("no chart for this result")

// Render draws the default chart of a result value, for callers that hold
// one without knowing its type (an API answering Accept: image/svg+xml):
// a *sim.Report's Timeline, a *plan.CurveResult's Curve (without an SLA:
// call Curve to draw one), a *plan.SweepResult's SweepHeatmap of
// DefaultSweepMetric, a *plan.PlanResult's Pareto front, a *plan.DayPlan's
// Day, a
// *plan.LoadResult's LoadSearch, or a *Distributions' TTFT CDF.
func Render(w io.Writer, result any) error {
	switch r := result.(type) {
	case *sim.Report:
		return Timeline(w, r)
	case *plan.CurveResult:
		return Curve(w, r, nil)
	case *plan.SweepResult:
		return SweepHeatmap(w, r, "")
	case *plan.PlanResult:
		return Pareto(w, r)
	case *plan.DayPlan:
		return Day(w, r)
	case *plan.LoadResult:
		return LoadSearch(w, r)
	case *Distributions:
		return TTFTCDF(w, r)
	}
	return fmt.Errorf("%w: %T", ErrNoChart, result)
}
