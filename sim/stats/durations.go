package stats

import (
	"math"
	"math/big"
	"math/bits"
)

// Durations is a histogram of integer durations (nanoseconds) reported in
// milliseconds: quantiles from a Histogram (within HistogramRelativeError),
// and count, mean, standard deviation and max computed exactly from integer
// sums, so the result does not depend on the order of the values or on how
// equal values were grouped (Add(v, 3) is Add(v, 1) three times, to the
// bit). Memory is fixed whatever the count.
type Durations struct {
	h     *Histogram
	n     int64
	sum   [2]uint64 // Σ v, 128-bit little-endian words
	sumSq [3]uint64 // Σ v², 192-bit
	max   int64
}

// NewDurations returns an empty histogram of durations.
func NewDurations() *Durations { return &Durations{h: NewHistogram()} }

// nsPerMS converts the nanoseconds recorded to the milliseconds reported.
const nsPerMS = 1e6

// Add records n values of v nanoseconds (v >= 0; negative values count as
// 0).
func (d *Durations) Add(v, n int64) {
	if n <= 0 {
		return
	}
	v = max(v, 0)
	d.h.Add(float64(v)/nsPerMS, n)
	d.n += n
	d.max = max(d.max, v)
	hi, lo := bits.Mul64(uint64(v), uint64(n))
	var c uint64
	d.sum[0], c = bits.Add64(d.sum[0], lo, 0)
	d.sum[1], _ = bits.Add64(d.sum[1], hi, c)
	// v²·n = v·(v·n): a 64×128-bit product, 192 bits.
	p1hi, p1lo := bits.Mul64(uint64(v), lo)
	p2hi, p2lo := bits.Mul64(uint64(v), hi)
	w1, c1 := bits.Add64(p1hi, p2lo, 0)
	w2 := p2hi + c1
	d.sumSq[0], c = bits.Add64(d.sumSq[0], p1lo, 0)
	d.sumSq[1], c = bits.Add64(d.sumSq[1], w1, c)
	d.sumSq[2], _ = bits.Add64(d.sumSq[2], w2, c)
}

// Merge adds o's values to d.
func (d *Durations) Merge(o *Durations) {
	d.h.Merge(o.h)
	d.n += o.n
	d.max = max(d.max, o.max)
	var c uint64
	d.sum[0], c = bits.Add64(d.sum[0], o.sum[0], 0)
	d.sum[1], _ = bits.Add64(d.sum[1], o.sum[1], c)
	d.sumSq[0], c = bits.Add64(d.sumSq[0], o.sumSq[0], 0)
	d.sumSq[1], c = bits.Add64(d.sumSq[1], o.sumSq[1], c)
	d.sumSq[2], _ = bits.Add64(d.sumSq[2], o.sumSq[2], c)
}

// Count is the number of values.
func (d *Durations) Count() int64 { return d.n }

// MaxMS is the exact maximum, in milliseconds.
func (d *Durations) MaxMS() float64 {
	if d.n == 0 {
		return 0
	}
	return float64(d.max) / nsPerMS
}

func words(ws ...uint64) *big.Int {
	x := new(big.Int)
	for i := len(ws) - 1; i >= 0; i-- {
		x.Lsh(x, 64)
		x.Or(x, new(big.Int).SetUint64(ws[i]))
	}
	return x
}

// ratio is a/b as the nearest float64.
func ratio(a, b *big.Int) float64 {
	f, _ := new(big.Rat).SetFrac(a, b).Float64()
	return f
}

// MeanMS is the exact mean (rounded once to float64), in milliseconds.
func (d *Durations) MeanMS() float64 {
	if d.n == 0 {
		return 0
	}
	return ratio(words(d.sum[:]...), big.NewInt(d.n)) / nsPerMS
}

// StdMS is the population standard deviation, in milliseconds, from the
// exact variance (n·Σv² − (Σv)²) / n².
func (d *Durations) StdMS() float64 {
	if d.n == 0 {
		return 0
	}
	n := big.NewInt(d.n)
	s := words(d.sum[:]...)
	num := new(big.Int).Mul(n, words(d.sumSq[:]...))
	num.Sub(num, new(big.Int).Mul(s, s))
	if num.Sign() <= 0 {
		return 0
	}
	return math.Sqrt(ratio(num, new(big.Int).Mul(n, n))) / nsPerMS
}

// QuantileMS is the value at quantile q (0–1), in milliseconds, from the
// histogram as Summary's quantiles are.
func (d *Durations) QuantileMS(q float64) float64 { return d.h.Quantile(q) }

// Summary summarises the durations in milliseconds: exact mean, max and
// count; quantiles from the histogram.
func (d *Durations) Summary() Summary {
	if d.n == 0 {
		return Summary{}
	}
	s := d.h.Summary()
	s.Mean, s.Max = d.MeanMS(), d.MaxMS()
	return s
}
