package plan

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/headroom-sim/headroom/hardware"
	"github.com/headroom-sim/headroom/internal/study/scenario"
)

// The checks a server makes of a question before it queues it: each does
// what its question does up to the first simulation (the same defaults,
// bounds and candidate pruning, not a copy of them), and resolves every
// scenario a run would start from, asking Admit of it, so that what the
// question would fail on is refused at submission. Errors name the
// spec's fields: a scenario's under its key ("scenario.", "a.", "b.").

// Check checks spec as Plan would run it, without simulating: its bounds,
// the workload and load it sizes for, the candidates that can start (none
// left: a *NoCandidatesError saying why), and with a rate profile the
// day's run through a candidate (resolved, and asked of Admit), so that a
// server refuses at submission what the plan would fail on. Errors of the
// scenario's making name their fields under "scenario.".
func (r *Runner) Check(spec PlanSpec) error {
	ps, err := r.prepare(&spec)
	if err != nil {
		return scenarioFields(err)
	}
	// The runs start from the base workload on a candidate (one replica:
	// the bounds are on requests and tokens, which replicas do not change).
	c := append(slices.Clone(ps.live), ps.disagg...)[0]
	if c.Disaggregation == nil {
		c.Replicas = 1
	}
	if err := r.admit(c.Scenario(ps.base)); err != nil {
		return scenarioFields(&ScenarioError{err})
	}
	if ps.profile != nil && len(ps.live) > 0 {
		p := Config{GPU: ps.live[0].GPU, TP: ps.live[0].TP, Replicas: 1}.Scenario(*ps.profile)
		p.Autoscale = nil
		if err := r.admit(p); err != nil {
			return scenarioFields(&ScenarioError{err})
		}
	}
	return nil
}

// admit resolves s and asks Admit, as a run of s would.
func (r *Runner) admit(s scenario.Scenario) error {
	res, err := s.Resolve(r.env())
	if err != nil {
		return err
	}
	if r.Admit != nil {
		return r.Admit(s, res)
	}
	return nil
}

// ScenarioError is an error of a spec's scenario (its fields named as
// the scenario's), as opposed to one of the spec's own fields.
type ScenarioError struct{ Err error }

func (e *ScenarioError) Error() string { return e.Err.Error() }
func (e *ScenarioError) Unwrap() error { return e.Err }

// FieldPrefixer is an error naming a field of a scenario (an Admit's
// error, say) that a check can name under the scenario's key.
type FieldPrefixer interface {
	error
	PrefixField(prefix string) error
}

// scenarioFields names the fields of a *ScenarioError under "scenario.".
func scenarioFields(err error) error {
	var se *ScenarioError
	if !errors.As(err, &se) {
		return err
	}
	return underKey("scenario.", se.Err)
}

// underKey names the field err names (a *scenario.FieldError's, a
// FieldPrefixer's) under prefix; other errors pass unchanged.
func underKey(prefix string, err error) error {
	var fe *scenario.FieldError
	var fp FieldPrefixer
	switch {
	case errors.As(err, &fp):
		return fp.PrefixField(prefix)
	case errors.As(err, &fe):
		return &scenario.FieldError{Field: prefix + fe.Field, Reason: fe.Reason}
	}
	return err
}

// CheckMaxLoad checks spec as MaxLoad would run it: an SLA to hold, a
// single load to search, a scenario that resolves and is admitted.
func (r *Runner) CheckMaxLoad(spec LoadSpec) error {
	s := spec.Scenario
	if s.SLA == nil {
		return ErrNoSLA
	}
	if _, _, err := loadOf(&s); err != nil {
		return &scenario.FieldError{Field: "scenario.workload.stages", Reason: err.Error()}
	}
	if err := r.admit(s); err != nil {
		return scenarioFields(&ScenarioError{err})
	}
	return nil
}

// CheckCurve checks spec as Curve would run it: the staircase's loads, and
// the scenario as one simulation of its stages (its requests within the
// Env's bound).
func (r *Runner) CheckCurve(spec CurveSpec) error {
	s, _, _, err := spec.staircase()
	if err != nil {
		return err
	}
	if err := r.admit(s); err != nil {
		return scenarioFields(&ScenarioError{err})
	}
	return nil
}

