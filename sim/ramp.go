package sim

import (
	"math"
	"math/rand/v2"

	"github.com/headroom-sim/headroom/models"
)

// A closed loop of fixed-length requests that all start at once stays in
// lock-step in a deterministic simulator: the users prefill together,
// decode together and finish together, and their next requests arrive
// together, for ever. A real benchmark's users do not stay so: anything
// that differs from one request to the next (the client's dispatch, the
// API server's handling, output lengths) spreads them, and a spread loop
// stays spread. The measured phase of a warmed-up closed loop is therefore
// its stationary regime, with the users' requests spread evenly over one
// request's lifetime. The simulator reaches it directly: with a warm-up of
// at least one request per user (workload.warmup_requests), the users
// start one after another over one estimated request duration, and the
// warm-up requests, which carry the ramp, are left out of the statistics.

// rampSamples is how many lengths the estimate draws.
const rampSamples = 64

// requestDuration estimates how long one request of the closed loop of c
// users takes: its prefill alone, then its output at the decode step time
// of the users' share of one engine rank. It draws lengths from a stream of
// its own, so the run's arrivals and lengths are unchanged.
func (s *Simulator) requestDuration(c int) Time {
	w := s.cfg.Workload
	if w.Input == nil || w.Output == nil || len(s.replicas) == 0 {
		return 0
	}
	rng := rand.New(rand.NewPCG(s.cfg.Seed, streamRamp))
	var in, out float64
	for range rampSamples {
		in += float64(w.Input.Sample(rng))
		out += float64(w.Output.Sample(rng))
	}
	in, out = in/rampSamples, out/rampSamples
	rp := s.replicas[0]
	e := s.cfg.Engine
	window := s.cfg.Model.SlidingWindow
	var pre models.Batch
	chunk := min(int(math.Max(in, 1)), e.MaxNumBatchedTokens)
	pre.AddPrefill(chunk, 0, window, true)
	users := max(1, int(math.Ceil(float64(c)/float64(len(s.replicas)))))
	users = min(users, e.MaxNumSeqs)
	var dec models.Batch
	ctx := int(in + out/2)
	for range users {
		dec.AddDecode(ctx, window)
	}
	chunks := math.Ceil(in / float64(e.MaxNumBatchedTokens))
	d := chunks*rp.model.StepTime(&pre) + math.Max(out-1, 0)*rp.model.StepTime(&dec)
	if !(d > 0) || d > MaxSimulatedSeconds {
		return 0
	}
	return Time(d * 1e9)
}
