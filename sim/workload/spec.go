package workload

import (
	"fmt"
	"math"
	"strings"
)

// Spec is the `workload:` section of a scenario. Exactly one source of
// arrivals applies: a Trace (which also gives the lengths), Stages, or
// Arrival. Zero values mean "not given".
type Spec struct {
	// Requests is how many requests to send. Required (>= 1) with Arrival
	// alone; with Stages, 0 runs every stage to its end and > 0 also stops
	// after that many; with a Trace, 0 takes the whole trace (Trace.Limit
	// caps it too).
	Requests int `yaml:"requests,omitempty" json:"requests,omitempty"`
	// WarmupRequests run before the measured requests and are left out of
	// every statistic and of the SLA (aiperf --warmup-request-count, vllm
	// bench --num-warmups); closed-loop clients start the measured phase
	// together once the warm-up has drained. They come on top of Requests.
	WarmupRequests int   `yaml:"warmup_requests,omitempty" json:"warmup_requests,omitempty"`
	Seed           int64 `yaml:"seed,omitempty" json:"seed,omitempty"`
	// Arrival is the arrival process. With Stages its rate_rps and
	// concurrency come from each stage: Arrival then only shapes the
	// open-loop stages (poisson when type is empty; gamma needs cv) and gives
	// think_time_ms to the concurrency stages.
	Arrival ArrivalSpec `yaml:"arrival,omitempty" json:"arrival,omitzero"`
	// MaxConcurrency caps requests in flight at the client (0 = none), as
	// `vllm bench --max-concurrency` does; waiting at the client is not part
	// of TTFT.
	MaxConcurrency int         `yaml:"max_concurrency,omitempty" json:"max_concurrency,omitempty"`
	Stages         []StageSpec `yaml:"stages,omitempty" json:"stages,omitempty"`
	// RateProfile is open-loop traffic that changes over time: each
	// point's rate holds from its at_s until the next point's at_s; the
	// last one until RateProfileEndS, or for as long as the step before it.
	// Arrival then only shapes the arrivals (poisson when type is empty).
	// With Requests 0 the whole profile runs.
	RateProfile []RatePoint `yaml:"rate_profile,omitempty" json:"rate_profile,omitempty"`
	// RateProfileEndS is when the profile ends (0: see RateProfile).
	RateProfileEndS float64           `yaml:"rate_profile_end_s,omitempty" json:"rate_profile_end_s,omitempty"`
	InputTokens     LengthSpec        `yaml:"input_tokens,omitempty" json:"input_tokens,omitzero"`
	OutputTokens    LengthSpec        `yaml:"output_tokens,omitempty" json:"output_tokens,omitzero"`
	SharedPrefix    *SharedPrefixSpec `yaml:"shared_prefix,omitempty" json:"shared_prefix,omitempty"`
	MultiTurn       *MultiTurnSpec    `yaml:"multi_turn,omitempty" json:"multi_turn,omitempty"`
	Trace           *TraceSpec        `yaml:"trace,omitempty" json:"trace,omitempty"`
}

