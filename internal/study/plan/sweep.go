package plan

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/headroom-sim/headroom/hardware"
	"github.com/headroom-sim/headroom/internal/study/scenario"
	"github.com/headroom-sim/headroom/sim"
)

// Axis is one swept field and its values.
type Axis struct {
	// Path names a scenario field (engine.max_num_seqs, gpu, tp, replicas,
	// weights_dtype, workload.arrival.rate_rps …).
	Path   string `json:"path"`
	Values []any  `json:"values"`
}

// SweepSpec is a what-if grid.
type SweepSpec struct {
	Scenario scenario.Scenario `json:"scenario"`
	Axes     []Axis            `json:"axes"`
	// List pairs the axes' values index by index instead of crossing them
	// (every axis must then have the same number of values).
	List bool `json:"list,omitempty"`
	// SkipSpeculationVerdict leaves out the answer on speculative
	// decoding (SweepResult.Speculation) when the scenario speculates.
	SkipSpeculationVerdict bool `json:"skip_speculation_verdict,omitempty"`
}

// MaxSweepPoints bounds a sweep.
const MaxSweepPoints = 10000

// SweepPoint is one simulated combination.
type SweepPoint struct {
	Values  []any   `json:"values"`
	Metrics Figures `json:"metrics,omitempty"`
	Error   string  `json:"error,omitempty"`
}

// Figures are a point's values of the sweep's columns; a figure the
// point's report does not have (a disaggregated run's pools, in an
// aggregated point) is NaN, null in JSON.
type Figures []float64

// MarshalJSON writes NaN as null.
func (f Figures) MarshalJSON() ([]byte, error) {
	if f == nil {
		return []byte("null"), nil
	}
	vs := make([]any, len(f))
	for i, v := range f {
		if !math.IsNaN(v) && !math.IsInf(v, 0) {
			vs[i] = v
		}
	}
	return json.Marshal(vs)
}

// UnmarshalJSON reads null as NaN.
func (f *Figures) UnmarshalJSON(b []byte) error {
	var vs []*float64
	if err := json.Unmarshal(b, &vs); err != nil {
		return err
	}
	if vs == nil {
		*f = nil
		return nil
	}
	out := make(Figures, len(vs))
	for i, v := range vs {
		out[i] = math.NaN()
		if v != nil {
			out[i] = *v
		}
	}
	*f = out
	return nil
}

// SweepResult is a sweep's table: one row per point, one column per axis
// and per report metric.
type SweepResult struct {
	Axes    []string     `json:"axes"`
	Columns []string     `json:"columns"`
	Points  []SweepPoint `json:"points"`
	// Speculation, when the base scenario speculates, is whether it pays
	// there (before the axes apply): its speed-up at the assumed
	// acceptance and the break-even acceptance, at one request in flight
	// and at the scenario's load. Sweep engine.speculative.acceptance.rate
	// or num_speculative_tokens to see it across the grid.
	Speculation *sim.SpeculationVerdict `json:"speculation,omitempty"`
}

// combos expands the axes into value tuples.
func (sp *SweepSpec) combos() ([][]any, error) {
	if len(sp.Axes) == 0 {
		return nil, &hardware.FieldError{Field: "axes", Reason: "give at least one axis"}
	}
	for i, a := range sp.Axes {
		if a.Path == "" || len(a.Values) == 0 {
			return nil, &hardware.FieldError{Field: fmt.Sprintf("axes[%d]", i), Reason: "needs a path and at least one value"}
		}
	}
	if sp.List {
		n := len(sp.Axes[0].Values)
		out := make([][]any, n)
		for i := range n {
			for j, a := range sp.Axes {
				if len(a.Values) != n {
					return nil, &hardware.FieldError{Field: fmt.Sprintf("axes[%d].values", j), Reason: fmt.Sprintf("a list sweep needs %d values like axes[0]", n)}
				}
				out[i] = append(out[i], a.Values[i])
			}
		}
		return out, nil
	}
	out := [][]any{{}}
	for _, a := range sp.Axes {
		var next [][]any
		for _, prefix := range out {
			for _, v := range a.Values {
				row := append(append([]any{}, prefix...), v)
				next = append(next, row)
			}
		}
		out = next
		if len(out) > MaxSweepPoints {
			return nil, &hardware.FieldError{Field: "axes", Reason: fmt.Sprintf("more than %d points", MaxSweepPoints)}
		}
	}
	return out, nil
}

