package steptime

import (
	"math"
	"slices"
	"testing"
)

func TestCurveFinishKeepsTheFastestRepeat(t *testing.T) {
	var c Curve
	for _, p := range [][2]float64{{3, 5}, {1, 2}, {3, 4}, {2, 3}, {1, 2.5}} {
		c.add(p[0], p[1])
	}
	c.finish()
	if !slices.Equal(c.X, []float64{1, 2, 3}) || !slices.Equal(c.Y, []float64{2, 3, 4}) {
		t.Errorf("finished curve %v → %v, want [1 2 3] → [2 3 4]", c.X, c.Y)
	}
}

func TestCurveAtByHand(t *testing.T) {
	c := Curve{X: []float64{1, 2, 3}, Y: []float64{2, 3, 4}}
	square := func(x float64) float64 { return x * x }
	for _, p := range []struct {
		name string
		x    float64
		sol  func(float64) float64
		want float64
	}{
		{"measured point", 2, nil, 3},
		{"last point", 3, square, 4},
		{"linear between", 1.5, nil, 2.5},
		// On utilisation: at 2.5 between (2, 3) and (3, 4) with ideal x²:
		// utilisations 4/3 and 9/4, halfway 43/24; 6.25 / (43/24) = 150/43.
		{"utilisation between", 2.5, square, 150.0 / 43},
		{"below the range", 0.5, square, 2}, // the smallest measurement holds
		// Above: proportional without sol (4·6/3), the last utilisation with
		// it (4·36/9).
		{"above, proportional", 6, nil, 8},
		{"above, utilisation", 6, square, 16},
	} {
		if got := c.At(p.x, p.sol); !within(got, p.want, 1e-15) {
			t.Errorf("%s: At(%g) = %g, want %g", p.name, p.x, got, p.want)
		}
	}
	if !math.IsNaN((&Curve{}).At(1, nil)) {
		t.Error("an empty curve has a value")
	}
	one := Curve{X: []float64{4}, Y: []float64{7}}
	if one.At(4, nil) != 7 || one.At(1, nil) != 7 || one.At(8, nil) != 14 {
		t.Errorf("one point: %g, %g, %g; want 7, 7, 14", one.At(4, nil), one.At(1, nil), one.At(8, nil))
	}
	if !c.has(2) || c.has(2.5) || c.has(0) {
		t.Error("has: want the measured xs only")
	}
}

// TestCurveAtMonotonic: a curve of rising latencies interpolates to
// rising latencies, on latency and on a rising ideal.
func TestCurveAtMonotonic(t *testing.T) {
	c := Curve{X: []float64{1, 8, 64, 512}, Y: []float64{10, 12, 40, 300}}
	ideal := func(x float64) float64 { return 0.5 * x }
	for _, sol := range []func(float64) float64{nil, ideal} {
		prev := 0.0
		for x := 0.5; x < 4096; x *= 1.1 {
			y := c.At(x, sol)
			if y < prev {
				t.Errorf("At(%g) = %g, below the previous %g", x, y, prev)
			}
			prev = y
		}
	}
}
