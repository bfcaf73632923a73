package sim

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/headroom-sim/headroom/hardware"
	"github.com/headroom-sim/headroom/sim/workload"
)

// RNG streams: one per subsystem, so adding draws to one does not reshuffle
// another.
const (
	streamArrivals uint64 = iota + 1
	streamInput
	streamOutput
	streamPrefix
)

// Segment kinds for content identities.
const (
	segUser uint64 = iota + 1
	segPrefix
	segOutput
	segTraceBlock
)

// driver plays the clients: open-loop arrivals, closed-loop users, staged
// load, multi-turn sessions, trace replay, and the client-side cap on
// requests in flight.
type driver struct {
	s    *Simulator
	w    *Workload
	salt uint64

	rngArr, rngIn, rngOut, rngPrefix *rand.Rand

	created      int // requests created
	limit        int // 0 = no cap
	expected     int // for progress reports
	pendingTurns int // later turns of running sessions not yet created
	stopped      bool

	inter      workload.Interarrival
	arrivalGen int32 // invalidates arrivals scheduled before a stage change
	open       bool
	curStage   int
	stageEnds  []Time // when each stage ends
	openUntil  Time   // open-loop arrivals after this are not scheduled (the stage is over by then)

	think, turnThink Time // closed-loop and multi-turn think times

	concurrency int
	clients     []clientState

	inflight int
	held     deque

	traceIdx int
	sessions int64

	// warm-up phase: requests still running, and the closed-loop clients
	// waiting for them to finish before the measured phase
	warmupOpen int
	heldStart  []int32

	// eagerBlocks turns off the late registration of private blocks
	// (request.lazy): tests check that it changes nothing.
	eagerBlocks bool
}

type clientState struct {
	active, busy bool
}

func newDriver(s *Simulator) (*driver, error) {
	w := &s.cfg.Workload
	seed := s.cfg.Seed
	d := &driver{
		s: s, w: w, salt: mix(seed, 0x6865616472),
		rngArr:    rand.New(rand.NewPCG(seed, streamArrivals)),
		rngIn:     rand.New(rand.NewPCG(seed, streamInput)),
		rngOut:    rand.New(rand.NewPCG(seed, streamOutput)),
		rngPrefix: rand.New(rand.NewPCG(seed, streamPrefix)),
		limit:     w.Requests,
		openUntil: math.MaxInt64,
	}
	// Config.Validate checked these times against the clock.
	d.think, _ = toClock(w.Arrival.ThinkTimeMS, nsPerMS)
	if w.MultiTurn != nil {
		d.turnThink, _ = toClock(w.MultiTurn.ThinkTimeMS, nsPerMS)
	}
	var end Time
	for _, st := range w.Stages {
		dur, _ := toClock(st.DurationS, float64(nsPerSecond))
		end += dur
		d.stageEnds = append(d.stageEnds, end)
	}
	if w.Requests > 0 {
		d.limit += w.Warmup
	}
	switch {
	case w.Trace != nil:
		if len(w.Trace) == 0 {
			return nil, fmt.Errorf("sim: the trace has no requests")
		}
		if d.limit == 0 || d.limit > len(w.Trace) {
			d.limit = len(w.Trace)
		}
	case len(w.Stages) > 0:
	case w.Arrival.Type == "closed_loop":
		if w.Arrival.Concurrency < 1 {
			return nil, &hardware.FieldError{Field: "workload.arrival.concurrency", Reason: "must be >= 1"}
		}
	default:
		it, err := workload.NewInterarrival(w.Arrival.Type, w.Arrival.RateRPS, w.Arrival.CV)
		if err != nil {
			return nil, err
		}
		d.inter = it
	}
	if d.limit == 0 && len(w.Stages) == 0 {
		return nil, &hardware.FieldError{Field: "workload.requests", Reason: "must be >= 1 without stages or a trace"}
	}
	d.expected = d.limit
	if d.expected == 0 {
		for _, st := range w.Stages {
			d.expected += int(st.RateRPS * st.DurationS)
		}
	}
	return d, nil
}

func (d *driver) start() {
	s := d.s
	switch {
	case d.w.Trace != nil:
		s.push(event{t: d.traceTime(0), kind: evArrival})
	case len(d.w.Stages) > 0:
		var t Time
		for i := range d.w.Stages {
			s.push(event{t: t, kind: evStage, client: int32(i)})
			t = d.stageEnds[i]
		}
		s.push(event{t: t, kind: evStage, client: int32(len(d.w.Stages))})
	case d.w.Arrival.Type == "closed_loop":
		d.setConcurrency(0, d.w.Arrival.Concurrency)
	default:
		d.open = true
		s.push(event{t: 0, kind: evArrival, client: d.arrivalGen})
	}
}

func (d *driver) traceTime(i int) Time {
	t, _ := toClock(d.w.Trace[i].ArrivalS, float64(nsPerSecond)) // validated
	return t
}

// room reports whether n more requests may be created.
func (d *driver) room(n int) bool {
	return !d.stopped && (d.limit == 0 || d.created+d.pendingTurns+n <= d.limit)
}

