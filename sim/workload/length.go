package workload

import (
	"fmt"
	"math"
	"strings"
)

// Length distribution types (LengthSpec.Type).
const (
	LengthFixed     = "fixed"     // {value}
	LengthUniform   = "uniform"   // {min, max}, both inclusive
	LengthNormal    = "normal"    // {mean, stddev}, optional clamps {min, max}
	LengthLognormal = "lognormal" // {mean, stddev} of the lengths, optional clamps
	LengthEmpirical = "empirical" // {file, column}, optional clamps
	LengthBuckets   = "buckets"   // {buckets: [{weight, min, max}]}
)

var lengthTypes = []string{LengthFixed, LengthUniform, LengthNormal, LengthLognormal, LengthEmpirical, LengthBuckets}

// MaxTokens is the largest token count a sampler returns or a parser
// accepts; larger values are clamped (samplers) or refused (parsers).
const MaxTokens = 1 << 30

// LengthSpec is a token-length distribution as written in a scenario, e.g.
// {type: normal, mean: 512, stddev: 128, min: 16, max: 2048}.
//
// Mean and Stddev of a lognormal are those of the lengths themselves, not
// of their logarithm. Min and Max are required bounds for uniform and
// optional clamps for normal, lognormal and empirical (0 = none); a sample
// below Min is raised to Min and one above Max lowered to Max (clipping,
// not rejection), and every sample is at least 1.
type LengthSpec struct {
	Type    string   `yaml:"type" json:"type"`
	Value   int      `yaml:"value,omitempty" json:"value,omitempty"`
	Min     int      `yaml:"min,omitempty" json:"min,omitempty"`
	Max     int      `yaml:"max,omitempty" json:"max,omitempty"`
	Mean    float64  `yaml:"mean,omitempty" json:"mean,omitempty"`
	Stddev  float64  `yaml:"stddev,omitempty" json:"stddev,omitempty"`
	File    string   `yaml:"file,omitempty" json:"file,omitempty"`
	Column  string   `yaml:"column,omitempty" json:"column,omitempty"`
	Buckets []Bucket `yaml:"buckets,omitempty" json:"buckets,omitempty"`
}

// Bucket is one part of a buckets distribution: chosen with probability
// Weight / (sum of weights), then a length uniform in [Min, Max].
type Bucket struct {
	Weight float64 `yaml:"weight" json:"weight"`
	Min    int     `yaml:"min" json:"min"`
	Max    int     `yaml:"max" json:"max"`
}

// IsZero reports whether the spec is unset (no key given).
func (s LengthSpec) IsZero() bool {
	return s.Type == "" && s.Value == 0 && s.Min == 0 && s.Max == 0 && s.Mean == 0 &&
		s.Stddev == 0 && s.File == "" && s.Column == "" && len(s.Buckets) == 0
}

