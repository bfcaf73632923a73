package stats

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestHistogramQuantilesMatchSample checks the 0.1% accuracy promise
// against exact quantiles of the same sample.
func TestHistogramQuantilesMatchSample(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, dist := range []struct {
		name string
		draw func() float64
	}{
		{"lognormal ms", func() float64 { return math.Exp(r.NormFloat64()*1.2 + 3) }},
		{"uniform", func() float64 { return 5 + 10*r.Float64() }},
		{"bimodal", func() float64 {
			if r.IntN(10) == 0 {
				return 300 + r.Float64()
			}
			return 7 + r.Float64()
		}},
	} {
		t.Run(dist.name, func(t *testing.T) {
			h := NewHistogram()
			xs := make([]float64, 50_000)
			for i := range xs {
				xs[i] = dist.draw()
				h.Add(xs[i], 1)
			}
			exact := Summarize(xs)
			got := h.Summary()
			for _, q := range QuantileNames {
				want, _ := exact.At(q)
				have, _ := got.At(q)
				if rel := math.Abs(have-want) / want; rel > 0.002 {
					t.Errorf("%s: histogram %.6g, exact %.6g (%.3f%% off)", q, have, want, 100*rel)
				}
			}
			if got.Count != exact.Count {
				t.Errorf("count %d, want %d", got.Count, exact.Count)
			}
		})
	}
}

func TestHistogramWeightsAndMerge(t *testing.T) {
	a, b := NewHistogram(), NewHistogram()
	a.Add(10, 3)
	b.Add(20, 1)
	a.Merge(b)
	if a.Count() != 4 || math.Abs(a.Mean()-12.5) > 1e-9 || a.Max() != 20 {
		t.Fatalf("count %d mean %g max %g", a.Count(), a.Mean(), a.Max())
	}
	if q := a.Quantile(0.5); math.Abs(q-10) > 0.02 {
		t.Errorf("p50 %g, want 10", q)
	}
	e := NewHistogram()
	if e.Summary() != (Summary{}) {
		t.Errorf("empty histogram summary %+v", e.Summary())
	}
	e.Add(math.NaN(), 1)
	e.Add(5, 0)
	if e.Count() != 0 {
		t.Errorf("NaN or zero weight counted")
	}
}

func TestQuantileInterpolates(t *testing.T) {
	xs := []float64{1, 2, 3, 4}
	for _, c := range []struct{ q, want float64 }{{0, 1}, {0.5, 2.5}, {1, 4}, {0.9, 3.7}} {
		if got := Quantile(xs, c.q); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("Quantile(%v) = %g, want %g", c.q, got, c.want)
		}
	}
}

func BenchmarkHistogramAdd(b *testing.B) {
	h := NewHistogram()
	v := 7.3
	for b.Loop() {
		h.Add(v, 1)
		v += 0.001
	}
}
