package sim

import (
	"math"

	"github.com/headroom-sim/headroom/models"
)

// instance is one serving endpoint (one `vllm serve`): an API server in
// front of DP data-parallel engine ranks. The router spreads requests over
// instances; an instance's data-parallel load balancer spreads them over
// its ranks. The ranks of a mixture-of-experts model step in lock-step:
// every MoE layer exchanges tokens across them, so a step waits for the
// slowest rank, and a rank without work runs a dummy batch.
type instance struct {
	id       int32
	ranks    []*rank
	lockstep bool
	front    frontend

	busy      bool
	kickSent  bool
	stepStart Time
	dummy     models.Batch
	// pending counts requests routed here that are still in the API
	// server, on their way to a rank; toEngine holds them in the order
	// they reach the engine (the API server is first-come first-served),
	// parked like a waiting queue's backlog when the API server is what
	// binds.
	pending  int
	toEngine waitQueue
	// pd is the pool of a disaggregated run (nil otherwise).
	pd *pdPool
}

// outstanding is the router's load measure for the instance: every
// request it was sent that has not finished.
func (in *instance) outstanding() int {
	n := in.pending
	for _, rp := range in.ranks {
		n += rp.outstanding()
	}
	return n
}

// kvUsage is the instance's mean KV usage.
func (in *instance) kvUsage() float64 {
	var u float64
	for _, rp := range in.ranks {
		u += rp.kv.usage()
	}
	return u / float64(len(in.ranks))
}

// pickRank is vLLM's data-parallel balancer: the rank with the fewest
// 4 × waiting + running requests (DPLBAsyncMPClient), lowest index first.
func (in *instance) pickRank() *rank {
	best, bestScore := in.ranks[0], math.MaxInt
	for _, rp := range in.ranks {
		if sc := 4*rp.waiting.len() + len(rp.running); sc < bestScore {
			best, bestScore = rp, sc
		}
	}
	return best
}

// kickGroup asks a lock-stepped instance to start a step at t, once.
func (s *Simulator) kickGroup(in *instance, t Time) {
	if in.busy || in.kickSent {
		return
	}
	in.kickSent = true
	s.push(event{t: t, kind: evKick, target: -1 - in.id})
}

// tryStartGroup starts one lock-stepped step on every rank of in: each
// rank schedules its own batch (a dummy one-token batch when it has
// nothing to run), and the step lasts as long as the slowest rank's. The
// ranks agree on one token count, the largest rank's, and pad to it
// (vLLM's gpu_model_runner: coordinate_batch_across_dp all-reduces the
// ranks' counts and every rank runs num_tokens_across_dp's maximum, so
// that their CUDA graphs and MoE collectives match): the MoE layers see
// that many rows from every rank.
func (s *Simulator) tryStartGroup(in *instance, t Time) {
	if in.busy {
		return
	}
	any := false
	most := 1 // a dummy batch's token
	for _, rp := range in.ranks {
		ok := rp.schedule(t)
		if in.pd != nil {
			s.pd.afterSchedule(rp, t)
		}
		rp.noteUsage(t)
		if ok {
			any = true
			most = max(most, rp.batch.Tokens())
		}
	}
	if !any {
		return
	}
	group := most * len(in.ranks)
	var dt float64
	for _, rp := range in.ranks {
		b := &rp.batch
		if len(rp.sched) == 0 {
			in.dummy.Reset()
			in.dummy.AddDecode(1, 0)
			b = &in.dummy
		} else if s.onStep != nil {
			s.onStep(rp, t)
		}
		b.GroupTokens = group
		compute := rp.model.StepTime(b)
		if s.stepTime != nil && len(rp.sched) > 0 {
			compute = s.stepTime(rp)
		} else if s.spec != nil && len(rp.sched) > 0 {
			compute = s.spec.withProposer(rp, compute)
		}
		dt = math.Max(dt, compute+rp.swapSec)
		b.GroupTokens = 0
	}
	d, err := stepClock(dt)
	if err != nil {
		s.fail(err)
		return
	}
	in.busy = true
	in.stepStart = t
	end := t + d
	for _, rp := range in.ranks {
		if len(rp.sched) > 0 {
			rp.busy = true
			rp.steps++
			rp.stepStart = t
		}
	}
	s.push(event{t: end, kind: evStepEnd, target: -1 - in.id})
}

// groupStepEnd applies a finished lock-stepped step on every rank.
func (s *Simulator) groupStepEnd(in *instance, t Time) {
	in.busy = false
	for _, rp := range in.ranks {
		if rp.busy {
			s.applyStep(rp, t)
		}
	}
	s.kickGroup(in, t)
}
