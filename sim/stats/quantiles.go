package stats

import (
	"math"
	"slices"
)

// Summary is the reported shape of a latency distribution, in the unit of
// the metric it summarises (milliseconds for the *_ms metrics).
type Summary struct {
	Mean float64 `json:"mean"`
	P50  float64 `json:"p50"`
	P90  float64 `json:"p90"`
	P95  float64 `json:"p95"`
	P99  float64 `json:"p99"`
	P999 float64 `json:"p999"`
	Max  float64 `json:"max"`
	// Count is the number of samples.
	Count int64 `json:"count"`
}

// Median is the middle value of xs, the mean of the middle two for an
// even count (0 for none); xs is left as it is.
func Median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// Quantile returns the value at quantile q of the sorted sample xs with
// linear interpolation between closest ranks (numpy's default).
func Quantile(sorted []float64, q float64) float64 {
	n := len(sorted)
	if n == 0 {
		return 0
	}
	if q <= 0 {
		return sorted[0]
	}
	if q >= 1 {
		return sorted[n-1]
	}
	pos := q * float64(n-1)
	lo := int(math.Floor(pos))
	hi := min(lo+1, n-1)
	frac := pos - float64(lo)
	return sorted[lo] + (sorted[hi]-sorted[lo])*frac
}

// Summarize sorts xs in place and summarises it.
func Summarize(xs []float64) Summary {
	if len(xs) == 0 {
		return Summary{}
	}
	slices.Sort(xs)
	var sum float64
	for _, x := range xs {
		sum += x
	}
	return Summary{
		Mean:  sum / float64(len(xs)),
		P50:   Quantile(xs, 0.50),
		P90:   Quantile(xs, 0.90),
		P95:   Quantile(xs, 0.95),
		P99:   Quantile(xs, 0.99),
		P999:  Quantile(xs, 0.999),
		Max:   xs[len(xs)-1],
		Count: int64(len(xs)),
	}
}

// At returns the summary's value at a named quantile ("mean", "p50", "p90",
// "p95", "p99", "p999", "max") and whether the name is known.
func (s Summary) At(name string) (float64, bool) {
	switch name {
	case "mean":
		return s.Mean, true
	case "p50":
		return s.P50, true
	case "p90":
		return s.P90, true
	case "p95":
		return s.P95, true
	case "p99":
		return s.P99, true
	case "p999":
		return s.P999, true
	case "max":
		return s.Max, true
	}
	return 0, false
}

// Fraction is the quantile a named percentile stands for ("p99": 0.99);
// ok is false for mean, max and unknown names.
func Fraction(name string) (q float64, ok bool) {
	q, ok = map[string]float64{"p50": 0.5, "p90": 0.9, "p95": 0.95, "p99": 0.99, "p999": 0.999}[name]
	return q, ok
}

// QuantileNames are the names Summary.At accepts, in report order.
var QuantileNames = []string{"mean", "p50", "p90", "p95", "p99", "p999", "max"}
