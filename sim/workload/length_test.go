package workload

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"
)

const nDraws = 200_000

// draw returns n samples of spec from a fixed seed.
func draw(t *testing.T, s LengthSpec, empirical []int, n int) []int {
	t.Helper()
	smp, err := NewLengthSampler(s, "x", empirical)
	if err != nil {
		t.Fatalf("NewLengthSampler(%+v): %v", s, err)
	}
	r := rand.New(rand.NewPCG(1, 2))
	out := make([]int, n)
	for i := range out {
		out[i] = smp.Sample(r)
	}
	return out
}

func meanSD(xs []int) (mean, sd float64) {
	for _, x := range xs {
		mean += float64(x)
	}
	mean /= float64(len(xs))
	for _, x := range xs {
		d := float64(x) - mean
		sd += d * d
	}
	return mean, math.Sqrt(sd / float64(len(xs)-1))
}

// Unclamped distributions: the sample mean and spread match the spec, and
// ExpectedValue matches the spec's mean.
func TestLengthSamplerMoments(t *testing.T) {
	tests := []struct {
		name     string
		spec     LengthSpec
		wantMean float64
		wantSD   float64 // of the rounded samples
	}{
		{"fixed", LengthSpec{Type: LengthFixed, Value: 512}, 512, 0},
		{"uniform", LengthSpec{Type: LengthUniform, Min: 10, Max: 1000}, 505, math.Sqrt((991*991 - 1) / 12.0)},
		{"uniform one value", LengthSpec{Type: LengthUniform, Min: 7, Max: 7}, 7, 0},
		{"normal", LengthSpec{Type: LengthNormal, Mean: 1000, Stddev: 200}, 1000, math.Sqrt(200*200 + 1.0/12)},
		{"normal narrow", LengthSpec{Type: LengthNormal, Mean: 300, Stddev: 5}, 300, math.Sqrt(25 + 1.0/12)},
		{"lognormal", LengthSpec{Type: LengthLognormal, Mean: 800, Stddev: 400}, 800, math.Sqrt(400*400 + 1.0/12)},
		{"lognormal cv 1", LengthSpec{Type: LengthLognormal, Mean: 2000, Stddev: 2000}, 2000, 2000},
		{"buckets", LengthSpec{Type: LengthBuckets, Buckets: []Bucket{{Weight: 3, Min: 100, Max: 100}, {Weight: 1, Min: 1000, Max: 1000}}}, 325, math.Sqrt(0.75 * 0.25 * 900 * 900)},
		{"buckets with a zero weight", LengthSpec{Type: LengthBuckets, Buckets: []Bucket{{Weight: 0, Min: 5, Max: 5}, {Weight: 1, Min: 1, Max: 9}, {Weight: 0, Min: 50, Max: 50}}}, 5, math.Sqrt(80 / 12.0)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			xs := draw(t, tt.spec, nil, nDraws)
			mean, sd := meanSD(xs)
			// CLT: the sample mean is within 5 standard errors.
			if tol := 5*tt.wantSD/math.Sqrt(nDraws) + 1e-9; math.Abs(mean-tt.wantMean) > tol {
				t.Errorf("sample mean %.3f, want %.3f ± %.3f", mean, tt.wantMean, tol)
			}
			if math.Abs(sd-tt.wantSD) > 0.02*tt.wantSD+1e-9 {
				t.Errorf("sample stddev %.3f, want %.3f ± 2%%", sd, tt.wantSD)
			}
			if ev := tt.spec.ExpectedValue(nil); math.Abs(ev-tt.wantMean) > 1e-6*tt.wantMean {
				t.Errorf("ExpectedValue = %.6f, want %.6f", ev, tt.wantMean)
			}
		})
	}
}

