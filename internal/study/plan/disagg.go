package plan

import (
	"context"
	"fmt"

	"github.com/headroom-sim/headroom/hardware"
	"github.com/headroom-sim/headroom/internal/study/scenario"
)

// Disaggregated candidates: Plan weighs clusters of separate prefill and
// decode pools (each its own GPU and TP) against the aggregated ones, in
// the same ranking, with the same verdicts: a candidate qualifies when it
// holds the SLA at Headroom × the target, and its headroom is searched on
// the same workload. For each pair of pool types that fits, a coordinate
// search finds the pools' replica counts (searchDisagg). The KV link and
// the pools' engine settings come from the scenario's own disaggregation
// section, when it has one. A disaggregated recommendation is not played
// through a rate profile: the autoscaler scales one pool of replicas.

// PoolShape is one pool of a disaggregated cluster.
type PoolShape struct {
	GPU      string `json:"gpu"`
	TP       int    `json:"tp"`
	Replicas int    `json:"replicas"`
}

// DisaggShape is a disaggregated cluster: its prefill and decode pools.
type DisaggShape struct {
	Prefill PoolShape `json:"prefill"`
	Decode  PoolShape `json:"decode"`
}

// String is the shape as the plan's tables and charts label it, each
// pool as Label writes a GPU, TP and replicas: "P h100-sxm TP1×2 + D h200
// TP1×3" (without replicas, "P h100-sxm TP1 + D h200 TP1": a pair of
// pool types).
func (d *DisaggShape) String() string {
	return "P " + poolLabel(d.Prefill.GPU, d.Prefill.TP, d.Prefill.Replicas) + " + D " + poolLabel(d.Decode.GPU, d.Decode.TP, d.Decode.Replicas)
}

// DisaggSearch asks Plan for disaggregated candidates too.
type DisaggSearch struct {
	// PrefillGPUs and DecodeGPUs are the pools' candidate GPU ids, crossed
	// (default: the plan's GPUs); PrefillTPs and DecodeTPs their
	// tensor-parallel degrees (default: the plan's TPs).
	PrefillGPUs []string `json:"prefill_gpus,omitempty"`
	DecodeGPUs  []string `json:"decode_gpus,omitempty"`
	PrefillTPs  []int    `json:"prefill_tps,omitempty"`
	DecodeTPs   []int    `json:"decode_tps,omitempty"`
	// MaxReplicas bounds each pool's replica search (default: the plan's).
	MaxReplicas int `json:"max_replicas,omitempty"`
	// Shapes, when given, are simulated as they are instead of searching.
	Shapes []DisaggShape `json:"shapes,omitempty"`
}

// MaxDisaggPairs bounds the pool-type pairs one plan searches.
const MaxDisaggPairs = 256

// Scenario returns base as the cluster shape c serves it: an aggregated
// shape on the scenario's own fields (without disaggregation), a
// disaggregated one in its pools (with the scenario's disaggregation
// settings, if any: link, routers, pool engines).
func (c Config) Scenario(base scenario.Scenario) scenario.Scenario {
	s := base
	if c.Disaggregation == nil {
		s.GPU, s.TP, s.Replicas, s.Disaggregation = c.GPU, c.TP, c.Replicas, nil
		return s
	}
	d := scenario.DisaggregationSpec{}
	if base.Disaggregation != nil {
		d = *base.Disaggregation
	}
	sh := c.Disaggregation
	d.Prefill.GPU, d.Prefill.TP, d.Prefill.Replicas = sh.Prefill.GPU, sh.Prefill.TP, sh.Prefill.Replicas
	d.Decode.GPU, d.Decode.TP, d.Decode.Replicas = sh.Decode.GPU, sh.Decode.TP, sh.Decode.Replicas
	s.Disaggregation = &d
	return s
}

// disaggregated reports whether the plan has disaggregated shapes to
// search or simulate.
func (spec *PlanSpec) disaggregated() bool {
	if spec.Disaggregation != nil {
		return true
	}
	for _, c := range spec.Configs {
		if c.Disaggregation != nil {
			return true
		}
	}
	return false
}

// gpus is the shape's GPUs, before it is resolved (data-parallel ranks
// are not known yet).
func (c Config) gpus() int {
	if d := c.Disaggregation; d != nil {
		return d.Prefill.TP*d.Prefill.Replicas + d.Decode.TP*d.Decode.Replicas
	}
	return c.TP * c.Replicas
}

// clusterCost is a resolved cluster's GPUs, hourly cost and price per
// GPU-hour (catalog prices, or the plan's overrides): every GPU of every
// replica, of both pools when disaggregated; the price is then the mean
// over the GPUs when the pools' prices differ.
func clusterCost(spec *PlanSpec, res *scenario.Resolved) (gpus int, usdPerHour, usdPerGPUHour float64) {
	price := func(g *hardware.GPU) float64 {
		if p, ok := spec.PricePerGPUHourUSD[g.ID]; ok {
			return p
		}
		return g.PricePerGPUHourUSD
	}
	c := &res.Config
	gpus, usdPerGPUHour = c.TP*max(c.DP, 1)*c.Replicas, price(c.GPU)
	usdPerHour = float64(gpus) * usdPerGPUHour
	if d := c.Disagg; d != nil {
		n, p := d.Prefill.TP*max(d.Prefill.DP, 1)*d.Prefill.Replicas, price(d.Prefill.GPU)
		gpus += n
		usdPerHour += float64(n) * p
		if p != usdPerGPUHour {
			usdPerGPUHour = usdPerHour / float64(gpus)
		}
	}
	return gpus, usdPerHour, usdPerGPUHour
}

