package kernelfit

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/headroom-sim/headroom/hardware"
	"github.com/headroom-sim/headroom/sim/stats"
	"github.com/headroom-sim/headroom/sim/steptime"
)

// MinGEMMDim is the smallest n and k of the GEMM sites the fit uses and
// the accuracy bars judge: every projection of a decoder at TP ≤ 8 is at
// least this wide (the narrowest, gpt-oss's fused QKV at TP8, is 640; a
// 7B model's KV projection at TP8 is 256). Smaller sites, dominated by
// launch and tail effects, are reported apart.
const MinGEMMDim = 256

// Routing is the measured MoE routing distribution the fused-MoE formula
// is fitted to and judged on (AIConfigurator's default for MoE models),
// the table backend's default too.
const Routing = steptime.RoutingPowerLaw

// Scopes of the error rows.
const (
	ScopeHeldOut = "held-out"
	// ScopeNotJudged marks a table that fails a consistency check: its
	// errors are reported, not judged.
	ScopeNotJudged = "not judged"
)

// Result is one GPU's fit: the profile and the held-out errors.
type Result struct {
	System  string
	GPU     string
	Profile steptime.Profile
	Errors  []ErrorRow
	// Notes say which coefficients came from elsewhere and why.
	Notes []string
}

// ErrorRow is the error of the fitted formula (or the table backend's
// interpolation) on one op group's held-out points.
type ErrorRow struct {
	Op     string // gemm, context_attention, decode_attention, moe, all_reduce, nccl
	Format string // kernel format, KV dtype, routing or collective
	// Scope says which points: ScopeHeldOut (judged), or a note such as
	// "held-out, n or k < 256" or ScopeNotJudged with the reason.
	Scope     string
	N         int
	MedianAPE float64 // %
	P90APE    float64 // %
	Bias      float64 // signed median, % (positive: predicted too slow)
}

// Judged reports whether the row is one the accuracy bars apply to.
func (r ErrorRow) Judged() bool { return r.Scope == ScopeHeldOut && r.N > 0 }

// Fit fits every coefficient of base the tables of db determine, for GPU
// g, and returns the fitted profile with its held-out errors.
// Coefficients no table determines (CPU costs, elementwise kernels) keep
// base's values, and so do those of a table that fails its consistency
// check (see checkHeads): pass a sibling GPU's fitted profile as base to
// inherit its kernel coefficients there.
func Fit(db *steptime.KernelDB, g *hardware.GPU, base steptime.Profile) (*Result, error) {
	hw := steptime.NewHardware(g)
	p := base.Clone()
	p.Scale = steptime.Scales{}
	// Host costs are not kernel coefficients: DefaultProfile lays the
	// fitted host constants (steptime.HostCosts) over the kernel profile.
	p.CPU, p.CPUV0, p.Frontend = steptime.CPUCoeffs{}, steptime.CPUCoeffs{}, steptime.FrontendCoeffs{}
	res := &Result{System: db.System, GPU: g.ID}
	if err := fitGEMM(db, hw, &p, res); err != nil {
		return nil, err
	}
	fitAttention(db, hw, &p, base, res)
	fitMoE(db, hw, &p, res)
	fitComm(db, hw, &p, res)
	p.Source = "fitted to measured kernels: " + db.System
	if len(res.Notes) > 0 {
		p.Source += " (" + strings.Join(res.Notes, "; ") + ")"
	}
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("fitted profile: %w", err)
	}
	res.Profile = p
	return res, nil
}

func summarize(op, format, scope string, pred, meas []float64) ErrorRow {
	r := ErrorRow{Op: op, Format: format, Scope: scope, N: len(pred)}
	if len(pred) == 0 {
		return r
	}
	ape := make([]float64, len(pred))
	signed := make([]float64, len(pred))
	for i := range pred {
		signed[i] = 100 * (pred[i]/meas[i] - 1)
		ape[i] = math.Abs(signed[i])
	}
	slices.Sort(ape)
	slices.Sort(signed)
	r.MedianAPE, r.P90APE, r.Bias = stats.Quantile(ape, 0.5), stats.Quantile(ape, 0.9), stats.Quantile(signed, 0.5)
	return r
}

// round4 keeps four significant digits: fitted coefficients are stored
// and documented at that precision, so a refit on another machine gives
// the same file.
func round4(x float64) float64 {
	if x == 0 || math.IsNaN(x) || math.IsInf(x, 0) {
		return x
	}
	e := math.Pow(10, 3-math.Floor(math.Log10(math.Abs(x))))
	return math.Round(x*e) / e
}

func every[T any](xs []T, n int) []T {
	if n <= 1 {
		return xs
	}
	out := make([]T, 0, len(xs)/n+1)
	for i, x := range xs {
		if i%n == 0 {
			out = append(out, x)
		}
	}
	return out
}

// fitPoints minimises the log error over pts of predict after set(x),
// from x0, and returns the coefficients and the loss.
func fitPoints[T any](pts []T, params []Param, x0 []float64, set func(x []float64), predict func(T) float64, measured func(T) float64) ([]float64, float64) {
	meas := make([]float64, len(pts))
	for i, pt := range pts {
		meas[i] = measured(pt)
	}
	pred := make([]float64, len(pts))
	loss := func(x []float64) float64 {
		set(x)
		for i, pt := range pts {
			pred[i] = predict(pt)
		}
		return logLoss(pred, meas)
	}
	return Minimize(params, x0, loss)
}

// errorsOf summarises predict against the measurements of pts.
func errorsOf[T any](op, format, scope string, pts []T, predict func(T) float64, measured func(T) float64) ErrorRow {
	pred, meas := make([]float64, len(pts)), make([]float64, len(pts))
	for i, pt := range pts {
		pred[i], meas[i] = predict(pt), measured(pt)
	}
	return summarize(op, format, scope, pred, meas)
}
