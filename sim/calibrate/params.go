package calibrate

import (
	"math"

	"github.com/headroom-sim/headroom/sim/steptime"
)

// param is one fitted coefficient with its bounds.
type param struct {
	name   string
	field  func(*steptime.Profile) *float64
	lo, hi float64
}

// fitted lists the coefficients a fit adjusts; the link parameters only
// when the run used tensor parallelism.
func fitted(tp int) []param {
	ps := []param{
		{"gemm_efficiency", func(p *steptime.Profile) *float64 { return &p.GEMMEfficiency }, 0.15, 1},
		{"bandwidth_efficiency", func(p *steptime.Profile) *float64 { return &p.BandwidthEfficiency }, 0.3, 1},
		{"attention_prefill_efficiency", func(p *steptime.Profile) *float64 { return &p.AttentionPrefillEfficiency }, 0.1, 1},
		{"attention_decode_efficiency", func(p *steptime.Profile) *float64 { return &p.AttentionDecodeEfficiency }, 0.15, 1},
		{"step_overhead_us", func(p *steptime.Profile) *float64 { return &p.StepOverheadUS }, 0, 30000},
		{"per_seq_overhead_us", func(p *steptime.Profile) *float64 { return &p.PerSeqOverheadUS }, 0, 300},
	}
	if tp > 1 {
		ps = append(ps,
			param{"link_efficiency", func(p *steptime.Profile) *float64 { return &p.LinkEfficiency }, 0.05, 1},
			param{"all_reduce_latency_us", func(p *steptime.Profile) *float64 { return &p.AllReduceLatencyUS }, 1, 300},
		)
	}
	return ps
}

// The optimiser works on unbounded x; a coefficient is lo + (hi−lo)·σ(x).
func (p param) value(x float64) float64 { return p.lo + (p.hi-p.lo)/(1+math.Exp(-x)) }

func (p param) coord(v float64) float64 {
	f := (v - p.lo) / (p.hi - p.lo)
	f = math.Min(math.Max(f, 1e-4), 1-1e-4)
	return math.Log(f / (1 - f))
}

// apply writes the coefficients x encodes into a copy of base.
func apply(base steptime.Profile, ps []param, x []float64) steptime.Profile {
	p := base
	for i, q := range ps {
		*q.field(&p) = q.value(x[i])
	}
	return p
}

// coords encodes base's coefficients.
func coords(base steptime.Profile, ps []param) []float64 {
	x := make([]float64, len(ps))
	for i, q := range ps {
		x[i] = q.coord(*q.field(&base))
	}
	return x
}
