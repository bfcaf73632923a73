package stats

import "math"

// Histogram counts positive values in logarithmic buckets of relative width
// 0.2% (so any quantile is within 0.1% of the true sample value), from
// 1e-3 to 1e9 in the recorded unit, plus exact count, sum, sum of squares,
// minimum and maximum. It has a fixed size (about 14k buckets) whatever the
// number of values.
type Histogram struct {
	counts []int64
	n      int64
	sum    float64
	sumSq  float64
	min    float64
	max    float64
}

const (
	histLo     = 1e-3
	histGrowth = 1.002
	histHi     = 1e9
)

var histBuckets = int(math.Ceil(math.Log(histHi/histLo)/math.Log(histGrowth))) + 2
var histLogGrowth = math.Log(histGrowth)

// NewHistogram returns an empty histogram.
func NewHistogram() *Histogram {
	return &Histogram{counts: make([]int64, histBuckets), min: math.Inf(1)}
}

func bucketOf(v float64) int {
	if v <= histLo {
		return 0
	}
	b := int(math.Log(v/histLo)/histLogGrowth) + 1
	return min(b, histBuckets-1)
}

// bucketValue is the geometric midpoint of bucket b.
func bucketValue(b int) float64 {
	if b == 0 {
		return histLo
	}
	return histLo * math.Exp((float64(b)-0.5)*histLogGrowth)
}

// Add records v with weight n (n identical values).
func (h *Histogram) Add(v float64, n int64) {
	if n <= 0 || math.IsNaN(v) {
		return
	}
	h.counts[bucketOf(v)] += n
	h.n += n
	fn := float64(n)
	h.sum += v * fn
	h.sumSq += v * v * fn
	h.min = math.Min(h.min, v)
	h.max = math.Max(h.max, v)
}

// Merge adds o's values to h.
func (h *Histogram) Merge(o *Histogram) {
	for i, c := range o.counts {
		h.counts[i] += c
	}
	h.n += o.n
	h.sum += o.sum
	h.sumSq += o.sumSq
	h.min = math.Min(h.min, o.min)
	h.max = math.Max(h.max, o.max)
}

// Count is the number of values.
func (h *Histogram) Count() int64 { return h.n }

// Mean is the exact mean.
func (h *Histogram) Mean() float64 {
	if h.n == 0 {
		return 0
	}
	return h.sum / float64(h.n)
}

// Std is the exact population standard deviation.
func (h *Histogram) Std() float64 {
	if h.n == 0 {
		return 0
	}
	m := h.Mean()
	return math.Sqrt(math.Max(0, h.sumSq/float64(h.n)-m*m))
}

// Max is the exact maximum.
func (h *Histogram) Max() float64 {
	if h.n == 0 {
		return 0
	}
	return h.max
}

// Quantile returns the value at quantile q, interpolating between ranks as
// Quantile does on a sorted sample, with each bucket's values at its
// midpoint (clamped to the exact min and max).
func (h *Histogram) Quantile(q float64) float64 {
	if h.n == 0 {
		return 0
	}
	pos := q * float64(h.n-1)
	lo := h.valueAtRank(int64(math.Floor(pos)))
	hi := h.valueAtRank(int64(math.Ceil(pos)))
	return lo + (hi-lo)*(pos-math.Floor(pos))
}

func (h *Histogram) valueAtRank(r int64) float64 {
	var seen int64
	for b, c := range h.counts {
		seen += c
		if seen > r {
			return math.Min(math.Max(bucketValue(b), h.min), h.max)
		}
	}
	return h.max
}

// Summary summarises the histogram like Summarize does a sample.
func (h *Histogram) Summary() Summary {
	if h.n == 0 {
		return Summary{}
	}
	return Summary{
		Mean: h.Mean(), P50: h.Quantile(0.5), P90: h.Quantile(0.9), P95: h.Quantile(0.95),
		P99: h.Quantile(0.99), P999: h.Quantile(0.999), Max: h.Max(), Count: h.n,
	}
}