func (d *driver) turns() int {
	if d.w.MultiTurn != nil && d.w.MultiTurn.Turns > 1 {
		return d.w.MultiTurn.Turns
	}
	return 1
}

// startSession creates the first request of a conversation (or the only
// request, without multi-turn) for client c (-1: open loop). It returns
// false when the request budget is spent.
func (d *driver) startSession(t Time, c int32) bool {
	if !d.room(1) {
		return false
	}
	if c >= 0 && d.created >= d.w.Warmup && d.warmupOpen > 0 {
		// The measured phase starts when the warm-up has drained.
		d.heldStart = append(d.heldStart, c)
		return true
	}
	turns := d.turns()
	if d.limit > 0 {
		turns = min(turns, d.limit-d.created-d.pendingTurns)
	}
	var sess *session
	if turns > 1 || d.w.MultiTurn != nil {
		sess = &session{id: d.sessions, turnsLeft: turns, client: c}
		d.sessions++
		d.pendingTurns += turns
		if sp := d.w.SharedPrefix; sp != nil {
			g := d.rngPrefix.IntN(sp.Groups)
			sess.prefix = []segment{{id: d.segID(segPrefix, int64(g)), len: sp.PrefixTokens}}
		}
	}
	d.issue(t, c, sess)
	return true
}

// issue creates the next request (of sess, if any) and sends it.
func (d *driver) issue(t Time, c int32, sess *session) {
	if sess != nil {
		d.pendingTurns--
		sess.turnsLeft--
	}
	d.send(d.newRequest(c, sess), t)
}

func (d *driver) segID(kind uint64, n int64) uint64 { return mix(mix(d.salt, kind), uint64(n)) }

func (d *driver) newRequest(c int32, sess *session) *request {
	serial := int64(d.created)
	d.created++
	r, segs := d.s.pool.get()
	*r = request{serial: serial, stage: int32(d.curStage), client: c, sess: sess, scheduled: -1, firstToken: -1}
	d.markWarmup(r)
	in := d.w.Input.Sample(d.rngIn)
	r.output = d.w.Output.Sample(d.rngOut)
	user := segment{id: d.segID(segUser, serial), len: in}
	switch {
	case sess != nil:
		if cap(segs) < len(sess.prefix)+len(sess.context)+1 {
			segs = make([]segment, 0, len(sess.prefix)+len(sess.context)+1)
		}
		r.segs = append(append(append(segs, sess.prefix...), sess.context...), user)
	case d.w.SharedPrefix != nil:
		g := d.rngPrefix.IntN(d.w.SharedPrefix.Groups)
		r.segs = append(segs, segment{id: d.segID(segPrefix, int64(g)), len: d.w.SharedPrefix.PrefixTokens}, user)
	default:
		r.segs = append(segs, user)
	}
	for _, sg := range r.segs {
		r.input += sg.len
	}
	r.outSeg = d.segID(segOutput, serial)
	if sess == nil || sess.turnsLeft == 0 {
		// Its text and answer (ids of its own serial) come in no other
		// request: no later turn repeats them.
		d.markPrivate(r, r.input-in)
	}
	d.s.issued(r)
	return r
}

// markPrivate makes r's tokens from offset from on private: no other
// request's sequence holds them (see request.lazy).
func (d *driver) markPrivate(r *request, from int) {
	if !d.eagerBlocks && r.input <= math.MaxInt32 {
		r.private, r.lazy = int32(from), true
	}
}

// traceRequest creates the request of trace record i.
func (d *driver) traceRequest(i int) *request {
	rec := &d.w.Trace[i]
	serial := int64(d.created)
	d.created++
	r, segs := d.s.pool.get()
	*r = request{serial: serial, client: -1, scheduled: -1, firstToken: -1, stage: int32(rec.Stage),
		input: rec.InputTokens, output: rec.OutputTokens, outSeg: d.segID(segOutput, serial), segs: segs}
	d.markWarmup(r)
	left := rec.InputTokens
	per := d.w.TraceHashTokens
	if per <= 0 {
		per = workload.MooncakeBlockTokens
	}
	for _, h := range rec.HashIDs {
		if left <= 0 {
			break
		}
		n := min(left, per)
		r.segs = append(r.segs, segment{id: d.segID(segTraceBlock, h), len: n})
		left -= n
	}
	if left > 0 {
		r.segs = append(r.segs, segment{id: d.segID(segUser, serial), len: left})
	}
	d.markPrivate(r, rec.InputTokens-max(left, 0))
	d.s.issued(r)
	return r
}

// send puts r on the wire, or holds it at the client while the client-side
// concurrency cap is reached (that wait is not part of TTFT, as in
// benchmark tools).
func (d *driver) send(r *request, t Time) {
	if d.w.MaxConcurrency > 0 && d.inflight >= d.w.MaxConcurrency {
		d.held.pushBack(r)
		return
	}
	d.inflight++
	r.sent = t
	d.s.m.sent(r, t)
	d.s.push(event{t: t + d.s.rtt/2, kind: evDeliver, req: r})
}

