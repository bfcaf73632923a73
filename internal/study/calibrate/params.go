package calibrate

import (
	"math"

	"github.com/headroom-sim/headroom/sim/steptime"
)

// scaled is one calibration factor: a resource class of the step-time
// model whose predicted times a fit on one run moves together — compute
// speed, memory speed, fixed overheads, the fused-MoE kernel, the link —
// rather than trading coefficients the run cannot tell apart (a run of a
// large model barely sees the per-step overhead that dominates a small
// one). The factors are the profile's Scale fields, which both the
// formula and the measured-table backends apply.
type scaled struct {
	name  string
	field func(*steptime.Scales) *float64
}

// groups are the scale factors a fit adjusts; the experts group only for
// a mixture-of-experts model and the link group only when the run used
// tensor parallelism.
func groups(tp int, moe bool) []scaled {
	gs := []scaled{
		{"compute", func(s *steptime.Scales) *float64 { return &s.Compute }},
		{"memory", func(s *steptime.Scales) *float64 { return &s.Memory }},
		{"overhead", func(s *steptime.Scales) *float64 { return &s.Overhead }},
	}
	if moe {
		gs = append(gs, scaled{"experts", func(s *steptime.Scales) *float64 { return &s.Experts }})
	}
	if tp > 1 {
		gs = append(gs, scaled{"link", func(s *steptime.Scales) *float64 { return &s.Link }})
	}
	return gs
}

// scaleBounds are the factors a group may move by: 1/4 to 4.
const scaleLo, scaleHi = 0.25, 4.0

// applyScales multiplies base's scales by exp(x[i]) within the bounds.
// Compute, memory, experts and link are speeds (a factor above one makes
// those kernels faster); overhead multiplies the fixed costs.
func applyScales(base steptime.Profile, gs []scaled, x []float64) steptime.Profile {
	p := base.Clone()
	for i, g := range gs {
		f := math.Min(math.Max(math.Exp(x[i]), scaleLo), scaleHi)
		v := g.field(&p.Scale)
		cur := *v
		if cur == 0 {
			cur = 1
		}
		*v = cur * f
	}
	return p
}