// Sweep simulates every point of the grid in parallel.
func (r *Runner) Sweep(ctx context.Context, spec SweepSpec, progress func(float64)) (*SweepResult, error) {
	combos, err := spec.combos()
	if err != nil {
		return nil, err
	}
	res := &SweepResult{}
	for i, a := range spec.Axes {
		res.Axes = append(res.Axes, a.Path)
		// A path the scenario does not have fails every point: say so once.
		if _, err := scenario.With(spec.Scenario, scenario.Override{Path: a.Path, Value: a.Values[0]}); err != nil {
			var de *scenario.DecodeError
			if errors.As(err, &de) && de.Field == a.Path && strings.Contains(de.Error(), "unknown key") {
				return nil, &hardware.FieldError{Field: fmt.Sprintf("axes[%d].path", i), Reason: fmt.Sprintf("the scenario has no field %s", a.Path)}
			}
		}
	}
	ss := make([]scenario.Scenario, len(combos))
	bad := make([]error, len(combos))
	for i, c := range combos {
		ovs := make([]scenario.Override, len(c))
		for j, v := range c {
			ovs[j] = scenario.Override{Path: spec.Axes[j].Path, Value: v}
		}
		ss[i], bad[i] = scenario.With(spec.Scenario, ovs...)
	}
	prog := NewProgress(len(ss), progress)
	outs := r.RunAll(ctx, ss, prog.Step)
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	// Points may report different figures (a disaggregated run has its
	// pools'): the columns are every figure any point has, in the order
	// they first appear, and a point lacking one has NaN there.
	col := map[string]int{}
	names := make([][]string, len(combos))
	for i, c := range combos {
		pt := SweepPoint{Values: c}
		err := bad[i]
		if err == nil {
			err = outs[i].Err
		}
		if err != nil {
			pt.Error = err.Error()
		} else {
			names[i], pt.Metrics = Metrics(outs[i].Report)
			for _, n := range names[i] {
				if _, ok := col[n]; !ok {
					col[n] = len(res.Columns)
					res.Columns = append(res.Columns, n)
				}
			}
		}
		res.Points = append(res.Points, pt)
	}
	for i := range res.Points {
		pt := &res.Points[i]
		if pt.Error != "" || slices.Equal(names[i], res.Columns) {
			continue
		}
		aligned := make([]float64, len(res.Columns))
		for j := range aligned {
			aligned[j] = math.NaN()
		}
		for j, n := range names[i] {
			aligned[col[n]] = pt.Metrics[j]
		}
		pt.Metrics = aligned
	}
	if spec.Scenario.Engine.Speculative.On() && !spec.SkipSpeculationVerdict {
		v, err := r.Speculation(ctx, spec.Scenario, nil)
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			// The base scenario itself may not run (the axes make it
			// whole): say so rather than fail the grid.
			v = &sim.SpeculationVerdict{Notes: []string{"no verdict on the base scenario: " + err.Error()}}
		}
		res.Speculation = v
	}
	return res, nil
}

// WriteCSV writes the sweep as CSV: the axes, the metrics, and an error
// column.
func (s *SweepResult) WriteCSV(w io.Writer) error {
	cw := csv.NewWriter(w)
	head := append(append(append([]string{}, s.Axes...), s.Columns...), "error")
	if err := cw.Write(head); err != nil {
		return err
	}
	for _, p := range s.Points {
		row := make([]string, 0, len(head))
		for _, v := range p.Values {
			row = append(row, fmt.Sprint(v))
		}
		for i := range s.Columns {
			if i < len(p.Metrics) && !math.IsNaN(p.Metrics[i]) {
				row = append(row, strconv.FormatFloat(p.Metrics[i], 'g', 8, 64))
			} else {
				row = append(row, "")
			}
		}
		row = append(row, p.Error)
		if err := cw.Write(row); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}
