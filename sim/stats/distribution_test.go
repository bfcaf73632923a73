package stats

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestHistogramRelativeErrorBound checks HistogramRelativeError as
// documented: every quantile within 0.1% of the exact one, on samples
// drawn to sit at the worst places (bucket edges, just below the next
// edge) as well as ordinary distributions.
func TestHistogramRelativeErrorBound(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	edge := func() float64 { // a bucket's lower edge or the last value below the next one
		exp := r.IntN(30) - 5
		sub := float64(r.IntN(histSub))
		v := math.Ldexp(1+sub/histSub, exp)
		if r.IntN(2) == 0 {
			v = math.Nextafter(math.Ldexp(1+(sub+1)/histSub, exp), 0)
		}
		return v
	}
	for _, c := range []struct {
		name string
		draw func() float64
	}{
		{"bucket edges", edge},
		{"lognormal ms", func() float64 { return math.Exp(r.NormFloat64()*2 + 3) }},
		{"two points", func() float64 { return []float64{1, 1.0019}[r.IntN(2)] }},
		{"pareto tail", func() float64 { return 5 / math.Pow(r.Float64()+1e-9, 0.8) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			for _, n := range []int{2, 17, 1000, 40_000} {
				h := NewHistogram()
				xs := make([]float64, n)
				for i := range xs {
					xs[i] = c.draw()
					h.Add(xs[i], 1)
				}
				exact := Summarize(xs)
				for _, q := range []float64{0, 0.001, 0.25, 0.5, 0.9, 0.95, 0.99, 0.999, 1} {
					want, got := Quantile(xs, q), h.Quantile(q)
					if rel := math.Abs(got-want) / want; rel > HistogramRelativeError {
						t.Errorf("n=%d q=%g: histogram %.9g, exact %.9g (%.4f%% off)", n, q, got, want, 100*rel)
					}
				}
				if h.Max() != exact.Max || h.Count() != exact.Count {
					t.Errorf("n=%d: max %g count %d, want %g %d", n, h.Max(), h.Count(), exact.Max, exact.Count)
				}
			}
		})
	}
}

// TestDistributionExactThenHistogram: up to its limit a distribution's
// summary is the sample's own; one value more and it is the histogram's,
// within the documented error, in fixed memory.
func TestDistributionExactThenHistogram(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	const limit = 500
	d := NewDistribution(limit)
	var xs []float64
	for range limit {
		v := math.Exp(r.NormFloat64() + 4)
		xs = append(xs, v)
		d.Add(v)
	}
	if d.Method() != MethodExact {
		t.Fatalf("method %s at the limit", d.Method())
	}
	if got, want := d.Summary(), Summarize(append([]float64(nil), xs...)); got != want {
		t.Fatalf("exact summary %+v, want %+v", got, want)
	}
	v := math.Exp(r.NormFloat64() + 4)
	xs = append(xs, v)
	d.Add(v)
	if d.Method() != MethodHistogram || d.exact != nil || d.Count() != limit+1 {
		t.Fatalf("past the limit: method %s, %d values kept, count %d", d.Method(), len(d.exact), d.Count())
	}
	got, want := d.Summary(), Summarize(xs)
	for _, q := range QuantileNames {
		g, _ := got.At(q)
		w, _ := want.At(q)
		if rel := math.Abs(g-w) / w; rel > HistogramRelativeError {
			t.Errorf("%s: %g, exact %g", q, g, w)
		}
	}
	if got.Max != want.Max || got.Count != want.Count {
		t.Errorf("max %g count %d, want %g %d", got.Max, got.Count, want.Max, want.Count)
	}
	var zero Distribution // the zero value keeps ExactLimit values
	zero.Add(1)
	if zero.Method() != MethodExact || zero.exactLimit() != ExactLimit {
		t.Errorf("zero value: %s, limit %d", zero.Method(), zero.exactLimit())
	}
}

func TestDistributionMerge(t *testing.T) {
	a, b := NewDistribution(4), NewDistribution(4)
	a.Add(1)
	a.Add(2)
	b.Add(3)
	a.Merge(b)
	if a.Method() != MethodExact || a.Summary().P50 != 2 {
		t.Fatalf("exact merge: %s, p50 %g", a.Method(), a.Summary().P50)
	}
	c := NewDistribution(4)
	c.Add(10)
	c.Add(20)
	a.Merge(c) // 5 values: past the limit
	if a.Method() != MethodHistogram || a.Count() != 5 || a.Summary().Max != 20 {
		t.Fatalf("merge past the limit: %s, count %d, max %g", a.Method(), a.Count(), a.Summary().Max)
	}
	if p50 := a.Summary().P50; math.Abs(p50-3)/3 > HistogramRelativeError {
		t.Errorf("p50 %g, want 3", p50)
	}
}