// disaggPairs lists the disaggregated shapes to simulate: the plan's
// configs that are disaggregated and the search's own shapes, as given;
// else, with a search, every pair of pool types (replicas 0: searched).
// It prunes those that cannot start.
func (r *Runner) disaggPairs(spec *PlanSpec, base scenario.Scenario) (live []Config, pruned []Pruned, err error) {
	ds := spec.Disaggregation
	var shapes []DisaggShape
	given := func(field string, sh DisaggShape) error {
		if sh.Prefill.GPU == "" || sh.Decode.GPU == "" || sh.Prefill.Replicas < 1 || sh.Decode.Replicas < 1 {
			return &hardware.FieldError{Field: field, Reason: "each pool needs a gpu and replicas >= 1"}
		}
		sh.Prefill.TP, sh.Decode.TP = max(sh.Prefill.TP, 1), max(sh.Decode.TP, 1)
		shapes = append(shapes, sh)
		return nil
	}
	for i, c := range spec.Configs {
		if c.Disaggregation != nil {
			if err := given(fmt.Sprintf("configs[%d].disaggregation", i), *c.Disaggregation); err != nil {
				return nil, nil, err
			}
		}
	}
	if ds != nil {
		for i, sh := range ds.Shapes {
			if err := given(fmt.Sprintf("disaggregation.shapes[%d]", i), sh); err != nil {
				return nil, nil, err
			}
		}
	}
	if ds != nil && len(ds.Shapes) == 0 && len(spec.Configs) == 0 {
		for _, pg := range orPlan(ds.PrefillGPUs, spec.GPUs) {
			for _, pt := range orPlan(ds.PrefillTPs, spec.TPs) {
				for _, dg := range orPlan(ds.DecodeGPUs, spec.GPUs) {
					for _, dt := range orPlan(ds.DecodeTPs, spec.TPs) {
						shapes = append(shapes, DisaggShape{PoolShape{pg, pt, 0}, PoolShape{dg, dt, 0}})
					}
				}
			}
		}
	}
	if len(shapes) > MaxDisaggPairs {
		return nil, nil, &hardware.FieldError{Field: "disaggregation", Reason: fmt.Sprintf("%d prefill × decode pool pairs, more than %d: name fewer GPUs or TPs per pool", len(shapes), MaxDisaggPairs)}
	}
	for _, sh := range shapes {
		probe := sh
		probe.Prefill.Replicas, probe.Decode.Replicas = max(sh.Prefill.Replicas, 1), max(sh.Decode.Replicas, 1)
		c := Config{Disaggregation: &probe}
		s := c.Scenario(base)
		if _, err := s.CheckFits(r.env()); err != nil {
			if cannotStart(err) {
				shape := sh
				pruned = append(pruned, Pruned{GPU: sh.Decode.GPU, TP: sh.Decode.TP, Disaggregation: &shape, Reason: err.Error()})
				continue
			}
			return nil, nil, err
		}
		shape := sh
		live = append(live, Config{Disaggregation: &shape})
	}
	return live, pruned, nil
}

// orPlan is a pool's own list, or the plan's when the pool names none.
func orPlan[T any](pool, plan []T) []T {
	if len(pool) > 0 {
		return pool
	}
	return plan
}

// searchDisagg finds the candidates of one pair of pool types, as search
// does for one GPU and TP, with a coordinate search in place of the
// replica search: at a load, the fewest decode replicas that meet the SLA
// with the most prefill replicas, then the fewest prefill replicas with
// those decode replicas (each by doubling, then bisecting, with runs
// that can no longer meet the SLA stopped early). At Headroom × the
// target that is the qualifying candidate; at the target, within its
// replicas, the cheaper one short of the headroom. A given shape is
// judged as it is.
func (q *searcher) searchDisagg(ctx context.Context, shape Config) shapeResult {
	ss := &shapeSearch{q: q, shape: shape, cache: map[probeKey]verdict{}}
	sh := shape.Disaggregation
	if sh.Prefill.Replicas > 0 { // a given shape
		return q.given(ctx, ss.along(scenario.PoolDecode, sh.Prefill.Replicas), sh.Decode.Replicas)
	}
	maxN := q.spec.MaxReplicas
	if ds := q.spec.Disaggregation; ds != nil && ds.MaxReplicas > 0 {
		maxN = ds.MaxReplicas
	}
	// pools is the coordinate search at multiple m of the target, within
	// pHi prefill and dHi decode replicas (0, 0 when none meets the SLA).
	pools := func(m float64, pHi, dHi int) (p, d int, err error) {
		d, err = ss.along(scenario.PoolDecode, pHi).fewest(ctx, m, dHi)
		if err != nil || d == 0 {
			return 0, 0, err
		}
		p, err = ss.along(scenario.PoolPrefill, d).fewest(ctx, m, pHi)
		return p, d, err
	}
	h := q.spec.Headroom
	out := shapeResult{}
	ph, dh, err := pools(h, maxN, maxN)
	if err != nil {
		return shapeResult{err: err}
	}
	pHi, dHi := maxN, maxN
	if dh > 0 {
		if err := q.add(ctx, ss.along(scenario.PoolPrefill, dh), &out, ph, true); err != nil {
			return shapeResult{err: err}
		}
		if h == 1 || ph+dh == 2 {
			return out
		}
		pHi, dHi = ph, dh
	}
	// Fewer replicas in either pool that meet the SLA at the target
	// without the headroom.
	pt, dt, err := pools(1, pHi, dHi)
	if err != nil {
		return shapeResult{err: err}
	}
	switch {
	case dt > 0 && (pt != ph || dt != dh):
		err = q.add(ctx, ss.along(scenario.PoolPrefill, dt), &out, pt, false)
	case dt == 0 && dh == 0:
		err = q.missedAt(ctx, ss.along(scenario.PoolPrefill, maxN), &out, maxN)
	}
	out.err = err
	return out
}
