package sim

import (
	"github.com/headroom-sim/headroom/models"
	"github.com/headroom-sim/headroom/sim/engine"
	"github.com/headroom-sim/headroom/sim/steptime"
)

// rank is one engine rank: one copy of the model on its TP GPUs, with its
// own scheduler and KV cache, and one of an instance's data-parallel ranks
// (Config.Replicas counts instances, the scenario's replicas; each has
// Engine.DP ranks).
type rank struct {
	id      int32
	eng     *engine.Config
	kv      *kvCache
	model   *steptime.Model
	window  int // the model's sliding window, for attention costs
	waiting waitQueue
	running []*request

	inst      *instance
	busy      bool
	kickSent  bool
	stepStart Time // the current (or last) step began
	lastEnd   Time // the last step ended
	freedLast int  // requests that finished at the last step's end
	produced  []*request
	// firstOfStep is the request whose first token the step ending at
	// firstStepT gave first (for Report.CoStartedRatio).
	firstOfStep *request
	firstStepT  Time
	sched       []scheduledSeq
	batch       models.Batch
	swapSec     float64 // swap transfers to add to the current step
	// lookahead is the KV slots a running request gets beyond its
	// scheduled tokens (speculative decoding's drafts of the next step)
	lookahead int

	// swap space
	swapCap, swapUsed int
	blockBytes        float64
	pcieBytesPerSec   float64

	// statistics
	preemptions  int64
	steps        int64
	usageArea    float64 // ∫ usage dt, in usage·ns
	usagePeak    float64
	usageLast    float64
	usageSince   Time
	maxRunning   int
	promptTokens int64 // prompt tokens computed (including recompute)
}

type scheduledSeq struct {
	r       *request
	n       int
	prefill bool
}

// outstanding is the router's load measure: requests queued or running.
func (rp *rank) outstanding() int { return rp.waiting.len() + len(rp.running) }

// noteUsage integrates KV usage over time up to now.
func (rp *rank) noteUsage(now Time) {
	rp.usageArea += rp.usageLast * float64(now-rp.usageSince)
	rp.usageSince = now
	rp.usageLast = rp.kv.usage()
	if rp.usageLast > rp.usagePeak {
		rp.usagePeak = rp.usageLast
	}
}

// add puts n tokens of r into the step being built.
func (rp *rank) add(r *request, n int) {
	if r.generated > 0 && n == 1 && r.computed == r.numTokens()-1 {
		rp.sched = append(rp.sched, scheduledSeq{r, n, false})
		rp.batch.AddDecode(r.computed+1, rp.window)
		return
	}
	if r.drafts > 0 && rp.addVerify(r, n) {
		return
	}
	rp.sched = append(rp.sched, scheduledSeq{r, n, true})
	rp.batch.AddPrefill(n, r.computed, rp.window, r.computed+n == r.numTokens())
}

// preempt evicts r from the running set: by swap when configured and the
// swap space has room, else by recompute.
func (rp *rank) preempt(r *request) {
	rp.preemptions++
	r.preemptions++
	r.drafts = 0
	n := len(r.blocks)
	rp.kv.registerPrivate(r) // it will look its blocks up (or re-commit them)
	if rp.eng.PreemptionMode == engine.PreemptSwap && rp.swapUsed+n <= rp.swapCap && n > 0 {
		r.swapped, r.swapBlocks = true, int32(n)
		rp.swapUsed += n
		rp.swapSec += float64(n) * rp.blockBytes / rp.pcieBytesPerSec
		rp.kv.release(r)
	} else {
		rp.kv.release(r)
		r.computed = 0
	}
	rp.waiting.pushFront(r)
}

// schedule builds the next step; it returns false when there is nothing to
// run.
func (rp *rank) schedule(now Time) bool {
	rp.sched = rp.sched[:0]
	rp.batch.Reset()
	rp.swapSec = 0
	if rp.eng.Scheduler == engine.SchedulerV0 && !rp.eng.EnableChunkedPrefill {
		rp.scheduleV0(now)
	} else if !rp.scheduleV1(now, true) && len(rp.sched) == 0 {
		// Nothing to overlap with: the engine takes the new requests now.
		rp.scheduleV1(now, false)
	}
	return len(rp.sched) > 0
}

