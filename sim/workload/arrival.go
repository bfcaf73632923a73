package workload

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
)

// Arrival process types (ArrivalSpec.Type).
const (
	ArrivalPoisson    = "poisson"     // {rate_rps}: exponential gaps
	ArrivalConstant   = "constant"    // {rate_rps}: gaps of exactly 1/rate
	ArrivalGamma      = "gamma"       // {rate_rps, cv}: gamma gaps, cv = their stddev/mean
	ArrivalClosedLoop = "closed_loop" // {concurrency, think_time_ms}: a new request when one finishes
)

var arrivalTypes = []string{ArrivalPoisson, ArrivalConstant, ArrivalGamma, ArrivalClosedLoop}

// ArrivalSpec is how requests arrive. Open-loop types draw gaps from an
// Interarrival; closed_loop keeps Concurrency clients, each sending its next
// request ThinkTimeMS after its previous one finished (the simulator drives
// that loop, since it depends on completions).
type ArrivalSpec struct {
	Type        string  `yaml:"type" json:"type"`
	RateRPS     float64 `yaml:"rate_rps,omitempty" json:"rate_rps,omitempty"`
	CV          float64 `yaml:"cv,omitempty" json:"cv,omitempty"`
	Concurrency int     `yaml:"concurrency,omitempty" json:"concurrency,omitempty"`
	ThinkTimeMS float64 `yaml:"think_time_ms,omitempty" json:"think_time_ms,omitempty"`
}

// IsZero reports whether the spec is unset.
func (s ArrivalSpec) IsZero() bool { return s == ArrivalSpec{} }

// IsOpenLoop reports whether requests arrive on their own schedule
// (poisson, constant, gamma) rather than after completions.
func (s ArrivalSpec) IsOpenLoop() bool { return s.Type != ArrivalClosedLoop }

// Validate checks the spec; the error is a *FieldError naming
// field + "." + the key. Keys the type does not use are refused.
func (s ArrivalSpec) Validate(field string) error {
	return s.validate(field, true)
}

// validate checks the spec; with needRate false (load stages give the rate
// or concurrency) rate_rps and concurrency must be absent and type may be
// empty (poisson).
func (s ArrivalSpec) validate(field string, needRate bool) error {
	fe := func(sub, reason string) error { return &FieldError{Field: field + "." + sub, Reason: reason} }
	if !needRate {
		if s.RateRPS != 0 {
			return fe("rate_rps", "is given per stage when stages are set")
		}
		if s.Concurrency != 0 {
			return fe("concurrency", "is given per stage when stages are set")
		}
	}
	used := map[string]bool{}
	switch s.Type {
	case "":
		if needRate {
			return fe("type", "is required (one of "+strings.Join(arrivalTypes, ", ")+")")
		}
		used["think_time_ms"] = true // for the stages that give a concurrency
	case ArrivalPoisson, ArrivalConstant, ArrivalGamma:
		used["rate_rps"] = true
		if !needRate {
			used["think_time_ms"] = true
		}
		if needRate && (!(s.RateRPS > 0) || math.IsInf(s.RateRPS, 1)) {
			return fe("rate_rps", fmt.Sprintf("must be a finite number > 0, got %g", s.RateRPS))
		}
		if s.Type == ArrivalGamma {
			used["cv"] = true
			if reason := gammaCVReason(s.CV); reason != "" {
				return fe("cv", reason)
			}
		}
	case ArrivalClosedLoop:
		used["concurrency"], used["think_time_ms"] = true, true
		if needRate && s.Concurrency < 1 {
			return fe("concurrency", fmt.Sprintf("must be >= 1, got %d", s.Concurrency))
		}
	default:
		return fe("type", fmt.Sprintf("unknown type %q (want one of %s)", s.Type, strings.Join(arrivalTypes, ", ")))
	}
	if !(s.ThinkTimeMS >= 0) || math.IsInf(s.ThinkTimeMS, 1) {
		return fe("think_time_ms", fmt.Sprintf("must be a finite number >= 0, got %g", s.ThinkTimeMS))
	}
	for _, k := range []struct {
		key string
		set bool
	}{{"rate_rps", s.RateRPS != 0}, {"cv", s.CV != 0}, {"concurrency", s.Concurrency != 0}, {"think_time_ms", s.ThinkTimeMS != 0}} {
		if k.set && !used[k.key] {
			t := s.Type
			if t == "" {
				t = "stages"
			}
			return fe(k.key, "is not used by type "+t)
		}
	}
	return nil
}