// Clamped and discretised distributions: every sample is within the
// clamps and >= 1, and the sample mean matches ExpectedValue.
func TestLengthSamplerClamps(t *testing.T) {
	etalon := []int{74, 290, 1402, 2497, 41, 238, 1045, 2053, 3026, 3455, 3901, 4500, 5346, 5733, 6139, 7104, 308}
	tests := []struct {
		name      string
		spec      LengthSpec
		empirical []int
		lo, hi    int
	}{
		{"normal clamped both sides", LengthSpec{Type: LengthNormal, Mean: 500, Stddev: 300, Min: 200, Max: 700}, nil, 200, 700},
		{"normal below 1 raised to 1", LengthSpec{Type: LengthNormal, Mean: 3, Stddev: 10}, nil, 1, MaxTokens},
		{"normal stddev 0", LengthSpec{Type: LengthNormal, Mean: 99.6}, nil, 100, 100},
		{"normal min only", LengthSpec{Type: LengthNormal, Mean: 100, Stddev: 50, Min: 80}, nil, 80, MaxTokens},
		{"lognormal clamped", LengthSpec{Type: LengthLognormal, Mean: 1000, Stddev: 3000, Min: 16, Max: 4096}, nil, 16, 4096},
		{"lognormal max only", LengthSpec{Type: LengthLognormal, Mean: 1000, Stddev: 1000, Max: 1500}, nil, 1, 1500},
		{"empirical", LengthSpec{Type: LengthEmpirical, File: "f.csv", Column: "c"}, etalon, 41, 7104},
		{"empirical clamped", LengthSpec{Type: LengthEmpirical, File: "f.csv", Column: "c", Min: 100, Max: 4000}, etalon, 100, 4000},
		{"empirical zeros raised to 1", LengthSpec{Type: LengthEmpirical, File: "f.csv", Column: "c"}, []int{0, -5, 3}, 1, 3},
		{"buckets", LengthSpec{Type: LengthBuckets, Buckets: []Bucket{{Weight: 0.7, Min: 1, Max: 128}, {Weight: 0.3, Min: 1024, Max: 4096}}}, nil, 1, 4096},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			xs := draw(t, tt.spec, tt.empirical, nDraws)
			for i, x := range xs {
				if x < tt.lo || x > tt.hi || x < 1 {
					t.Fatalf("sample %d = %d, outside [%d, %d]", i, x, tt.lo, tt.hi)
				}
			}
			mean, sd := meanSD(xs)
			want := tt.spec.ExpectedValue(tt.empirical)
			// 5 standard errors, plus 0.1% for the rounding approximation of ExpectedValue.
			if tol := 5*sd/math.Sqrt(nDraws) + 1e-3*want + 1e-9; math.Abs(mean-want) > tol {
				t.Errorf("sample mean %.3f, ExpectedValue %.3f (tolerance %.3f)", mean, want, tol)
			}
		})
	}
}

func TestLengthSamplerSameSeedSameSequence(t *testing.T) {
	specs := []LengthSpec{
		{Type: LengthUniform, Min: 1, Max: 100},
		{Type: LengthNormal, Mean: 100, Stddev: 30},
		{Type: LengthLognormal, Mean: 100, Stddev: 30},
		{Type: LengthEmpirical, File: "f", Column: "c"},
		{Type: LengthBuckets, Buckets: []Bucket{{Weight: 1, Min: 1, Max: 10}, {Weight: 2, Min: 20, Max: 30}}},
	}
	for _, s := range specs {
		t.Run(s.Type, func(t *testing.T) {
			a := draw(t, s, []int{5, 6, 7, 8}, 1000)
			b := draw(t, s, []int{5, 6, 7, 8}, 1000)
			for i := range a {
				if a[i] != b[i] {
					t.Fatalf("draw %d differs: %d vs %d", i, a[i], b[i])
				}
			}
		})
	}
}