// scheduleV1 follows vLLM V1's Scheduler.schedule: running requests first
// (decodes take one token of budget, unfinished prefills continue), then
// waiting requests in order while the token budget, max_num_seqs and free
// blocks allow; no new admissions in a step that preempted.
//
// With lag (async scheduling), admissions follow vLLM's one-step delay;
// it returns false when that delay held back a request.
func (rp *rank) scheduleV1(now Time, lag bool) bool {
	e := rp.eng
	budget := e.MaxNumBatchedTokens
	thr := e.LongPrefillTokenThreshold
	preempted := false
	for i := 0; i < len(rp.running) && budget > 0; {
		if j, left := rp.decodeRun(i, budget); j > i {
			i, budget = j, left
			continue
		}
		r := rp.running[i]
		n := r.numTokens() + int(r.drafts) - r.computed // drafts: speculative.go
		if thr > 0 && n > thr {
			n = thr
		}
		n = min(n, budget)
		if n <= 0 {
			i++
			continue
		}
		ok := true
		upto := r.computed + n + rp.lookahead
		for rp.kv.units(upto) > len(r.blocks) && !rp.kv.allocate(r, nil, upto) {
			victim := rp.running[len(rp.running)-1]
			rp.running = rp.running[:len(rp.running)-1]
			rp.preempt(victim)
			preempted = true
			if victim == r {
				ok = false
				break
			}
		}
		if !ok {
			break
		}
		rp.add(r, n)
		budget -= n
		i++
	}
	if preempted {
		return true
	}
	// With async scheduling, vLLM schedules step N+1 while step N runs:
	// a request that reached the engine after step N began waits for
	// N+2, and the seats of requests that finished with step N are taken
	// until then (AsyncScheduler; vllm-request-path.md §3).
	cutoff, seats := now, e.MaxNumSeqs
	if lag && e.AsyncScheduling && rp.steps > 0 && rp.lastEnd == now {
		cutoff, seats = rp.stepStart, e.MaxNumSeqs-rp.freedLast
	}
	held := false
	for i := 0; i < rp.waiting.len() && budget > 0; {
		r := rp.waiting.at(i)
		if len(rp.running) >= seats {
			held = held || seats < e.MaxNumSeqs
			break
		}
		if r.arrival > cutoff {
			held = true
			i++
			continue
		}
		computed, hits := r.computed, []int32(nil)
		if !r.swapped && r.computed == 0 {
			hits = rp.kv.lookup(r)
			computed = len(hits) * rp.kv.bs
		}
		n := r.numTokens() - computed
		if thr > 0 && n > thr {
			n = thr
		}
		if !e.EnableChunkedPrefill && n > budget {
			i++ // vLLM skips a prompt that does not fit whole and tries the next
			continue
		}
		n = min(n, budget)
		if !rp.kv.allocate(r, hits, computed+n) {
			break
		}
		rp.waiting.removeAt(i)
		rp.admit(r, now, computed)
		rp.add(r, n)
		budget -= n
	}
	return !held
}

// decodeRun schedules the run of running requests from index i on that
// decode a token that fits their blocks, while budget lasts: what
// scheduleV1's general path does for each (one token, no allocation, add's
// decode case), in a tight loop. It returns the index after the run and
// the budget left. The run reaches the batch as one AddDecodes: its
// context sums are integers, exact in float64, so the order they are
// added in changes nothing.
func (rp *rank) decodeRun(i, budget int) (int, int) {
	shift := rp.kv.shift
	if shift < 0 {
		return i, budget
	}
	running, sched := rp.running, rp.sched
	last := rp.kv.bs + rp.lookahead // the next token's slot is computed+1+lookahead
	window := rp.window
	start := i
	var ctxSum, ctxSWA int
	for ; i < len(running) && budget > 0; i++ {
		r := running[i]
		c := r.computed
		if r.drafts != 0 || r.generated == 0 || c != r.input+r.generated-1 || (c+last)>>shift > len(r.blocks) {
			break
		}
		sched = append(sched, scheduledSeq{r, 1, false})
		ctxSum += c + 1
		if window > 0 {
			ctxSWA += min(c+1, window)
		}
		budget--
	}
	if i > start {
		rp.sched = sched
		rp.batch.AddDecodes(i-start, ctxSum, ctxSWA)
	}
	return i, budget
}

// admit moves r into the running set. (The prefix-cache hit statistics
// were counted by the lookup, once per scheduling attempt, as vLLM does.)
func (rp *rank) admit(r *request, now Time, computed int) {
	if r.swapped {
		// Swap the KV back in over PCIe.
		rp.swapUsed -= int(r.swapBlocks)
		rp.swapSec += float64(r.swapBlocks) * rp.blockBytes / rp.pcieBytesPerSec
		r.swapped, r.swapBlocks = false, 0
	}
	if r.scheduled < 0 {
		r.scheduled = now
		r.hitTokens = int32(computed)
	}
	r.computed = computed
	rp.running = append(rp.running, r)
	if len(rp.running) > rp.maxRunning {
		rp.maxRunning = len(rp.running)
	}
}

// scheduleV0 is vLLM V0's default policy without chunked prefill: waiting
// prompts first, whole, while the budget, max_num_seqs and free blocks
// (keeping a 1% watermark) allow; a step with prefills runs no decodes.
// Otherwise every running request decodes, preempting the most recently
// admitted when blocks run out.
func (rp *rank) scheduleV0(now Time) {
	e := rp.eng
	budget := e.MaxNumBatchedTokens
	watermark := rp.kv.total / 100
	for rp.waiting.len() > 0 && len(rp.running) < e.MaxNumSeqs {
		r := rp.waiting.front()
		computed, hits := r.computed, []int32(nil)
		if !r.swapped && r.computed == 0 {
			hits = rp.kv.lookup(r)
			computed = len(hits) * rp.kv.bs
		}
		n := r.numTokens() - computed
		if n > budget {
			break
		}
		need := rp.kv.units(computed+n) - len(r.blocks)
		if rp.kv.numFree-need < watermark || !rp.kv.allocate(r, hits, computed+n) {
			break
		}
		rp.waiting.popFront()
		rp.admit(r, now, computed)
		rp.add(r, n)
		budget -= n
	}
	if len(rp.sched) > 0 {
		return
	}
	for i := 0; i < len(rp.running); i++ {
		r := rp.running[i]
		n := r.numTokens() - r.computed
		ok := true
		for !rp.kv.allocate(r, nil, r.computed+n) {
			victim := rp.running[len(rp.running)-1]
			rp.running = rp.running[:len(rp.running)-1]
			rp.preempt(victim)
			if victim == r {
				ok = false
				break
			}
		}
		if !ok {
			break
		}
		rp.add(r, n)
	}
}