// Validate checks the spec. The error is a *FieldError whose Field is
// field + "." + the offending key, e.g. "workload.input_tokens.stddev".
// Keys that the type does not use are refused, so that a typo such as
// {type: fixed, mean: 500} does not pass silently.
func (s LengthSpec) Validate(field string) error {
	fe := func(sub, reason string) error { return &FieldError{Field: field + "." + sub, Reason: reason} }
	used := map[string]bool{}
	switch s.Type {
	case "":
		return fe("type", "is required (one of "+strings.Join(lengthTypes, ", ")+")")
	case LengthFixed:
		used["value"] = true
		if s.Value < 1 || s.Value > MaxTokens {
			return fe("value", fmt.Sprintf("must be in [1, %d], got %d", MaxTokens, s.Value))
		}
	case LengthUniform:
		used["min"], used["max"] = true, true
		if s.Min < 1 || s.Min > MaxTokens {
			return fe("min", fmt.Sprintf("must be in [1, %d], got %d", MaxTokens, s.Min))
		}
		if s.Max < s.Min || s.Max > MaxTokens {
			return fe("max", fmt.Sprintf("must be in [min = %d, %d], got %d", s.Min, MaxTokens, s.Max))
		}
	case LengthNormal, LengthLognormal:
		used["mean"], used["stddev"], used["min"], used["max"] = true, true, true, true
		// Lengths are whole tokens, at least one: a mean below one token is
		// no mean of them (and 1e-320 makes the lognormal's sigma NaN).
		if !(s.Mean >= 1) || s.Mean > MaxTokens {
			return fe("mean", fmt.Sprintf("must be in [1, %d] tokens, got %g", MaxTokens, s.Mean))
		}
		if !(s.Stddev >= 0) || s.Stddev > MaxTokens {
			return fe("stddev", fmt.Sprintf("must be in [0, %d] tokens, got %g", MaxTokens, s.Stddev))
		}
		if err := validateClamps(s, fe); err != nil {
			return err
		}
	case LengthEmpirical:
		used["file"], used["column"], used["min"], used["max"] = true, true, true, true
		if s.File == "" {
			return fe("file", "is required: a CSV file with a header")
		}
		if s.Column == "" {
			return fe("column", "is required: the CSV column to take lengths from")
		}
		if err := validateClamps(s, fe); err != nil {
			return err
		}
	case LengthBuckets:
		used["buckets"] = true
		if len(s.Buckets) == 0 {
			return fe("buckets", "needs at least one {weight, min, max}")
		}
		total := 0.0
		for i, b := range s.Buckets {
			sub := fmt.Sprintf("buckets[%d].", i)
			if !(b.Weight >= 0) || math.IsInf(b.Weight, 1) {
				return fe(sub+"weight", fmt.Sprintf("must be a finite number >= 0, got %g", b.Weight))
			}
			if b.Min < 1 || b.Min > MaxTokens {
				return fe(sub+"min", fmt.Sprintf("must be in [1, %d], got %d", MaxTokens, b.Min))
			}
			if b.Max < b.Min || b.Max > MaxTokens {
				return fe(sub+"max", fmt.Sprintf("must be in [min = %d, %d], got %d", b.Min, MaxTokens, b.Max))
			}
			total += b.Weight
		}
		if !(total > 0) || math.IsInf(total, 1) {
			return fe("buckets", fmt.Sprintf("weights must add up to a finite number > 0, got %g", total))
		}
	default:
		return fe("type", fmt.Sprintf("unknown type %q (want one of %s)", s.Type, strings.Join(lengthTypes, ", ")))
	}
	for _, k := range []struct {
		key string
		set bool
	}{
		{"value", s.Value != 0}, {"min", s.Min != 0}, {"max", s.Max != 0},
		{"mean", s.Mean != 0}, {"stddev", s.Stddev != 0}, {"file", s.File != ""},
		{"column", s.Column != ""}, {"buckets", len(s.Buckets) != 0},
	} {
		if k.set && !used[k.key] {
			return fe(k.key, "is not used by type "+s.Type)
		}
	}
	return nil
}

// validateClamps checks the optional Min/Max clamps of normal, lognormal and
// empirical distributions.
func validateClamps(s LengthSpec, fe func(sub, reason string) error) error {
	if s.Min < 0 || s.Min > MaxTokens {
		return fe("min", fmt.Sprintf("must be in [0, %d] (0 = no clamp), got %d", MaxTokens, s.Min))
	}
	if s.Max < 0 || s.Max > MaxTokens {
		return fe("max", fmt.Sprintf("must be in [0, %d] (0 = no clamp), got %d", MaxTokens, s.Max))
	}
	if s.Max > 0 && s.Max < s.Min {
		return fe("max", fmt.Sprintf("is below min (%d < %d)", s.Max, s.Min))
	}
	return nil
}

// bounds returns the effective clamps of a spec: lo >= 1, hi = MaxTokens
// when Max is 0 (no clamp).
func (s LengthSpec) bounds() (lo, hi int) {
	lo, hi = max(1, s.Min), s.Max
	if hi == 0 || hi > MaxTokens {
		hi = MaxTokens
	}
	return lo, hi
}