// arrival handles an open-loop or trace arrival.
func (d *driver) arrival(t Time, gen int32) {
	if d.w.Trace != nil {
		if d.traceIdx >= d.limit {
			return
		}
		r := d.traceRequest(d.traceIdx)
		d.traceIdx++
		d.send(r, t)
		if d.traceIdx < d.limit {
			d.s.push(event{t: max(d.traceTime(d.traceIdx), t), kind: evArrival})
		}
		return
	}
	if gen != d.arrivalGen || !d.open || !d.startSession(t, -1) {
		return
	}
	if d.room(1) {
		d.scheduleArrival(t)
	}
}

// scheduleArrival draws the gap to the next open-loop arrival after t and
// schedules it, unless it falls after the current stage. A gap past the
// horizon is scheduled at beyond: the run then ends with ErrTooLong naming
// the rate.
func (d *driver) scheduleArrival(t Time) {
	x := d.inter.Next(d.rngArr)
	gap, ok := toClock(x, float64(nsPerSecond))
	if !ok {
		d.s.fail(fmt.Errorf("%w: the arrival process drew a gap of %g s", ErrInternal, x))
		return
	}
	if t+gap <= d.openUntil {
		d.s.push(event{t: t + gap, kind: evArrival, client: d.arrivalGen})
	}
}

// stage begins stage k (k = len(stages): the load stops).
func (d *driver) stage(t Time, k int) {
	d.arrivalGen++
	if k >= len(d.w.Stages) {
		d.open = false
		d.stopped = true
		d.setConcurrency(t, 0)
		return
	}
	d.curStage = k
	st := d.w.Stages[k]
	if st.RateRPS > 0 {
		typ := d.w.Arrival.Type
		if typ == "" || typ == "closed_loop" {
			typ = "poisson"
		}
		it, err := workload.NewInterarrival(typ, st.RateRPS, d.w.Arrival.CV)
		if err != nil { // Config.Validate refused it already
			d.s.fail(fmt.Errorf("sim: stage %d: %w", k, err))
			return
		}
		d.inter, d.open, d.openUntil = it, true, d.stageEnds[k]
		d.setConcurrency(t, 0)
		d.scheduleArrival(t)
		return
	}
	d.open = false
	d.setConcurrency(t, st.Concurrency)
}

// setConcurrency activates clients up to n (starting the idle ones at t)
// and deactivates the rest (they stop after their current request). With
// a request limit, only the first limit clients are kept: clients start
// lowest first, and each that starts issues a request or waits for the
// warm-up, so one past the limit could never issue (Workload.ValidateSizes
// bounded n without one). Starting them checks the run's context.
func (d *driver) setConcurrency(t Time, n int) {
	if d.limit > 0 {
		n = min(n, d.limit)
	}
	for len(d.clients) < n {
		d.clients = append(d.clients, clientState{})
	}
	d.concurrency = n
	for i := range d.clients {
		if i&4095 == 4095 && d.s.ctx != nil {
			if err := d.s.ctx.Err(); err != nil {
				d.s.fail(err)
				return
			}
		}
		c := &d.clients[i]
		c.active = i < n
		if c.active && !c.busy {
			if d.startSession(t, int32(i)) {
				c.busy = true
			}
		}
	}
}

// wake runs a client whose think time ended: the next turn of its session,
// or a new session.
func (d *driver) wake(t Time, c int32, sess *session) {
	if sess != nil && sess.turnsLeft > 0 {
		if c >= 0 && !d.clients[c].active {
			d.pendingTurns -= sess.turnsLeft
			d.clients[c].busy = false
			return
		}
		d.issue(t, c, sess)
		return
	}
	if c < 0 {
		return
	}
	cl := &d.clients[c]
	if !cl.active || !d.startSession(t, c) {
		cl.busy = false
		return
	}
}

// markWarmup marks the first Warmup requests.
func (d *driver) markWarmup(r *request) {
	if r.serial < int64(d.w.Warmup) {
		r.warmup = true
		d.warmupOpen++
	}
}

// done is called when r completes (ok) or is rejected; back is when the
// client receives the last of the answer.
func (d *driver) done(r *request, back Time, ok bool) {
	d.inflight--
	if r.warmup {
		d.warmupOpen--
		if d.warmupOpen == 0 {
			for _, c := range d.heldStart {
				d.s.push(event{t: back, kind: evWake, client: c})
			}
			d.heldStart = nil
		}
	}
	if d.held.len() > 0 {
		d.send(d.held.popFront(), back)
	}
	if sess := r.sess; sess != nil {
		if ok && sess.turnsLeft > 0 {
			sess.context = append(sess.context, r.segs[len(r.segs)-1], segment{id: r.outSeg, len: r.output})
			d.s.push(event{t: back + d.s.turnaround(r) + d.turnThink, kind: evWake, client: r.client, sess: sess})
			return
		}
		d.pendingTurns -= sess.turnsLeft
		sess.turnsLeft = 0
	}
	if r.client >= 0 {
		d.s.push(event{t: back + d.s.turnaround(r) + d.think, kind: evWake, client: r.client})
	}
}