// Validate checks the section; field is its path, normally "workload". The
// error is a *FieldError for the first problem found.
func (s Spec) Validate(field string) error {
	fe := func(sub, reason string) error { return &FieldError{Field: field + "." + sub, Reason: reason} }
	if s.Requests < 0 {
		return fe("requests", fmt.Sprintf("must be >= 0, got %d", s.Requests))
	}
	if s.WarmupRequests < 0 || s.WarmupRequests > 10_000_000 {
		return fe("warmup_requests", fmt.Sprintf("must be in [0, 10000000], got %d", s.WarmupRequests))
	}
	if s.MaxConcurrency < 0 {
		return fe("max_concurrency", fmt.Sprintf("must be >= 0 (0 = no cap), got %d", s.MaxConcurrency))
	}
	if len(s.RateProfile) > 0 {
		if err := s.validateProfile(field); err != nil {
			return err
		}
	} else if s.RateProfileEndS != 0 {
		return fe("rate_profile_end_s", "is only used with rate_profile")
	}
	if s.Trace != nil {
		for _, k := range []struct {
			key string
			set bool
		}{
			{"arrival", !s.Arrival.IsZero()}, {"stages", len(s.Stages) > 0},
			{"input_tokens", !s.InputTokens.IsZero()}, {"output_tokens", !s.OutputTokens.IsZero()},
			{"shared_prefix", s.SharedPrefix != nil}, {"multi_turn", s.MultiTurn != nil},
		} {
			if k.set {
				return fe(k.key, "is not used with trace: the trace gives arrivals, lengths and prefixes")
			}
		}
		return s.Trace.Validate(field + ".trace")
	}
	if len(s.RateProfile) > 0 {
		if a := s.Arrival; a.Type != "" {
			a.RateRPS = 1 // the profile gives the rates: check the shape
			if err := a.Validate(field + ".arrival"); err != nil {
				return err
			}
		} else if s.Arrival.CV != 0 || s.Arrival.ThinkTimeMS != 0 {
			return fe("arrival", "only shapes the profile's arrivals: give type poisson, constant or gamma (with cv)")
		}
	} else if len(s.Stages) > 0 {
		if len(s.Stages) > MaxStages {
			return fe("stages", fmt.Sprintf("has %d stages, more than %d", len(s.Stages), MaxStages))
		}
		for i, st := range s.Stages {
			if err := st.Validate(fmt.Sprintf("%s.stages[%d]", field, i)); err != nil {
				return err
			}
		}
		if err := s.Arrival.validate(field+".arrival", false); err != nil {
			return err
		}
	} else {
		if err := s.Arrival.Validate(field + ".arrival"); err != nil {
			return err
		}
		if s.Requests < 1 {
			return fe("requests", "must be >= 1 (or give stages or a trace)")
		}
	}
	if err := s.InputTokens.Validate(field + ".input_tokens"); err != nil {
		return err
	}
	if err := s.OutputTokens.Validate(field + ".output_tokens"); err != nil {
		return err
	}
	if s.SharedPrefix != nil {
		if err := s.SharedPrefix.Validate(field + ".shared_prefix"); err != nil {
			return err
		}
	}
	if s.MultiTurn != nil {
		if err := s.MultiTurn.Validate(field + ".multi_turn"); err != nil {
			return err
		}
	}
	return nil
}

// StageSpec is one step of a load staircase: DurationS seconds at an
// open-loop RateRPS or with Concurrency closed-loop clients (exactly one of
// the two).
type StageSpec struct {
	DurationS   float64 `yaml:"duration_s" json:"duration_s"`
	RateRPS     float64 `yaml:"rate_rps,omitempty" json:"rate_rps,omitempty"`
	Concurrency int     `yaml:"concurrency,omitempty" json:"concurrency,omitempty"`
}

// Validate checks the stage; the error is a *FieldError.
func (s StageSpec) Validate(field string) error {
	fe := func(sub, reason string) error { return &FieldError{Field: field + "." + sub, Reason: reason} }
	if !(s.DurationS > 0) || math.IsInf(s.DurationS, 1) {
		return fe("duration_s", fmt.Sprintf("must be a finite number > 0, got %g", s.DurationS))
	}
	if !(s.RateRPS >= 0) || math.IsInf(s.RateRPS, 1) {
		return fe("rate_rps", fmt.Sprintf("must be a finite number >= 0, got %g", s.RateRPS))
	}
	if s.Concurrency < 0 {
		return fe("concurrency", fmt.Sprintf("must be >= 0, got %d", s.Concurrency))
	}
	switch {
	case s.RateRPS > 0 && s.Concurrency > 0:
		return &FieldError{Field: field, Reason: "give rate_rps or concurrency, not both"}
	case s.RateRPS == 0 && s.Concurrency == 0:
		return &FieldError{Field: field, Reason: "needs rate_rps > 0 or concurrency > 0"}
	}
	return nil
}

