package stats

import "math"

// HistogramRelativeError bounds how far a Histogram's quantile is from the
// exact quantile of the same values (Summarize's), relative to it: a
// bucket spans 1/512 of its lower edge, and its midpoint is within 1/1024
// (0.098%) of any value in it; interpolating between two such ranks keeps
// the bound. It holds for values in [2^-10, 2^40) (in milliseconds: 1 ns to
// 35 years); a value below lands in the first bucket (within 0.001 of the
// true value, absolutely), one above in the last.
const HistogramRelativeError = 0.001

// Histogram counts positive values in HDR-style buckets: each power of two
// from 2^-10 to 2^40 is split into 512 equal sub-buckets, so a bucket is at
// most 0.2% wide and any quantile is within HistogramRelativeError (0.1%) of
// the exact one (values outside the range are clamped into the end buckets;
// Max stays exact, Mean is the running sum's). Adding a value is a few bit
// operations, the size is bounded (25,600 buckets, in pages of one power
// of two each, allocated when a value first falls in one: a run's ITLs
// fill a handful) whatever the number of values, and two histograms merge
// by adding their buckets.
type Histogram struct {
	pages [histPages][]int64 // histSub counts each, nil while empty
	n     int64
	sum   float64
	sumSq float64
	min   float64
	max   float64
}

const (
	histSubBits  = 9
	histSub      = 1 << histSubBits
	histMinExp   = -10 // 2^-10 ≈ 0.001
	histMaxExp   = 40  // 2^40 ≈ 1.1e12
	histPages    = histMaxExp - histMinExp
	histBuckets  = histPages * histSub
	mantissaBits = 52
)

// NewHistogram returns an empty histogram.
func NewHistogram() *Histogram {
	return &Histogram{min: math.Inf(1)}
}

// count adds n to bucket b.
func (h *Histogram) count(b int, n int64) {
	p := &h.pages[b>>histSubBits]
	if *p == nil {
		*p = make([]int64, histSub)
	}
	(*p)[b&(histSub-1)] += n
}

func bucketOf(v float64) int {
	if !(v > 0) {
		return 0
	}
	bits := math.Float64bits(v)
	exp := int(bits>>mantissaBits&0x7ff) - 1023
	if exp < histMinExp {
		return 0
	}
	if exp >= histMaxExp {
		return histBuckets - 1
	}
	sub := int(bits >> (mantissaBits - histSubBits) & (histSub - 1))
	return (exp-histMinExp)*histSub + sub
}

// bucketValue is the midpoint of bucket b.
func bucketValue(b int) float64 {
	exp := b/histSub + histMinExp
	sub := b % histSub
	return math.Ldexp(1+(float64(sub)+0.5)/histSub, exp)
}

// Add records v with weight n (n identical values).
func (h *Histogram) Add(v float64, n int64) {
	if n <= 0 || math.IsNaN(v) {
		return
	}
	h.count(bucketOf(v), n)
	h.n += n
	fn := float64(n)
	h.sum += v * fn
	h.sumSq += v * v * fn
	h.min = math.Min(h.min, v)
	h.max = math.Max(h.max, v)
}

// Merge adds o's values to h.
func (h *Histogram) Merge(o *Histogram) {
	for k, page := range o.pages {
		for j, c := range page {
			if c != 0 {
				h.count(k<<histSubBits+j, c)
			}
		}
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
	for k, page := range h.pages {
		for j, c := range page {
			seen += c
			if seen > r {
				return math.Min(math.Max(bucketValue(k<<histSubBits+j), h.min), h.max)
			}
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