func TestLengthSpecValidate(t *testing.T) {
	tests := []struct {
		name      string
		spec      LengthSpec
		wantField string // "" = valid
	}{
		{"fixed", LengthSpec{Type: "fixed", Value: 1}, ""},
		{"uniform", LengthSpec{Type: "uniform", Min: 1, Max: 1}, ""},
		{"normal with clamps", LengthSpec{Type: "normal", Mean: 10, Stddev: 1, Min: 5, Max: 20}, ""},
		{"lognormal stddev 0", LengthSpec{Type: "lognormal", Mean: 10}, ""},
		{"empirical", LengthSpec{Type: "empirical", File: "a.csv", Column: "n"}, ""},
		{"buckets", LengthSpec{Type: "buckets", Buckets: []Bucket{{Weight: 1, Min: 1, Max: 2}}}, ""},
		{"no type", LengthSpec{Value: 5}, "w.in.type"},
		{"unknown type", LengthSpec{Type: "gaussian"}, "w.in.type"},
		{"fixed 0", LengthSpec{Type: "fixed"}, "w.in.value"},
		{"fixed huge", LengthSpec{Type: "fixed", Value: MaxTokens + 1}, "w.in.value"},
		{"fixed with mean", LengthSpec{Type: "fixed", Value: 5, Mean: 500}, "w.in.mean"},
		{"uniform min 0", LengthSpec{Type: "uniform", Max: 5}, "w.in.min"},
		{"uniform max < min", LengthSpec{Type: "uniform", Min: 5, Max: 4}, "w.in.max"},
		{"uniform with stddev", LengthSpec{Type: "uniform", Min: 1, Max: 4, Stddev: 1}, "w.in.stddev"},
		{"normal mean 0", LengthSpec{Type: "normal", Stddev: 1}, "w.in.mean"},
		{"normal mean below a token", LengthSpec{Type: "normal", Mean: 0.5}, "w.in.mean"},
		{"lognormal mean 1e-320 (its sigma was NaN)", LengthSpec{Type: "lognormal", Mean: 1e-320, Stddev: 1}, "w.in.mean"},
		{"lognormal stddev past the token range", LengthSpec{Type: "lognormal", Mean: 5, Stddev: 1e300}, "w.in.stddev"},
		{"normal mean NaN", LengthSpec{Type: "normal", Mean: math.NaN()}, "w.in.mean"},
		{"normal stddev < 0", LengthSpec{Type: "normal", Mean: 5, Stddev: -1}, "w.in.stddev"},
		{"normal stddev inf", LengthSpec{Type: "normal", Mean: 5, Stddev: math.Inf(1)}, "w.in.stddev"},
		{"normal max < min", LengthSpec{Type: "normal", Mean: 5, Min: 10, Max: 5}, "w.in.max"},
		{"lognormal min < 0", LengthSpec{Type: "lognormal", Mean: 5, Min: -1}, "w.in.min"},
		{"lognormal with value", LengthSpec{Type: "lognormal", Mean: 5, Value: 5}, "w.in.value"},
		{"empirical no file", LengthSpec{Type: "empirical", Column: "n"}, "w.in.file"},
		{"empirical no column", LengthSpec{Type: "empirical", File: "a.csv"}, "w.in.column"},
		{"empirical with buckets", LengthSpec{Type: "empirical", File: "a", Column: "c", Buckets: []Bucket{{}}}, "w.in.buckets"},
		{"buckets none", LengthSpec{Type: "buckets"}, "w.in.buckets"},
		{"bucket weight < 0", LengthSpec{Type: "buckets", Buckets: []Bucket{{Weight: 1, Min: 1, Max: 2}, {Weight: -1, Min: 1, Max: 2}}}, "w.in.buckets[1].weight"},
		{"bucket min 0", LengthSpec{Type: "buckets", Buckets: []Bucket{{Weight: 1, Max: 2}}}, "w.in.buckets[0].min"},
		{"bucket max < min", LengthSpec{Type: "buckets", Buckets: []Bucket{{Weight: 1, Min: 3, Max: 2}}}, "w.in.buckets[0].max"},
		{"bucket weights all 0", LengthSpec{Type: "buckets", Buckets: []Bucket{{Min: 1, Max: 2}}}, "w.in.buckets"},
		{"buckets with min", LengthSpec{Type: "buckets", Min: 3, Buckets: []Bucket{{Weight: 1, Min: 1, Max: 2}}}, "w.in.min"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkFieldError(t, tt.spec.Validate("w.in"), tt.wantField)
		})
	}
}

// checkFieldError checks that err is nil when wantField is empty, and a
// *FieldError naming wantField otherwise.
func checkFieldError(t *testing.T, err error, wantField string) {
	t.Helper()
	if wantField == "" {
		if err != nil {
			t.Fatalf("unexpected error: %v", err)
		}
		return
	}
	var fe *FieldError
	if !errors.As(err, &fe) {
		t.Fatalf("error %v (%T), want a *FieldError for %s", err, err, wantField)
	}
	if fe.Field != wantField || fe.Reason == "" {
		t.Fatalf("error %q names field %q, want %q", fe, fe.Field, wantField)
	}
}

func TestNewLengthSamplerErrors(t *testing.T) {
	_, err := NewLengthSampler(LengthSpec{Type: LengthEmpirical, File: "a.csv", Column: "n"}, "workload.input_tokens", nil)
	checkFieldError(t, err, "workload.input_tokens.file")
	_, err = NewLengthSampler(LengthSpec{Type: LengthNormal, Mean: 10, Stddev: -1}, "workload.output_tokens", nil)
	checkFieldError(t, err, "workload.output_tokens.stddev")
}

func TestExpectedValueEdges(t *testing.T) {
	tests := []struct {
		name      string
		spec      LengthSpec
		empirical []int
		want      float64
	}{
		{"empirical without values", LengthSpec{Type: LengthEmpirical, File: "f", Column: "c"}, nil, 0},
		{"invalid spec", LengthSpec{Type: "nope"}, nil, 0},
		{"normal stddev 0 rounds and clamps", LengthSpec{Type: LengthNormal, Mean: 10.4, Max: 8}, nil, 8},
		{"normal clamped to one value", LengthSpec{Type: LengthNormal, Mean: 100, Stddev: 50, Min: 60, Max: 60}, nil, 60},
		{"empirical clamps", LengthSpec{Type: LengthEmpirical, File: "f", Column: "c", Min: 2, Max: 4}, []int{1, 3, 9}, 3},
		{"a bucket weight of 1e308 (was +Inf)", LengthSpec{Type: LengthBuckets, Buckets: []Bucket{{Weight: 1e308, Min: 100, Max: 300}}}, nil, 200},
		{"weights as shares", LengthSpec{Type: LengthBuckets, Buckets: []Bucket{{Weight: 3e307, Min: 1, Max: 1}, {Weight: 1e307, Min: 5, Max: 5}}}, nil, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.spec.ExpectedValue(tt.empirical); math.Abs(got-tt.want) > 1e-12 {
				t.Errorf("ExpectedValue = %g, want %g", got, tt.want)
			}
		})
	}
}
