package stats

import "slices"

// ExactLimit is the most values a Distribution keeps one by one: up to it
// every quantile is exact (Summarize's), past it the values move into a
// Histogram and quantiles are within HistogramRelativeError of the exact
// ones, in memory that no longer grows with the count.
const ExactLimit = 100_000

// Method names how a summary's quantiles were computed.
const (
	MethodExact     = "exact"
	MethodHistogram = "histogram"
)

// Distribution records a metric's values: exactly while there are at most
// its limit of them, then in a Histogram (mean, max and count stay exact
// in both; the histogram's mean is the running sum in the order of Add).
// The zero value keeps up to ExactLimit values exactly.
type Distribution struct {
	limit  int
	exact  []float64
	h      *Histogram
	budget *Budget // shared with other distributions (nil: none)
}

// Budget is a number of exact values several distributions share, so that
// many of them (a run's stages) hold no more than it together beyond the
// first free values of each: a distribution that would go past it moves
// into its histogram and gives back what it drew. Those first values are
// not drawn because a histogram costs about as much memory as a few
// thousand exact values (a 4 KiB page for each power of two its values
// span): spilling a small sample would cost memory, not save it.
type Budget struct{ left, free int }

// NewBudget returns a budget of n exact values beyond the first free
// values of each distribution that shares it.
func NewBudget(n, free int) *Budget { return &Budget{left: n, free: free} }

// drawn is how much of the budget k exact values take.
func (b *Budget) drawn(k int) int { return max(k-b.free, 0) }

// Share makes d keep its exact values within b as well as its own limit.
// Call it while d is empty.
func (d *Distribution) Share(b *Budget) { d.budget = b }

// NewDistribution returns an empty distribution that keeps up to limit
// values exactly (limit <= 0: ExactLimit).
func NewDistribution(limit int) *Distribution { return &Distribution{limit: limit} }

func (d *Distribution) exactLimit() int {
	if d.limit <= 0 {
		return ExactLimit
	}
	return d.limit
}

// Add records v.
func (d *Distribution) Add(v float64) {
	if d.h == nil {
		b := d.budget
		if k := len(d.exact); k < d.exactLimit() && (b == nil || k < b.free || b.left > 0) {
			d.exact = append(d.exact, v)
			if b != nil && k >= b.free {
				b.left--
			}
			return
		}
		d.spill()
	}
	d.h.Add(v, 1)
}

// Reserve makes room for n more exact values (up to the limit), so that
// adding them does not regrow the sample.
func (d *Distribution) Reserve(n int) {
	if b := d.budget; b != nil {
		n = min(n, max(b.free-len(d.exact), 0)+b.left)
	}
	if n = min(n, d.exactLimit()-len(d.exact)); d.h == nil && n > 0 {
		d.exact = slices.Grow(d.exact, n)
	}
}

// spill moves the exact values into a histogram, in the order they came.
func (d *Distribution) spill() {
	d.h = NewHistogram()
	for _, v := range d.exact {
		d.h.Add(v, 1)
	}
	if b := d.budget; b != nil {
		b.left += b.drawn(len(d.exact))
	}
	d.exact = nil
}

// Merge adds o's values to d: the result is exact while both are and
// their values together fit d's limit, a histogram otherwise.
func (d *Distribution) Merge(o *Distribution) {
	b, k := d.budget, len(d.exact)+len(o.exact)
	if d.h == nil && o.h == nil && k <= d.exactLimit() && (b == nil || b.drawn(k)-b.drawn(len(d.exact)) <= b.left) {
		if b != nil {
			b.left -= b.drawn(k) - b.drawn(len(d.exact))
		}
		d.exact = append(d.exact, o.exact...)
		return
	}
	if d.h == nil {
		d.spill()
	}
	if o.h != nil {
		d.h.Merge(o.h)
		return
	}
	for _, v := range o.exact {
		d.h.Add(v, 1)
	}
}

// Count is the number of values.
func (d *Distribution) Count() int64 {
	if d.h != nil {
		return d.h.Count()
	}
	return int64(len(d.exact))
}

// Method is MethodExact while the values are kept one by one, else
// MethodHistogram.
func (d *Distribution) Method() string {
	if d.h != nil {
		return MethodHistogram
	}
	return MethodExact
}

// Quantile is the value at quantile q (0–1), interpolated as Summary's
// quantiles are (it sorts the kept values in place; 0 with no values).
func (d *Distribution) Quantile(q float64) float64 {
	if d.h != nil {
		return d.h.Quantile(q)
	}
	slices.Sort(d.exact)
	return Quantile(d.exact, q)
}

// Summary summarises the values (Summarize's, while exact; it sorts the
// kept values in place).
func (d *Distribution) Summary() Summary {
	if d.h != nil {
		return d.h.Summary()
	}
	return Summarize(d.exact)
}
