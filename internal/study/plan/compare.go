package plan

import (
	"bytes"
	"context"
	"fmt"
	"reflect"
	"sort"

	"go.yaml.in/yaml/v3"

	"github.com/headroom-sim/headroom/internal/study/scenario"
	"github.com/headroom-sim/headroom/sim"
)

// CompareSpec is an A/B comparison.
type CompareSpec struct {
	A     scenario.Scenario `json:"a"`
	B     scenario.Scenario `json:"b"`
	NameA string            `json:"name_a,omitempty"`
	NameB string            `json:"name_b,omitempty"`
	// KeepWorkloads runs each side on its own workload; by default B runs
	// A's workload and SLA (the same requests, lengths and seed), which is
	// what makes the comparison fair.
	KeepWorkloads bool `json:"keep_workloads,omitempty"`
}

// FieldDiff is a scenario field the two sides set differently.
type FieldDiff struct {
	Path string `json:"path"`
	A    any    `json:"a"`
	B    any    `json:"b"`
}

// MetricDiff is one report figure on both sides.
type MetricDiff struct {
	Name     string  `json:"name"`
	A        float64 `json:"a"`
	B        float64 `json:"b"`
	Delta    float64 `json:"delta"`
	DeltaPct float64 `json:"delta_pct"`
}

// CompareResult is the side-by-side.
type CompareResult struct {
	NameA       string         `json:"name_a"`
	NameB       string         `json:"name_b"`
	Differences []FieldDiff    `json:"differences"`
	Notes       []string       `json:"notes,omitempty"`
	Metrics     []MetricDiff   `json:"metrics"`
	SLAA        *sim.SLAResult `json:"sla_a,omitempty"`
	SLAB        *sim.SLAResult `json:"sla_b,omitempty"`
	ReportA     *sim.Report    `json:"report_a"`
	ReportB     *sim.Report    `json:"report_b"`
}

// Compare runs both sides on the same workload and seed.
func (r *Runner) Compare(ctx context.Context, spec CompareSpec, progress func(float64)) (*CompareResult, error) {
	res := &CompareResult{NameA: spec.NameA, NameB: spec.NameB}
	if res.NameA == "" {
		res.NameA = "A"
	}
	if res.NameB == "" {
		res.NameB = "B"
	}
	a, b := spec.sides()
	if !spec.KeepWorkloads {
		if !reflect.DeepEqual(spec.A.Workload, spec.B.Workload) {
			res.Notes = append(res.Notes, fmt.Sprintf("%s runs %s's workload (same requests, lengths and seed)", res.NameB, res.NameA))
		}
		if spec.B.SLA != nil && !reflect.DeepEqual(spec.A.SLA, spec.B.SLA) {
			res.Notes = append(res.Notes, fmt.Sprintf("%s is judged by %s's SLA", res.NameB, res.NameA))
		}
	}
	diffs, err := diffScenarios(a, b)
	if err != nil {
		return nil, err
	}
	res.Differences = diffs
	if len(diffs) == 0 {
		res.Notes = append(res.Notes, "the two scenarios are identical")
	}
	prog := NewProgress(2, progress)
	outs := r.RunAll(ctx, []scenario.Scenario{a, b}, prog.Step)
	for i, o := range outs {
		if o.Err != nil {
			return nil, fmt.Errorf("%s: %w", []string{res.NameA, res.NameB}[i], o.Err)
		}
	}
	res.ReportA, res.ReportB = outs[0].Report, outs[1].Report
	res.SLAA, res.SLAB = res.ReportA.SLA, res.ReportB.SLA
	na, va := Metrics(res.ReportA)
	nb, vb := Metrics(res.ReportB)
	bIdx := map[string]float64{}
	for i, n := range nb {
		bIdx[n] = vb[i]
	}
	for i, n := range na {
		bv, ok := bIdx[n]
		if !ok {
			continue
		}
		d := MetricDiff{Name: n, A: va[i], B: bv, Delta: bv - va[i]}
		if va[i] != 0 {
			d.DeltaPct = 100 * d.Delta / va[i]
		}
		res.Metrics = append(res.Metrics, d)
	}
	return res, nil
}

// sides are A and B as Compare runs them: B on A's workload and by A's
// SLA, unless KeepWorkloads.
func (spec *CompareSpec) sides() (a, b scenario.Scenario) {
	a, b = spec.A, spec.B
	if !spec.KeepWorkloads {
		b.Workload, b.SLA = a.Workload, a.SLA
	}
	return a, b
}

// diffScenarios lists the fields two scenarios set differently.
func diffScenarios(a, b scenario.Scenario) ([]FieldDiff, error) {
	fa, err := flattenScenario(a)
	if err != nil {
		return nil, err
	}
	fb, err := flattenScenario(b)
	if err != nil {
		return nil, err
	}
	keys := map[string]bool{}
	for k := range fa {
		keys[k] = true
	}
	for k := range fb {
		keys[k] = true
	}
	var out []FieldDiff
	for k := range keys {
		if !reflect.DeepEqual(fa[k], fb[k]) {
			out = append(out, FieldDiff{Path: k, A: fa[k], B: fb[k]})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out, nil
}

func flattenScenario(s scenario.Scenario) (map[string]any, error) {
	var buf bytes.Buffer
	if err := scenario.Encode(&buf, s); err != nil {
		return nil, err
	}
	var m map[string]any
	if err := yaml.Unmarshal(buf.Bytes(), &m); err != nil {
		return nil, err
	}
	out := map[string]any{}
	var walk func(prefix string, v any)
	walk = func(prefix string, v any) {
		if mm, ok := v.(map[string]any); ok {
			for k, x := range mm {
				p := k
				if prefix != "" {
					p = prefix + "." + k
				}
				walk(p, x)
			}
			return
		}
		out[prefix] = v
	}
	walk("", m)
	return out, nil
}
