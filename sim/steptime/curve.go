package steptime

import (
	"math"
	"sort"
)

// Curve is a measured latency as a function of one size (tokens, bytes,
// batch), sorted by X. Latencies are in seconds.
type Curve struct {
	X, Y []float64
}

// add appends a point; finish sorts and merges repeats.
func (c *Curve) add(x, y float64) {
	c.X = append(c.X, x)
	c.Y = append(c.Y, y)
}

// finish sorts the points by X and keeps the fastest of repeated
// measurements of one X: repeats of a kernel timing differ by interference
// from other work on the machine, which only ever adds time.
func (c *Curve) finish() {
	idx := make([]int, len(c.X))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return c.X[idx[a]] < c.X[idx[b]] })
	xs, ys := make([]float64, 0, len(idx)), make([]float64, 0, len(idx))
	for _, i := range idx {
		if n := len(xs); n > 0 && xs[n-1] == c.X[i] {
			ys[n-1] = math.Min(ys[n-1], c.Y[i])
			continue
		}
		xs, ys = append(xs, c.X[i]), append(ys, c.Y[i])
	}
	c.X, c.Y = xs, ys
}

// Len is the number of points.
func (c *Curve) Len() int { return len(c.X) }

// bracket returns i such that X[i] ≤ x ≤ X[i+1] and the weight of X[i+1]
// (0 at X[i], 1 at X[i+1]), for x inside the range; ok is false outside.
func (c *Curve) bracket(x float64) (i int, w float64, ok bool) {
	n := len(c.X)
	if n == 0 || x < c.X[0] || x > c.X[n-1] {
		return 0, 0, false
	}
	if n == 1 {
		return 0, 0, true
	}
	j := sort.SearchFloat64s(c.X, x) // first X[j] >= x
	if j == 0 {
		return 0, 0, true
	}
	if c.X[j] == x {
		return j - 1, 1, true
	}
	lo, hi := c.X[j-1], c.X[j]
	return j - 1, (x - lo) / (hi - lo), true
}

// At is the latency at x. Inside the measured range it interpolates
// linearly between the neighbouring points: on latency when sol is nil, on
// utilisation (sol(x), the op's ideal time at x, over the measured time)
// otherwise, which follows a quadratic attention or a compute-bound GEMM
// between grid points where latency itself would not. Below the range the
// smallest measurement holds (a kernel is not faster on less work than its
// fixed cost); above it the last point's utilisation carries to x (nil sol:
// proportional scaling): a kernel keeps the efficiency it reached at the
// edge of the measurements.
func (c *Curve) At(x float64, sol func(x float64) float64) float64 {
	n := len(c.X)
	if n == 0 {
		return math.NaN()
	}
	if i, w, ok := c.bracket(x); ok {
		if w == 0 {
			return c.Y[i]
		}
		if w == 1 {
			return c.Y[i+1]
		}
		if sol != nil {
			s0, s1, sx := sol(c.X[i]), sol(c.X[i+1]), sol(x)
			if s0 > 0 && s1 > 0 && sx > 0 {
				u := (s0/c.Y[i])*(1-w) + (s1/c.Y[i+1])*w
				return sx / u
			}
		}
		return c.Y[i]*(1-w) + c.Y[i+1]*w
	}
	if x < c.X[0] {
		return c.Y[0]
	}
	x0, y0 := c.X[n-1], c.Y[n-1]
	if sol == nil {
		return y0 * x / x0
	}
	if s0 := sol(x0); s0 > 0 {
		return y0 * sol(x) / s0
	}
	return y0
}