// CheckCompare checks both sides as Compare runs them (B on A's workload
// unless KeepWorkloads).
func (r *Runner) CheckCompare(spec CompareSpec) error {
	a, b := spec.sides()
	for _, side := range []struct {
		key string
		s   scenario.Scenario
	}{{"a", a}, {"b", b}} {
		if err := r.admit(side.s); err != nil {
			if named := underKey(side.key+".", err); named != err {
				return named
			}
			return fmt.Errorf("%s: %w", side.key, err)
		}
	}
	return nil
}

// CheckSweep checks that every axis value goes into the scenario, that
// the ids an axis names exist (models, GPUs, calibrations), and that the
// base scenario's own ids do unless swept. A point that cannot run (does
// not fit, over the request bound) is an error in its row of the result,
// as Sweep reports it, not a refusal.
func (r *Runner) CheckSweep(spec SweepSpec) error {
	if _, err := spec.combos(); err != nil {
		return err
	}
	env := r.env()
	swept := map[string]bool{}
	for i, a := range spec.Axes {
		swept[a.Path] = true
		for j, v := range a.Values {
			pt, err := scenario.With(spec.Scenario, scenario.Override{Path: a.Path, Value: v})
			if err != nil {
				return axisError(i, j, a.Path, err)
			}
			if err := idsExist(env, pt, map[string]bool{a.Path: true}); err != nil {
				return fmt.Errorf("axes[%d].values[%d]: %w", i, j, err)
			}
		}
	}
	base := map[string]bool{"model": !swept["model"], "gpu": !swept["gpu"], "calibration": !swept["calibration"]}
	if err := idsExist(env, spec.Scenario, base); err != nil {
		return fmt.Errorf("scenario.%w", err)
	}
	// The base itself need not run (a swept field may make it), but it may
	// not read files, nor be too large unless an axis resizes the workload.
	_, err := spec.Scenario.Resolve(env)
	var fe *scenario.FieldError
	if errors.As(err, &fe) && fe.Reason == scenario.ErrFilesNotAllowed.Error() ||
		errors.Is(err, scenario.ErrTooLarge) && !sweptWorkload(swept) {
		return scenarioFields(&ScenarioError{err})
	}
	return nil
}

// sweptWorkload reports whether an axis changes the workload's size.
func sweptWorkload(swept map[string]bool) bool {
	for p := range swept {
		if strings.HasPrefix(p, "workload") {
			return true
		}
	}
	return false
}

// idsExist checks the ids of s that which names (model, gpu, calibration).
func idsExist(env scenario.Env, s scenario.Scenario, which map[string]bool) error {
	if which["model"] {
		if _, err := env.Catalog.Model(s.Model); err != nil {
			return fmt.Errorf("model: %w", err)
		}
	}
	if which["gpu"] {
		if _, err := env.Catalog.GPU(s.GPU); err != nil {
			return fmt.Errorf("gpu: %w", err)
		}
	}
	if which["calibration"] && s.Calibration != "" {
		if env.Calibration == nil {
			return &scenario.FieldError{Field: "calibration", Reason: "calibration profiles cannot be loaded here"}
		}
		if _, err := env.Calibration(s.Calibration); err != nil {
			return fmt.Errorf("calibration: %w", err)
		}
	}
	return nil
}

// axisError names the axis of a value that does not go into the
// scenario: its path when the field is unknown, the value otherwise.
func axisError(i, j int, path string, err error) error {
	var de *scenario.DecodeError
	if !errors.As(err, &de) {
		return &hardware.FieldError{Field: fmt.Sprintf("axes[%d].values[%d]", i, j), Reason: err.Error()}
	}
	field := de.Field
	if field == "" {
		field = path
	}
	if strings.Contains(de.Err.Error(), "unknown key") || strings.Contains(de.Err.Error(), "is not a mapping") {
		return &hardware.FieldError{Field: fmt.Sprintf("axes[%d].path", i), Reason: fmt.Sprintf("%s: %v", field, de.Err)}
	}
	return &hardware.FieldError{Field: fmt.Sprintf("axes[%d].values[%d]", i, j), Reason: fmt.Sprintf("%s: %v", field, de.Err)}
}