// TestDistributionsShareABudget: distributions that share a budget hold no
// more exact values together than it; the one that would go past it moves
// into its histogram (within the error bound) and gives its values back,
// so the others stay exact.
func TestDistributionsShareABudget(t *testing.T) {
	b := NewBudget(10, 0)
	ds := []*Distribution{NewDistribution(100), NewDistribution(100), NewDistribution(100)}
	for _, d := range ds {
		d.Share(b)
	}
	add := func(d *Distribution, n int) {
		for i := 1; i <= n; i++ {
			d.Add(float64(i))
		}
	}
	add(ds[0], 6)
	add(ds[1], 4) // the budget is used up, not exceeded
	if b.left != 0 || ds[0].Method() != MethodExact || ds[1].Method() != MethodExact {
		t.Fatalf("at the budget: %d left, methods %s %s", b.left, ds[0].Method(), ds[1].Method())
	}
	add(ds[2], 3) // nothing left: it goes to its histogram at once
	if ds[2].Method() != MethodHistogram || b.left != 0 || ds[2].Count() != 3 {
		t.Fatalf("past the budget: %s, %d left, count %d", ds[2].Method(), b.left, ds[2].Count())
	}
	if p50 := ds[2].Summary().P50; math.Abs(p50-2)/2 > HistogramRelativeError {
		t.Errorf("p50 %g, want 2", p50)
	}
	add(ds[0], 1) // it would go past: it spills and gives back its 6
	if ds[0].Method() != MethodHistogram || b.left != 6 || ds[0].Count() != 7 {
		t.Fatalf("spilled: %s, %d left, count %d", ds[0].Method(), b.left, ds[0].Count())
	}
	add(ds[1], 6) // room again
	if ds[1].Method() != MethodExact || b.left != 0 || ds[1].Count() != 10 {
		t.Fatalf("after the give-back: %s, %d left, count %d", ds[1].Method(), b.left, ds[1].Count())
	}
	held := 0
	for _, d := range ds {
		held += len(d.exact)
	}
	if held > 10 {
		t.Fatalf("%d exact values held against a budget of 10", held)
	}
}

// TestBudgetSparesSmallSamples: a distribution's first free values do not
// draw on the budget, so small samples stay exact however many share it.
func TestBudgetSparesSmallSamples(t *testing.T) {
	b := NewBudget(5, 3)
	small, big := NewDistribution(100), NewDistribution(100)
	small.Share(b)
	big.Share(b)
	for i := 1; i <= 8; i++ {
		big.Add(float64(i)) // 3 free, 5 drawn: the budget is used up
	}
	for i := 1; i <= 3; i++ {
		small.Add(float64(i)) // within its free values
	}
	if b.left != 0 || big.Method() != MethodExact || small.Method() != MethodExact {
		t.Fatalf("%d left, methods %s %s", b.left, big.Method(), small.Method())
	}
	small.Add(4) // would draw: it spills, giving back nothing it drew
	if small.Method() != MethodHistogram || b.left != 0 {
		t.Fatalf("small past its free values: %s, %d left", small.Method(), b.left)
	}
	big.Add(9) // spills and gives back its 5
	if big.Method() != MethodHistogram || b.left != 5 || big.Count() != 9 {
		t.Fatalf("big: %s, %d left, count %d", big.Method(), b.left, big.Count())
	}
	m := NewDistribution(100)
	m.Share(b)
	other := NewDistribution(100)
	for i := 1; i <= 7; i++ {
		other.Add(float64(i))
	}
	m.Merge(other) // 7 values: 3 free, 4 drawn
	if m.Method() != MethodExact || b.left != 1 {
		t.Fatalf("merge: %s, %d left", m.Method(), b.left)
	}
}

// TestDurationsExactMoments: the mean and standard deviation are exact
// whatever the grouping of equal values, and agree with a direct
// computation on values whose float sums are exact.
func TestDurationsExactMoments(t *testing.T) {
	one, grouped := NewDurations(), NewDurations()
	gaps := []struct{ v, n int64 }{{12_345_678, 3}, {9_000_001, 1}, {40_000_000_000, 2}, {0, 1}}
	var n, sum, sumSq float64
	for _, g := range gaps {
		grouped.Add(g.v, g.n)
		for range g.n {
			one.Add(g.v, 1)
		}
		n += float64(g.n)
		sum += float64(g.v * g.n)
		sumSq += float64(g.v) * float64(g.v) * float64(g.n)
	}
	if one.MeanMS() != grouped.MeanMS() || one.StdMS() != grouped.StdMS() || one.Summary() != grouped.Summary() {
		t.Fatalf("grouping changed the result: %+v vs %+v", one.Summary(), grouped.Summary())
	}
	mean := sum / n
	std := math.Sqrt(sumSq/n - mean*mean)
	if got := grouped.MeanMS(); math.Abs(got-mean/1e6) > 1e-9 {
		t.Errorf("mean %g ms, want %g", got, mean/1e6)
	}
	if got := grouped.StdMS(); math.Abs(got-std/1e6)/(std/1e6) > 1e-9 {
		t.Errorf("std %g ms, want %g", got, std/1e6)
	}
	if grouped.MaxMS() != 40_000 || grouped.Count() != 7 {
		t.Errorf("max %g count %d", grouped.MaxMS(), grouped.Count())
	}
	// Sums past 64 bits stay exact (with carries between the words):
	// 2^30 gaps each of 2^40 − 1 and 2^40 + 1 ns.
	big := NewDurations()
	big.Add(1<<40-1, 1<<30)
	big.Add(1<<40+1, 1<<30)
	if got, want := big.MeanMS(), float64(1<<40)/1e6; got != want {
		t.Errorf("mean of huge sums %v, want %v", got, want)
	}
	if got := big.StdMS(); got != 1/1e6 {
		t.Errorf("std of huge sums %v, want 1e-06", got)
	}
	m := NewDurations()
	m.Merge(grouped)
	m.Merge(NewDurations())
	if m.Summary() != grouped.Summary() || m.StdMS() != grouped.StdMS() {
		t.Errorf("merge changed the summary")
	}
}
