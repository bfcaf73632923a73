package workload

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

func gaps(t *testing.T, typ string, rate, cv float64, n int, seed uint64) []float64 {
	t.Helper()
	ia, err := NewInterarrival(typ, rate, cv)
	if err != nil {
		t.Fatalf("NewInterarrival(%s, %g, %g): %v", typ, rate, cv, err)
	}
	r := rand.New(rand.NewPCG(seed, 7))
	out := make([]float64, n)
	for i := range out {
		out[i] = ia.Next(r)
	}
	return out
}

func TestInterarrivalMeanAndCV(t *testing.T) {
	const n = 100_000
	tests := []struct {
		typ      string
		rate, cv float64
		wantCV   float64
	}{
		{ArrivalPoisson, 10, 0, 1},
		{ArrivalPoisson, 0.5, 0, 1},
		{ArrivalGamma, 10, 1, 1},
		{ArrivalGamma, 10, 0.5, 0.5},
		{ArrivalGamma, 4, 2, 2},
		{ArrivalGamma, 100, 0.1, 0.1},
		{ArrivalGamma, 1, 3, 3},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s rate %g cv %g", tt.typ, tt.rate, tt.wantCV), func(t *testing.T) {
			xs := gaps(t, tt.typ, tt.rate, tt.cv, n, 1)
			var mean, v float64
			for _, x := range xs {
				if !(x >= 0) || math.IsInf(x, 0) {
					t.Fatalf("gap %g", x)
				}
				mean += x
			}
			mean /= n
			for _, x := range xs {
				v += (x - mean) * (x - mean)
			}
			cv := math.Sqrt(v/(n-1)) / mean
			want := 1 / tt.rate
			if tol := 5 * tt.wantCV * want / math.Sqrt(n); math.Abs(mean-want) > tol {
				t.Errorf("mean gap %g, want %g ± %g", mean, want, tol)
			}
			// The relative standard error of a sample stddev is about
			// sqrt((kurtosis-1)/(4n)), with kurtosis 3 + 6cv² for a gamma (and an
			// exponential, cv 1); the mean's adds cv/sqrt(n). Allow 6 of them.
			relSE := math.Sqrt((2+6*tt.wantCV*tt.wantCV)/(4*n)) + tt.wantCV/math.Sqrt(n)
			tol := 6 * relSE * tt.wantCV
			if math.Abs(cv-tt.wantCV) > tol {
				t.Errorf("cv %g, want %g ± %g", cv, tt.wantCV, tol)
			}
		})
	}
}

func TestInterarrivalConstantIsExact(t *testing.T) {
	for _, g := range gaps(t, ArrivalConstant, 8, 0, 1000, 1) {
		if g != 0.125 {
			t.Fatalf("gap %g, want exactly 0.125", g)
		}
	}
}

func TestInterarrivalSameSeedSameSequence(t *testing.T) {
	for _, typ := range []string{ArrivalPoisson, ArrivalGamma} {
		a, b := gaps(t, typ, 3, 0.4, 1000, 42), gaps(t, typ, 3, 0.4, 1000, 42)
		c := gaps(t, typ, 3, 0.4, 1000, 43)
		same := true
		for i := range a {
			if a[i] != b[i] {
				t.Fatalf("%s: draw %d differs for one seed", typ, i)
			}
			same = same && a[i] == c[i]
		}
		if same {
			t.Errorf("%s: seeds 42 and 43 gave the same sequence", typ)
		}
	}
}

func TestNewInterarrivalErrors(t *testing.T) {
	tests := []struct {
		name     string
		typ      string
		rate, cv float64
	}{
		{"rate 0", ArrivalPoisson, 0, 0},
		{"rate NaN", ArrivalConstant, math.NaN(), 0},
		{"rate inf", ArrivalPoisson, math.Inf(1), 0},
		{"gamma cv 0", ArrivalGamma, 1, 0},
		{"gamma cv inf", ArrivalGamma, 1, math.Inf(1)},
		{"gamma cv 1e-300", ArrivalGamma, 1, 1e-300},
		{"gamma scale past float64", ArrivalGamma, 1e-300, 1e6},
		{"closed loop", ArrivalClosedLoop, 1, 0},
		{"unknown", "bursty", 1, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := NewInterarrival(tt.typ, tt.rate, tt.cv); err == nil {
				t.Fatal("no error")
			}
		})
	}
}

func TestArrivalSpecValidate(t *testing.T) {
	tests := []struct {
		name      string
		spec      ArrivalSpec
		wantField string
	}{
		{"poisson", ArrivalSpec{Type: "poisson", RateRPS: 10}, ""},
		{"constant", ArrivalSpec{Type: "constant", RateRPS: 0.1}, ""},
		{"gamma", ArrivalSpec{Type: "gamma", RateRPS: 10, CV: 2}, ""},
		{"closed loop", ArrivalSpec{Type: "closed_loop", Concurrency: 8, ThinkTimeMS: 500}, ""},
		{"closed loop no think", ArrivalSpec{Type: "closed_loop", Concurrency: 1}, ""},
		{"no type", ArrivalSpec{RateRPS: 1}, "a.type"},
		{"unknown type", ArrivalSpec{Type: "burst", RateRPS: 1}, "a.type"},
		{"poisson rate 0", ArrivalSpec{Type: "poisson"}, "a.rate_rps"},
		{"poisson rate < 0", ArrivalSpec{Type: "poisson", RateRPS: -1}, "a.rate_rps"},
		{"poisson with cv", ArrivalSpec{Type: "poisson", RateRPS: 1, CV: 2}, "a.cv"},
		{"poisson with concurrency", ArrivalSpec{Type: "poisson", RateRPS: 1, Concurrency: 2}, "a.concurrency"},
		{"gamma cv 0", ArrivalSpec{Type: "gamma", RateRPS: 1}, "a.cv"},
		{"gamma cv NaN", ArrivalSpec{Type: "gamma", RateRPS: 1, CV: math.NaN()}, "a.cv"},
		{"gamma cv 1e-300 (shape 1/cv² overflows)", ArrivalSpec{Type: "gamma", RateRPS: 1, CV: 1e-300}, "a.cv"},
		{"gamma cv 1e7", ArrivalSpec{Type: "gamma", RateRPS: 1, CV: 1e7}, "a.cv"},
		{"gamma cv 1e6", ArrivalSpec{Type: "gamma", RateRPS: 1, CV: 1e6}, ""},
		{"closed loop concurrency 0", ArrivalSpec{Type: "closed_loop"}, "a.concurrency"},
		{"closed loop think < 0", ArrivalSpec{Type: "closed_loop", Concurrency: 1, ThinkTimeMS: -1}, "a.think_time_ms"},
		{"closed loop with rate", ArrivalSpec{Type: "closed_loop", Concurrency: 1, RateRPS: 3}, "a.rate_rps"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkFieldError(t, tt.spec.Validate("a"), tt.wantField)
		})
	}
}