// Interarrival draws the gaps, in seconds, between open-loop arrivals.
type Interarrival interface {
	Next(r *rand.Rand) float64
}

// NewInterarrival returns the gap distribution of an open-loop process with
// mean rate rateRPS: poisson gives exponential gaps, constant exactly
// 1/rateRPS (drawing nothing), gamma gaps with shape k = 1/cv² and scale
// cv²/rateRPS (so mean 1/rateRPS and coefficient of variation cv; cv = 1 is
// poisson). cv is ignored except for gamma. closed_loop has no gaps and is
// an error. Errors are *FieldError naming the argument: rate_rps, cv or
// type.
func NewInterarrival(typ string, rateRPS, cv float64) (Interarrival, error) {
	if !(rateRPS > 0) || math.IsInf(rateRPS, 1) {
		return nil, &FieldError{Field: "rate_rps", Reason: fmt.Sprintf("must be a finite number > 0, got %g", rateRPS)}
	}
	switch typ {
	case ArrivalPoisson:
		return poissonGaps{rate: rateRPS}, nil
	case ArrivalConstant:
		return constantGaps{gap: 1 / rateRPS}, nil
	case ArrivalGamma:
		if reason := gammaCVReason(cv); reason != "" {
			return nil, &FieldError{Field: "cv", Reason: reason}
		}
		scale := cv * cv / rateRPS
		if !(scale > 0) || math.IsInf(scale, 1) {
			return nil, &FieldError{Field: "cv", Reason: fmt.Sprintf("%g at %g req/s gives gamma gaps of scale %g s, not a finite number > 0", cv, rateRPS, scale)}
		}
		return gammaGaps{shape: 1 / (cv * cv), scale: scale}, nil
	case ArrivalClosedLoop:
		return nil, &FieldError{Field: "type", Reason: fmt.Sprintf("%s has no inter-arrival gaps: the simulator drives it", typ)}
	default:
		return nil, &FieldError{Field: "type", Reason: fmt.Sprintf("unknown open-loop arrival type %q (want poisson, constant or gamma)", typ)}
	}
}

// Gamma cv bounds. Below MinGammaCV the gaps are constant for any purpose
// (use constant); past MaxGammaCV the shape 1/cv² is under 1e-12, so all
// but one gap in about 10^12 is 0 and no run of a bounded size shows the
// rate. Far outside, 1/cv² or cv² stops being a finite float64 > 0 and
// the draws become NaN.
const (
	MinGammaCV = 1e-6
	MaxGammaCV = 1e6
)

// gammaCVReason says why cv cannot shape gamma gaps ("" when it can).
func gammaCVReason(cv float64) string {
	if !(cv >= MinGammaCV && cv <= MaxGammaCV) {
		return fmt.Sprintf("must be in [%g, %g] (1 = poisson), got %g", MinGammaCV, MaxGammaCV, cv)
	}
	return ""
}

type poissonGaps struct{ rate float64 }

func (p poissonGaps) Next(r *rand.Rand) float64 { return r.ExpFloat64() / p.rate }

type constantGaps struct{ gap float64 }

func (c constantGaps) Next(*rand.Rand) float64 { return c.gap }

type gammaGaps struct{ shape, scale float64 }

func (g gammaGaps) Next(r *rand.Rand) float64 { return gammaVariate(r, g.shape) * g.scale }

// gammaVariate draws from Gamma(shape, 1) by Marsaglia and Tsang (2000), "A
// simple method for generating gamma variables", with the boost
// G(k) = G(k+1)·U^(1/k) for shape < 1. Deterministic for a given source.
func gammaVariate(r *rand.Rand, shape float64) float64 {
	if shape < 1 {
		u := r.Float64()
		return gammaVariate(r, shape+1) * math.Pow(u, 1/shape)
	}
	d := shape - 1.0/3
	c := 1 / math.Sqrt(9*d)
	for {
		x := r.NormFloat64()
		v := 1 + c*x
		if v <= 0 {
			continue
		}
		v = v * v * v
		u := r.Float64()
		if u < 1-0.0331*x*x*x*x || math.Log(u) < 0.5*x*x+d*(1-v+math.Log(v)) {
			return d * v
		}
	}
}
