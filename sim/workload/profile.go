package workload

import (
	"fmt"
	"math"
)

// RatePoint is one step of a rate profile: from AtS seconds on, requests
// arrive open-loop at RateRPS (0: none) until the next point.
type RatePoint struct {
	AtS     float64 `yaml:"at_s" json:"at_s"`
	RateRPS float64 `yaml:"rate_rps" json:"rate_rps"`
}

// MaxStages bounds a run's stages, given as stages or as a rate profile's
// points: each is reported with its own latency summaries (an ITL
// histogram and up to 2,048 exact values of four per-request figures, then
// a share of a run-wide budget), about 50 KB a stage: 2,000 points of 1.2M
// requests in all peak at 171 MiB against 75 MiB for one point (a day in
// minutes is 1,440).
const MaxStages = 2000

// MaxProfilePoints bounds a rate profile: each point is a stage.
const MaxProfilePoints = MaxStages

// maxProfileRateRPS bounds a profile's rates (the simulator's bound on
// open-loop rates).
const maxProfileRateRPS = 1e6

// maxProfileSeconds bounds a profile's span (what the simulator counts
// stage throughput over, about 11.6 days).
const maxProfileSeconds = 1e6

// validateProfile checks the rate profile of s; field is the workload's
// path. The profile starts at 0, its times increase, its rates are finite
// and >= 0 with at least one above 0, and it ends after its last point.
func (s Spec) validateProfile(field string) error {
	fe := func(sub, reason string) error { return &FieldError{Field: field + "." + sub, Reason: reason} }
	pts := s.RateProfile
	switch {
	case len(pts) > MaxProfilePoints:
		return fe("rate_profile", fmt.Sprintf("has %d points, more than %d", len(pts), MaxProfilePoints))
	case len(pts) == 1 && s.RateProfileEndS == 0:
		return fe("rate_profile", "a single point needs rate_profile_end_s (or give a second point)")
	case s.Trace != nil:
		return fe("rate_profile", "is not used with trace: the trace gives the arrivals")
	case len(s.Stages) > 0:
		return fe("rate_profile", "is not used with stages: give one or the other")
	case s.Arrival.Type == ArrivalClosedLoop:
		return fe("arrival.type", "closed_loop does not follow a rate profile (give poisson, constant or gamma, or leave it empty for poisson)")
	case s.Arrival.RateRPS != 0:
		return fe("arrival.rate_rps", "is given by rate_profile when it is set")
	case s.Arrival.Concurrency != 0:
		return fe("arrival.concurrency", "is not used with rate_profile")
	}
	any := false
	for i, p := range pts {
		f := fmt.Sprintf("rate_profile[%d]", i)
		switch {
		case i == 0 && p.AtS != 0:
			return fe(f+".at_s", fmt.Sprintf("the profile starts at 0, got %g", p.AtS))
		case i > 0 && !(p.AtS > pts[i-1].AtS):
			return fe(f+".at_s", fmt.Sprintf("must be after the previous point's %g s, got %g", pts[i-1].AtS, p.AtS))
		case math.IsInf(p.AtS, 0) || p.AtS > maxProfileSeconds:
			return fe(f+".at_s", fmt.Sprintf("must be at most %g s, got %g", float64(maxProfileSeconds), p.AtS))
		case !(p.RateRPS >= 0) || p.RateRPS > maxProfileRateRPS:
			return fe(f+".rate_rps", fmt.Sprintf("must be a finite number in [0, %g], got %g", float64(maxProfileRateRPS), p.RateRPS))
		}
		any = any || p.RateRPS > 0
	}
	if !any {
		return fe("rate_profile", "every rate is 0: no request would arrive")
	}
	if e := s.RateProfileEndS; e != 0 {
		last := pts[len(pts)-1].AtS
		if !(e > last) || e > maxProfileSeconds {
			return fe("rate_profile_end_s", fmt.Sprintf("must be after the last point's %g s and at most %g s, got %g", last, float64(maxProfileSeconds), e))
		}
	} else if end := profileEnd(pts, 0); end > maxProfileSeconds {
		return fe("rate_profile", fmt.Sprintf("lasts %g s, more than %g s", end, float64(maxProfileSeconds)))
	}
	return nil
}

// profileEnd is when a profile ends: endS when given, else the last point
// holds as long as the step before it.
func profileEnd(pts []RatePoint, endS float64) float64 {
	if endS > 0 {
		return endS
	}
	n := len(pts)
	if n < 2 {
		return 0
	}
	return pts[n-1].AtS + (pts[n-1].AtS - pts[n-2].AtS)
}

// ProfileEndS is when the spec's rate profile ends (0 without one).
func (s Spec) ProfileEndS() float64 {
	if len(s.RateProfile) == 0 {
		return 0
	}
	return profileEnd(s.RateProfile, s.RateProfileEndS)
}

// PeakRateRPS is the highest rate of the spec's rate profile.
func (s Spec) PeakRateRPS() float64 {
	peak := 0.0
	for _, p := range s.RateProfile {
		peak = math.Max(peak, p.RateRPS)
	}
	return peak
}

// LoadStages is the staged load the simulator runs: the spec's stages, or
// its rate profile as one open-loop stage per point (a rate of 0 is an
// idle stage), each split into windows of windowS seconds when windowS >
// 0 (so that each window is reported on its own; a remainder under a
// tenth of a window joins the window before it).
func (s Spec) LoadStages(windowS float64) []StageSpec {
	if len(s.RateProfile) == 0 {
		return s.Stages
	}
	pts := s.RateProfile
	end := s.ProfileEndS()
	var out []StageSpec
	for i, p := range pts {
		until := end
		if i+1 < len(pts) {
			until = pts[i+1].AtS
		}
		for at := p.AtS; until-at > 1e-9*math.Max(1, until); {
			d := until - at
			if windowS > 0 && d > windowS*1.1 {
				d = windowS // a remainder under a tenth of a window stays with this one
			}
			out = append(out, StageSpec{DurationS: d, RateRPS: p.RateRPS})
			at += d
		}
	}
	return out
}

// ValidateRateProfile checks the spec's rate profile alone (its points
// and end), for profiles read outside a scenario; field prefixes the
// errors' fields.
func (s Spec) ValidateRateProfile(field string) error { return s.validateProfile(field) }
