package plan

import (
	"fmt"
	"slices"

	"github.com/headroom-sim/headroom/internal/study/scenario"
	"github.com/headroom-sim/headroom/internal/study/uncertainty"
)

// Planning under uncertainty: with PlanSpec.Confidence c, a candidate
// meets the SLA when every bound holds at the upper end of its figure's
// error band at c (the value a benchmark's measurement stays at or below
// with probability c, by the error model fitted to the validation runs:
// uncertainty.Model.Upper), not at the simulator's point value.

// confidenceRange is what Confidence may be besides 0 (the point values):
// the error model's levels reach from the median to 97.5%.
const minConfidence, maxConfidence = 0.5, 0.975

func checkConfidence(c float64) error {
	if c != 0 && !(c >= minConfidence && c <= maxConfidence) {
		return &scenario.FieldError{Field: "confidence", Reason: fmt.Sprintf("must be in [%g, %g] (0 or absent: the point values), got %g", minConfidence, maxConfidence, c)}
	}
	return nil
}

// confident re-judges v's SLA checks at confidence c: each check's
// value_ms becomes the upper end of its band, met when it is within the
// limit (and the bound was not missed for another reason: requests that
// never completed).
func confident(v *verdict, c float64) error {
	if v.rep == nil || v.rep.SLA == nil {
		return nil
	}
	m, err := uncertainty.Builtin()
	if err != nil {
		return err
	}
	sla := *v.rep.SLA
	sla.Checks = slices.Clone(sla.Checks)
	sla.Met = true
	for i := range sla.Checks {
		ch := &sla.Checks[i]
		name := ch.Metric + "." + ch.Quantile
		up, ok := m.Upper(&v.res.Config, v.rep, name, ch.ValueMS, c)
		if !ok {
			if ch.Reason != "" && !ch.Met {
				sla.Met = false
				continue // no value to band: missed already
			}
			return &scenario.FieldError{Field: "confidence", Reason: fmt.Sprintf("the error model has no band for the SLA's %s (bands cover TTFT, TPOT, ITL and E2E: mean and p50 to p99)", name)}
		}
		ch.ValueMS = up
		ch.Met = ch.Reason == "" && up <= ch.LimitMS
		sla.Met = sla.Met && ch.Met
	}
	v.rep.SLA = &sla
	v.met, v.limiting = sla.Met, limitingCheck(sla.Checks)
	return nil
}
