package kernelfit

import "math"

// Param is one coefficient a fit may move, within [Lo, Hi].
type Param struct {
	Name   string
	Lo, Hi float64
	// Offset makes the search step in ln(x + Offset): 0 for fractions and
	// rates, about one unit for microsecond and token coefficients that
	// may be 0.
	Offset float64
}

// Minimize is a deterministic compass search: it tries each coordinate
// one step up and down (in ln(x + offset)), keeps any improvement, and
// halves the step when none helps, until the step is below 1e-3 (a
// relative change of 0.1%) or the evaluation budget is spent. It needs no
// gradients, so the loss may have kinks (a roofline's max, absolute
// errors).
func Minimize(params []Param, x0 []float64, f func([]float64) float64) ([]float64, float64) {
	return MinimizeTo(params, x0, f, 1e-3, 4000)
}

// MinimizeTo is Minimize stopping at step minStep (in ln(x + offset)) or
// after maxEvals evaluations, for losses that are costly to evaluate.
func MinimizeTo(params []Param, x0 []float64, f func([]float64) float64, minStep float64, maxEvals int) ([]float64, float64) {
	n := len(params)
	to := func(i int, x float64) float64 { return math.Log(x + params[i].Offset) }
	from := func(i int, u float64) float64 {
		x := math.Exp(u) - params[i].Offset
		return math.Min(math.Max(x, params[i].Lo), params[i].Hi)
	}
	u := make([]float64, n)
	x := make([]float64, n)
	for i := range params {
		x[i] = math.Min(math.Max(x0[i], params[i].Lo), params[i].Hi)
		if x[i]+params[i].Offset <= 0 {
			x[i] = params[i].Lo + 1e-9
		}
		u[i] = to(i, x[i])
	}
	best := f(x)
	trial := make([]float64, n)
	evals := 0
	for step := 0.5; step > minStep && evals < maxEvals; {
		improved := false
		for i := range n {
			for _, d := range []float64{step, -step} {
				copy(trial, x)
				trial[i] = from(i, u[i]+d)
				if trial[i] == x[i] {
					continue
				}
				evals++
				if v := f(trial); v < best-1e-12 {
					best = v
					x[i] = trial[i]
					u[i] = to(i, x[i])
					improved = true
					break
				}
			}
		}
		if !improved {
			step /= 2
		}
	}
	return x, best
}

// logLoss is the mean absolute log error of pred against meas.
func logLoss(pred, meas []float64) float64 {
	var s float64
	for i := range pred {
		if !(pred[i] > 0) {
			return math.Inf(1)
		}
		s += math.Abs(math.Log(pred[i] / meas[i]))
	}
	return s / float64(len(pred))
}
