package calibrate

import (
	"math"

	"github.com/headroom-sim/headroom/sim/steptime"
)

// scaled moves a group of coefficients together by one factor, so a fit
// on one run adjusts what that run can identify — compute speed, memory
// speed, fixed overheads — rather than trading coefficients it cannot tell
// apart (a run of a large model barely sees the per-step overhead that
// dominates a small one).
type scaled struct {
	name   string
	fields []func(*steptime.Profile) *float64
	caps   []float64 // upper bound of each field (efficiencies: 1)
}

// groups are the scale factors a fit adjusts; the link group only when
// the run used tensor parallelism.
func groups(tp int, moe bool) []scaled {
	gs := []scaled{
		{"compute", []func(*steptime.Profile) *float64{
			func(p *steptime.Profile) *float64 { return &p.GEMMEfficiency },
			func(p *steptime.Profile) *float64 { return &p.AttentionPrefillEfficiency },
		}, []float64{1, 1}},
		{"memory", []func(*steptime.Profile) *float64{
			func(p *steptime.Profile) *float64 { return &p.BandwidthEfficiency },
			func(p *steptime.Profile) *float64 { return &p.AttentionDecodeEfficiency },
			func(p *steptime.Profile) *float64 { return &p.ElementwiseBandwidthEfficiency },
		}, []float64{1, 1, 1}},
		{"overhead", []func(*steptime.Profile) *float64{
			func(p *steptime.Profile) *float64 { return &p.StepOverheadUS },
			func(p *steptime.Profile) *float64 { return &p.PerSeqOverheadUS },
			func(p *steptime.Profile) *float64 { return &p.PerPrefillOverheadUS },
			func(p *steptime.Profile) *float64 { return &p.KernelOverheadUS },
			func(p *steptime.Profile) *float64 { return &p.AttentionKernelOverheadUS },
			func(p *steptime.Profile) *float64 { return &p.GraphKernelOverheadUS },
			func(p *steptime.Profile) *float64 { return &p.GraphAttentionKernelOverheadUS },
		}, []float64{1e9, 1e9, 1e9, 1e9, 1e9, 1e9, 1e9}},
	}
	if moe {
		// Only a run of a mixture-of-experts model exercises the fused-MoE
		// kernel; others leave it at its default.
		gs = append(gs, scaled{"experts", []func(*steptime.Profile) *float64{
			func(p *steptime.Profile) *float64 { return &p.ExpertBandwidthEfficiency },
		}, []float64{1}})
	}
	if tp > 1 {
		gs = append(gs, scaled{"link", []func(*steptime.Profile) *float64{
			func(p *steptime.Profile) *float64 { return &p.LinkEfficiency },
		}, []float64{1}}, scaled{"link_latency", []func(*steptime.Profile) *float64{
			func(p *steptime.Profile) *float64 { return &p.AllReduceLatencyUS },
		}, []float64{1e9}})
	}
	return gs
}

// scaleBounds are the factors a group may move by: 1/4 to 4.
const scaleLo, scaleHi = 0.25, 4.0

// applyScales multiplies base's groups by exp(x[i]), within the caps.
func applyScales(base steptime.Profile, gs []scaled, x []float64) steptime.Profile {
	p := base
	for i, g := range gs {
		f := math.Min(math.Max(math.Exp(x[i]), scaleLo), scaleHi)
		for j, field := range g.fields {
			v := field(&p)
			*v = math.Min(*v*f, g.caps[j])
		}
	}
	return p
}
