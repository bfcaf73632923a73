package plan

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/headroom-sim/headroom/hardware"
	"github.com/headroom-sim/headroom/internal/study/scenario"
	"github.com/headroom-sim/headroom/sim/memory"
)

// Disaggregated candidates: Plan weighs clusters of separate prefill and
// decode pools (each its own GPU and TP) against the aggregated ones, in
// the same ranking. For each pair of pool types that fits, a coordinate
// search finds the pools' replica counts: the fewest decode replicas that
// meet the SLA with the most prefill replicas, then the fewest prefill
// replicas with those decode replicas (each by doubling, then bisecting).
// The KV link and the pools' engine settings come from the scenario's own
// disaggregation section, when it has one.

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

// String is the shape as the plan table writes it: "P 2×h100-sxm tp1 + D
// 3×h200 tp1".
func (d *DisaggShape) String() string {
	return fmt.Sprintf("P %d×%s tp%d + D %d×%s tp%d", d.Prefill.Replicas, d.Prefill.GPU, d.Prefill.TP, d.Decode.Replicas, d.Decode.GPU, d.Decode.TP)
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

// clusterCost is a resolved cluster's GPUs and hourly cost (catalog
// prices, or the plan's overrides): every GPU of every replica, of both
// pools when disaggregated. PricePerGPUHourUSD is then the mean.
func clusterCost(spec *PlanSpec, res *scenario.Resolved) (gpus int, usdPerHour float64) {
	add := func(g *hardware.GPU, n int) {
		price := g.PricePerGPUHourUSD
		if p, ok := spec.PricePerGPUHourUSD[g.ID]; ok {
			price = p
		}
		gpus += n
		usdPerHour += float64(n) * price
	}
	c := &res.Config
	add(c.GPU, c.TP*max(c.DP, 1)*c.Replicas)
	if d := c.Disagg; d != nil {
		add(d.Prefill.GPU, d.Prefill.TP*max(d.Prefill.DP, 1)*d.Prefill.Replicas)
	}
	return gpus, usdPerHour
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
		or := func(a, b []string) []string {
			if len(a) > 0 {
				return a
			}
			return b
		}
		ori := func(a, b []int) []int {
			if len(a) > 0 {
				return a
			}
			return b
		}
		for _, pg := range or(ds.PrefillGPUs, spec.GPUs) {
			for _, pt := range ori(ds.PrefillTPs, spec.TPs) {
				for _, dg := range or(ds.DecodeGPUs, spec.GPUs) {
					for _, dt := range ori(ds.DecodeTPs, spec.TPs) {
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
			var fe *scenario.FieldError
			if errors.Is(err, memory.ErrDoesNotFit) || errors.As(err, &fe) {
				pruned = append(pruned, Pruned{GPU: sh.Decode.GPU, TP: sh.Decode.TP, Disaggregation: &probe, Reason: err.Error()})
				continue
			}
			return nil, nil, err
		}
		shape := sh
		live = append(live, Config{Disaggregation: &shape})
	}
	return live, pruned, nil
}

// searchDisagg finds the replica counts of one pool-type pair (or
// simulates a given shape): the candidate that meets the SLA, or the
// largest one tried, which missed it.
func (r *Runner) searchDisagg(spec *PlanSpec, c Config, simulate func(Config) (Candidate, error)) (met, missed *Candidate, err error) {
	sh := *c.Disaggregation
	at := func(p, d int) (Candidate, error) {
		x := sh
		x.Prefill.Replicas, x.Decode.Replicas = p, d
		return simulate(Config{Disaggregation: &x})
	}
	if sh.Prefill.Replicas > 0 {
		cand, err := at(sh.Prefill.Replicas, sh.Decode.Replicas)
		if err != nil {
			return nil, nil, err
		}
		if cand.MeetsSLA {
			return &cand, nil, nil
		}
		return nil, &cand, nil
	}
	maxN := spec.MaxReplicas
	if ds := spec.Disaggregation; ds != nil && ds.MaxReplicas > 0 {
		maxN = ds.MaxReplicas
	}
	// fewest searches the fewest n in [1, maxN] with ok(n) (ok monotone
	// in n): doubling, then bisecting. It returns 0 and the last
	// candidate tried when none is ok.
	fewest := func(ok func(n int) (Candidate, error)) (int, Candidate, error) {
		lo, hi := 0, 0
		var best, last Candidate
		for n := 1; ; n = min(2*n, maxN) {
			cand, err := ok(n)
			if err != nil {
				return 0, cand, err
			}
			if cand.MeetsSLA {
				hi, best = n, cand
				break
			}
			lo, last = n, cand
			if n == maxN {
				return 0, last, nil
			}
		}
		for hi-lo > 1 {
			mid := (lo + hi) / 2
			cand, err := ok(mid)
			if err != nil {
				return 0, cand, err
			}
			if cand.MeetsSLA {
				hi, best = mid, cand
			} else {
				lo = mid
			}
		}
		return hi, best, nil
	}
	d, cand, err := fewest(func(n int) (Candidate, error) { return at(maxN, n) })
	if err != nil {
		return nil, nil, err
	}
	if d == 0 {
		return nil, &cand, nil
	}
	_, cand, err = fewest(func(n int) (Candidate, error) { return at(n, d) })
	if err != nil {
		return nil, nil, err
	}
	return &cand, nil, nil
}

// planDisaggregated searches the disaggregated pairs in parallel, with
// simulate running one shape; it returns what met the SLA and what missed
// it, in pair order.
func (r *Runner) planDisaggregated(ctx context.Context, spec *PlanSpec, pairs []Config, prog *Progress, simulate func(Config) (Candidate, error)) (met, missed []Candidate, err error) {
	type found struct {
		met, miss *Candidate
		err       error
	}
	out := make([]found, len(pairs))
	var mu sync.Mutex
	parallel(ctx, len(pairs), r.Workers, func(i int) {
		defer prog.Step()
		m, x, err := r.searchDisagg(spec, pairs[i], simulate)
		mu.Lock()
		out[i] = found{m, x, err}
		mu.Unlock()
	})
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	for _, f := range out {
		switch {
		case f.err != nil:
			return nil, nil, f.err
		case f.met != nil:
			met = append(met, *f.met)
		case f.miss != nil:
			missed = append(missed, *f.miss)
		}
	}
	return met, missed, nil
}
