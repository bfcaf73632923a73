package kernelfit

import (
	"math"
	"sort"

	"github.com/headroom-sim/headroom/sim/steptime"
)

// moeBlockChoices are the fused-MoE row blocks (BLOCK_SIZE_M) the fit
// chooses among per format.
var moeBlockChoices = []float64{16, 64}

// moeCase is a measured layer with its routed work (computed once).
type moeCase struct {
	pt steptime.MoEPoint
	w  steptime.MoEWork
}

func moeCases(pts []steptime.MoEPoint) []moeCase {
	out := make([]moeCase, len(pts))
	for i, pt := range pts {
		out[i] = moeCase{pt, steptime.MoEWorkFor(pt.Key, pt.Tokens)}
	}
	return out
}

func predictMoE(p *steptime.Profile, hw steptime.Hardware, c moeCase) float64 {
	t, _ := steptime.FormulaMoE(p, hw, c.pt.Key.Format, c.w)
	return t
}

func moeSec(c moeCase) float64 { return c.pt.Sec }

func fitMoE(db *steptime.KernelDB, hw steptime.Hardware, p *steptime.Profile, res *Result) {
	if p.MoE == nil {
		p.MoE = map[string]steptime.MoECoeffs{}
	}
	byFormat := map[string][]steptime.MoEPoint{}
	balanced := map[string][]steptime.MoEPoint{}
	for _, pt := range db.MoEPoints() {
		switch pt.Key.Routing {
		case Routing:
			byFormat[pt.Key.Format] = append(byFormat[pt.Key.Format], pt)
		case steptime.RoutingBalanced:
			balanced[pt.Key.Format] = append(balanced[pt.Key.Format], pt)
		}
	}
	formats := make([]string, 0, len(byFormat))
	for f := range byFormat {
		formats = append(formats, f)
	}
	sort.Strings(formats)
	for _, f := range formats {
		fit, hold := splitMoE(byFormat[f])
		scope := "held-out model shapes"
		if len(fit) == 0 || len(hold) == 0 {
			fit, hold = byFormat[f], byFormat[f]
			scope = "in-sample (one model shape)"
		}
		p.MoE[f] = fitMoEFormat(hw, p, f, moeCases(fit))
		predict := func(c moeCase) float64 { return predictMoE(p, hw, c) }
		if scope != "held-out model shapes" {
			res.Errors = append(res.Errors, errorsOf("moe", f+" "+Routing, scope, moeCases(hold), predict, moeSec))
		} else {
			res.Errors = append(res.Errors, errorsOf("moe", f+" "+Routing, ScopeHeldOut, moeCases(hold), predict, moeSec))
		}
		if b := balanced[f]; len(b) > 0 {
			_, bh := splitMoE(b)
			if len(bh) == 0 {
				bh = b
			}
			res.Errors = append(res.Errors, errorsOf("moe", f+" balanced", "held-out model shapes, balanced routing (not fitted)", moeCases(bh), predict, moeSec))
		}
	}
}

func fitMoEFormat(hw steptime.Hardware, p *steptime.Profile, f string, pts []moeCase) steptime.MoECoeffs {
	params := []Param{{"efficiency", 0.02, 1, 0}, {"bandwidth_efficiency", 0.02, 1, 0}, {"overhead_us", 0, 1000, 1}, {"k_half", 0, 8192, 1}}
	q := p.Clone()
	var best steptime.MoECoeffs
	bestL := math.Inf(1)
	x0 := []float64{0.5, 0.8, 20, 128}
	for _, bm := range moeBlockChoices {
		coeffs := func(x []float64) steptime.MoECoeffs {
			return steptime.MoECoeffs{Efficiency: x[0], BandwidthEfficiency: x[1], OverheadUS: x[2], KHalf: x[3], BlockTokens: bm}
		}
		x, l := fitPoints(pts, params, x0, func(x []float64) { q.MoE[f] = coeffs(x) },
			func(c moeCase) float64 { return predictMoE(&q, hw, c) }, moeSec)
		if l < bestL-1e-9 {
			best, bestL, x0 = coeffs(x), l, x
		}
	}
	return steptime.MoECoeffs{Efficiency: round4(best.Efficiency), BandwidthEfficiency: round4(best.BandwidthEfficiency),
		OverheadUS: round4(best.OverheadUS), KHalf: round4(best.KHalf), BlockTokens: best.BlockTokens}
}
