package workload

import (
	"math"
	"math/rand/v2"
	"sort"
)

// LengthSampler draws token lengths. Sample always returns a value in
// [1, MaxTokens] that respects the spec's clamps.
type LengthSampler interface {
	Sample(r *rand.Rand) int
}

// NewLengthSampler builds the sampler of a spec, after validating it (the
// error is Validate's *FieldError). empirical holds the values the caller
// read from s.File (see ParseLengthColumn) and is nil for other types; it is
// copied. An empirical spec with no values is an error naming field+".file".
func NewLengthSampler(s LengthSpec, field string, empirical []int) (LengthSampler, error) {
	if err := s.Validate(field); err != nil {
		return nil, err
	}
	lo, hi := s.bounds()
	switch s.Type {
	case LengthFixed:
		return fixedSampler{v: s.Value}, nil
	case LengthUniform:
		return uniformSampler{lo: s.Min, hi: s.Max}, nil
	case LengthNormal:
		return normalSampler{mean: s.Mean, sd: s.Stddev, lo: lo, hi: hi}, nil
	case LengthLognormal:
		mu, sigma := lognormalParams(s.Mean, s.Stddev)
		return lognormalSampler{mu: mu, sigma: sigma, lo: lo, hi: hi}, nil
	case LengthEmpirical:
		if len(empirical) == 0 {
			return nil, &FieldError{Field: field + ".file", Reason: "has no values in column " + s.Column}
		}
		return empiricalSampler{values: append([]int(nil), empirical...), lo: lo, hi: hi}, nil
	default: // LengthBuckets; Validate refused anything else
		b := bucketSampler{buckets: append([]Bucket(nil), s.Buckets...), cum: make([]float64, len(s.Buckets))}
		total := 0.0
		for i, bk := range s.Buckets {
			total += bk.Weight
			b.cum[i] = total
		}
		return b, nil
	}
}

// lognormalParams converts the mean m and standard deviation sd of a
// lognormal variable to the mean mu and deviation sigma of its logarithm:
// sigma² = ln(1 + sd²/m²), mu = ln m - sigma²/2.
func lognormalParams(m, sd float64) (mu, sigma float64) {
	s2 := math.Log1p((sd / m) * (sd / m))
	return math.Log(m) - s2/2, math.Sqrt(s2)
}

// clampRound rounds x to the nearest integer and clips it to [lo, hi].
func clampRound(x float64, lo, hi int) int {
	switch {
	case math.IsNaN(x) || x < float64(lo):
		return lo
	case x > float64(hi):
		return hi
	}
	return min(max(int(math.Round(x)), lo), hi)
}

type fixedSampler struct{ v int }

func (f fixedSampler) Sample(*rand.Rand) int { return f.v }

type uniformSampler struct{ lo, hi int }

func (u uniformSampler) Sample(r *rand.Rand) int { return u.lo + r.IntN(u.hi-u.lo+1) }

type normalSampler struct {
	mean, sd float64
	lo, hi   int
}

func (n normalSampler) Sample(r *rand.Rand) int {
	return clampRound(n.mean+n.sd*r.NormFloat64(), n.lo, n.hi)
}

type lognormalSampler struct {
	mu, sigma float64
	lo, hi    int
}

func (l lognormalSampler) Sample(r *rand.Rand) int {
	return clampRound(math.Exp(l.mu+l.sigma*r.NormFloat64()), l.lo, l.hi)
}

type empiricalSampler struct {
	values []int
	lo, hi int
}

func (e empiricalSampler) Sample(r *rand.Rand) int {
	return min(max(e.values[r.IntN(len(e.values))], e.lo), e.hi)
}

type bucketSampler struct {
	buckets []Bucket
	cum     []float64 // cumulative weights
}

func (b bucketSampler) Sample(r *rand.Rand) int {
	u := r.Float64() * b.cum[len(b.cum)-1]
	i := sort.Search(len(b.cum), func(i int) bool { return b.cum[i] > u })
	if i == len(b.cum) { // u rounded up to the total: take the last bucket with weight
		i = len(b.cum) - 1
		for i > 0 && b.buckets[i].Weight == 0 {
			i--
		}
	}
	bk := b.buckets[i]
	return bk.Min + r.IntN(bk.Max-bk.Min+1)
}

// ExpectedValue is the mean of what the spec's sampler returns, clamps and
// rounding included, for reports and capacity estimates. empirical is as
// for NewLengthSampler; an empirical spec without values gives 0, as does
// an invalid spec. For normal and lognormal distributions the rounding to
// whole tokens is treated as unbiased between the clamps, which is exact
// to well under a token once stddev >= 1.
func (s LengthSpec) ExpectedValue(empirical []int) float64 {
	if s.Validate("") != nil {
		return 0
	}
	lo, hi := s.bounds()
	switch s.Type {
	case LengthFixed:
		return float64(s.Value)
	case LengthUniform:
		return (float64(s.Min) + float64(s.Max)) / 2
	case LengthNormal:
		return clippedMean(lo, hi, s.Stddev, func(x float64) float64 {
			return normalCDF((x - s.Mean) / s.Stddev)
		}, func(a, b float64) float64 { // ∫_a^b x f(x) dx
			za, zb := (a-s.Mean)/s.Stddev, (b-s.Mean)/s.Stddev
			return s.Mean*(normalCDF(zb)-normalCDF(za)) + s.Stddev*(normalPDF(za)-normalPDF(zb))
		}, s.Mean)
	case LengthLognormal:
		mu, sigma := lognormalParams(s.Mean, s.Stddev)
		return clippedMean(lo, hi, sigma, func(x float64) float64 {
			return normalCDF((math.Log(x) - mu) / sigma)
		}, func(a, b float64) float64 {
			za, zb := (math.Log(a)-mu-sigma*sigma)/sigma, (math.Log(b)-mu-sigma*sigma)/sigma
			return s.Mean * (normalCDF(zb) - normalCDF(za))
		}, s.Mean)
	case LengthEmpirical:
		if len(empirical) == 0 {
			return 0
		}
		sum := 0.0
		for _, v := range empirical {
			sum += float64(min(max(v, lo), hi))
		}
		return sum / float64(len(empirical))
	default: // buckets
		total := 0.0
		for _, b := range s.Buckets {
			total += b.Weight
		}
		sum := 0.0 // shares of the total: a weight of 1e308 stays finite
		for _, b := range s.Buckets {
			sum += b.Weight / total * (float64(b.Min) + float64(b.Max)) / 2
		}
		return sum
	}
}

// clippedMean is E[clip(round(X), lo, hi)] for a continuous X with the given
// CDF and partial expectation ∫_a^b x f(x) dx. spread = 0 means X is the
// constant point.
func clippedMean(lo, hi int, spread float64, cdf func(float64) float64, partial func(a, b float64) float64, point float64) float64 {
	if spread == 0 || lo == hi {
		return float64(clampRound(point, lo, hi))
	}
	a, b := float64(lo)+0.5, float64(hi)-0.5 // round(X) <= lo iff X < lo + 0.5
	pLo, pHi := cdf(a), 1-cdf(b)
	return float64(lo)*pLo + float64(hi)*pHi + partial(a, b)
}

func normalCDF(z float64) float64 { return 0.5 * math.Erfc(-z/math.Sqrt2) }

func normalPDF(z float64) float64 { return math.Exp(-z*z/2) / math.Sqrt(2*math.Pi) }
