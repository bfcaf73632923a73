package sim

import "math"

// The request path's per-request times (steptime.FrontendCoeffs): each is
// a median times exp(sigma·z), z a standard normal drawn for the request.
// A draw is a pure function of the run's seed, the request's serial and
// the stage of the path, so it does not depend on the order events run in,
// a parked request rebuilt from its record draws what it would have, and
// adding a stage to the path reshuffles no other draw.

// Stages of the path that draw a time per request.
const (
	pathClientSend uint64 = iota + 1
	pathClientReceive
	pathTurnaround
	pathRequest
)

// pathSigmaMax bounds every sigma (steptime's profile check), and
// pathZMax the draws: a request's time is at most exp(pathZMax·sigma) ≈
// 3,000 times its median, so no run can draw a time past the clock.
const (
	pathSigmaMax = 2
	pathZMax     = 4
)

// pathNormal is a standard normal draw for stage kind of request serial,
// clamped to ±pathZMax (a truncated normal: the clamp moves 6e-5 of the
// draws).
func pathNormal(seed uint64, serial int64, kind uint64) float64 {
	h := mix(mix(mix(seed, 0x70617468), kind), uint64(serial))
	u1 := (float64(h>>11) + 0.5) / (1 << 53)
	u2 := float64(mix(h, 1)>>11) / (1 << 53)
	z := math.Sqrt(-2*math.Log(u1)) * math.Cos(2*math.Pi*u2)
	return max(-pathZMax, min(z, pathZMax))
}

// pathTime is stage kind's time for request serial: median µs times its
// spread, scaled, on the clock.
func pathTime(seed uint64, serial int64, kind uint64, medianUS, sigma, scale float64) Time {
	if medianUS <= 0 {
		return 0
	}
	f := 1.0
	if sigma > 0 {
		f = math.Exp(sigma * pathNormal(seed, serial, kind))
	}
	return usToNS(medianUS*f, scale)
}