// SharedPrefixSpec makes each request start with one of Groups common
// prefixes of PrefixTokens tokens; input_tokens is the part after it.
type SharedPrefixSpec struct {
	Groups       int `yaml:"groups" json:"groups"`
	PrefixTokens int `yaml:"prefix_tokens" json:"prefix_tokens"`
}

// Validate checks the spec; the error is a *FieldError.
func (s SharedPrefixSpec) Validate(field string) error {
	if s.Groups < 1 {
		return &FieldError{Field: field + ".groups", Reason: fmt.Sprintf("must be >= 1, got %d", s.Groups)}
	}
	if s.PrefixTokens < 1 || s.PrefixTokens > MaxTokens {
		return &FieldError{Field: field + ".prefix_tokens", Reason: fmt.Sprintf("must be in [1, %d], got %d", MaxTokens, s.PrefixTokens)}
	}
	return nil
}

// MultiTurnSpec makes each session Turns requests long: a later turn's
// prompt carries the earlier turns (prompts and outputs) as its prefix, and
// is sent ThinkTimeMS after the previous turn finished.
type MultiTurnSpec struct {
	Turns       int     `yaml:"turns" json:"turns"`
	ThinkTimeMS float64 `yaml:"think_time_ms,omitempty" json:"think_time_ms,omitempty"`
}

// Validate checks the spec; the error is a *FieldError.
func (s MultiTurnSpec) Validate(field string) error {
	if s.Turns < 1 {
		return &FieldError{Field: field + ".turns", Reason: fmt.Sprintf("must be >= 1, got %d", s.Turns)}
	}
	if !(s.ThinkTimeMS >= 0) || math.IsInf(s.ThinkTimeMS, 1) {
		return &FieldError{Field: field + ".think_time_ms", Reason: fmt.Sprintf("must be a finite number >= 0, got %g", s.ThinkTimeMS)}
	}
	return nil
}

// TraceSpec replays a request trace: File is read by the caller and parsed
// with ParseTrace in Format; Speedup divides the inter-arrival times (0 = 1,
// 2 = twice the rate); Limit keeps the first Limit requests (0 = all).
type TraceSpec struct {
	File    string  `yaml:"file" json:"file"`
	Format  string  `yaml:"format" json:"format"`
	Speedup float64 `yaml:"speedup,omitempty" json:"speedup,omitempty"`
	Limit   int     `yaml:"limit,omitempty" json:"limit,omitempty"`
}

// Validate checks the spec; the error is a *FieldError.
func (s TraceSpec) Validate(field string) error {
	fe := func(sub, reason string) error { return &FieldError{Field: field + "." + sub, Reason: reason} }
	if s.File == "" {
		return fe("file", "is required")
	}
	if !isTraceFormat(s.Format) {
		return fe("format", fmt.Sprintf("unknown format %q (want one of %s)", s.Format, strings.Join(TraceFormats(), ", ")))
	}
	if !(s.Speedup >= 0) || math.IsInf(s.Speedup, 1) {
		return fe("speedup", fmt.Sprintf("must be a finite number >= 0 (0 = 1), got %g", s.Speedup))
	}
	if s.Limit < 0 {
		return fe("limit", fmt.Sprintf("must be >= 0 (0 = all), got %d", s.Limit))
	}
	return nil
}

// Apply returns the records the spec selects: the first Limit of them, with
// arrival times divided by Speedup. recs is not changed; HashIDs slices are
// shared with it.
func (s TraceSpec) Apply(recs []TraceRecord) []TraceRecord {
	n := len(recs)
	if s.Limit > 0 && s.Limit < n {
		n = s.Limit
	}
	out := append([]TraceRecord(nil), recs[:n]...)
	if s.Speedup > 0 && s.Speedup != 1 {
		for i := range out {
			out[i].ArrivalS /= s.Speedup
		}
	}
	return out
}
