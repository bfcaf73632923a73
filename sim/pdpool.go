package sim

import (
	"fmt"
	"math"

	"github.com/headroom-sim/headroom/hardware"
	"github.com/headroom-sim/headroom/sim/engine"
)

// The running state of a disaggregated run (see disagg.go for the path a
// request takes): the two pools, each rank's link and admission queue,
// and the per-request milestones the TTFT breakdown is made of.

// pdPool is one pool: its instances (in the Simulator's insts and
// replicas like any other), its router and its engine limits.
type pdPool struct {
	prefill  bool
	insts    []*instance
	router   string
	rr       int
	eng      *engine.Config
	units    func(int) int
	servable int // the most blocks one request may need
	bs       int
	// per block and GPU, for the transfer
	blockBytes  float64
	gpu         *hardware.GPU
	gpusPerRank int
}

// pdRank is a rank's disaggregation state, indexed by replica id.
type pdRank struct {
	// pending are requests at the decode engine waiting for KV blocks.
	pending deque
	// awaiting counts requests holding blocks while their KV arrives.
	awaiting int
	// linkFree: the rank's links are busy with transfers until then.
	linkFree   Time
	linkBusyNS int64
	busyNS     int64 // time spent stepping
	// seenPreemptions is the preemption count at the last schedule.
	seenPreemptions int64
	// measured work, for the pool's throughput
	promptTokens, outputTokens, handoffs int64
}

// pdState is one request's trip through the two pools.
type pdState struct {
	prefillRank *rank
	decodeInst  *instance
	decodeRank  *rank
	held        []int32 // prefill blocks kept until the KV has left
	// tokens whose KV has been pushed (layer-wise) and when the last push
	// ends
	pushedTokens int
	pushEnd      Time
	prefillEnd   Time // the prompt's last prefill step ended
	admitted     Time // the decode rank allocated its blocks (-1 before)
	kvDone       Time // the KV is on the decode GPUs (-1 before)
	rejected     bool
}

// disagg is a run's disaggregation.
type disagg struct {
	s               *Simulator
	cfg             *Disaggregation
	prefill, decode *pdPool
	rank            []pdRank
	layers          float64
	bytesPerNS      float64 // link bandwidth per GPU
	latency         Time
	sameBlocks      bool // both pools hash blocks of one size
	breakdown       pdBreakdown
	// test hook: a prefill rank hands a request to the decode pool
	onHandOff func(r *request)
}

// evPD sub-kinds, in the event's client field.
const (
	pdPrefillEngine int32 = iota // reaches a prefill engine (after its API server)
	pdToDecode                   // the first-token response reached the proxy
	pdDecodeEngine               // reaches a decode engine (after its API server)
	pdKVDone                     // its KV transfer is done
)

// newDisagg builds the prefill pool behind the decode pool newSimulator
// built from the Config, and marks both.
func newDisagg(s *Simulator) (*disagg, error) {
	cfg := s.cfg
	d := cfg.Disagg
	pd := &disagg{s: s, cfg: d, layers: float64(max(cfg.Model.NumLayers, 1)),
		bytesPerNS: d.Link.BandwidthGBps, sameBlocks: d.Prefill.Engine.BlockSize == cfg.Engine.BlockSize}
	pd.latency, _ = toClock(d.Link.LatencyUS, 1e3) // validated
	pd.decode = &pdPool{insts: s.insts, router: cfg.Router, eng: &cfg.Engine, units: s.units, servable: s.servableBlocks,
		bs: cfg.Engine.BlockSize, blockBytes: cfg.BlockBytes, gpu: cfg.GPU, gpusPerRank: cfg.TP}
	for _, in := range s.insts {
		in.pd = pd.decode
	}
	pc := d.prefillConfig(cfg)
	p := &pdPool{prefill: true, router: pc.Router, eng: &pc.Engine, bs: pc.Engine.BlockSize,
		blockBytes: pc.BlockBytes, gpu: pc.GPU, gpusPerRank: pc.TP, servable: pc.NumGPUBlocks, units: pc.blockUnits()}
	if pc.Engine.Scheduler == engine.SchedulerV0 && !pc.Engine.EnableChunkedPrefill {
		p.servable -= pc.NumGPUBlocks / 100 // scheduleV0's watermark
	}
	for range pc.Replicas {
		in, err := s.addInstance(pc, p)
		if err != nil {
			return nil, fmt.Errorf("prefill pool step-time profile: %w", err)
		}
		p.insts = append(p.insts, in)
	}
	pd.prefill = p
	pd.rank = make([]pdRank, len(s.ranks))
	s.m.onFinish = pd.finish
	return pd, nil
}

// handle runs an evPD event.
func (pd *disagg) handle(e *event) {
	switch e.client {
	case pdPrefillEngine:
		pd.prefillArrival(e.req, pd.s.insts[e.target], e.t)
	case pdToDecode:
		pd.toDecode(e.req, e.t)
	case pdDecodeEngine:
		pd.decodeArrival(e.req, e.t)
	case pdKVDone:
		pd.kvArrived(e.req, e.t)
	}
}

// deliver routes a request that reached the proxy at t to a prefill
// instance (and, for layer-wise pushes, a decode rank) and through the
// prefill API server.
func (pd *disagg) deliver(r *request, t Time) {
	ps := &pdState{admitted: -1, kvDone: -1}
	r.pd = ps
	in := pd.route(pd.prefill)
	r.place = in.id
	in.pending++
	if pd.cfg.Layerwise {
		ps.decodeInst = pd.route(pd.decode)
		ps.decodeInst.pending++
		ps.decodeRank = pd.pickDecodeRank(ps.decodeInst)
	}
	pd.s.admit(in, t+pd.s.clientSend(r), r, toPrefillPool)
}

// prefillArrival is a request reaching a prefill engine: it must fit the
// prefill engine as a prompt with one output token.
func (pd *disagg) prefillArrival(r *request, in *instance, t Time) {
	r.arrival = t
	in.pending--
	p := pd.prefill
	if reason := refusal(r.input+1, p.eng.MaxModelLen, p.units, p.servable); reason != "" {
		if d := r.pd.decodeInst; d != nil {
			d.pending-- // routed ahead for a layer-wise push
		}
		pd.reject(r, t, reason)
		return
	}
	rp := in.pickRank()
	r.place = rp.id
	rp.waiting.pushBack(r)
	pd.s.kick(rp, t)
}

// reject ends a request one of the pools refuses.
func (pd *disagg) reject(r *request, t Time, reason string) {
	s := pd.s
	r.pd.rejected = true
	if !pd.cfg.Layerwise {
		pd.releaseHeld(r, t) // no transfer will read them (a push frees them when it ends)
	}
	s.rejected++
	s.m.reject(r, reason)
	if s.onEnd != nil {
		s.onEnd(r, t, false)
	}
	s.d.done(r, t+s.rtt/2+s.clientReceive(r), false)
}

// stepEnd is the applyStep hook of every pool rank, after the step's
// progress: it counts the rank's work, and on a prefill rank hands the
// requests whose prompt is done to the decode pool (true: applyStep has
// nothing left to do).
func (pd *disagg) stepEnd(rp *rank, t Time) bool {
	rs := &pd.rank[rp.id]
	rs.busyNS += t - rp.stepStart
	if !rp.inst.pd.prefill {
		for _, sc := range rp.sched {
			if sc.prefill && !sc.r.warmup {
				rs.promptTokens += int64(sc.n)
			}
		}
		for _, r := range rp.produced {
			if !r.warmup {
				rs.outputTokens++
			}
		}
		return false
	}
	for _, sc := range rp.sched {
		if !sc.r.warmup {
			rs.promptTokens += int64(sc.n)
		}
		if pd.cfg.Layerwise {
			pd.push(rp, sc.r, t)
		}
	}
	rp.freedLast = 0
	if len(rp.produced) > 0 {
		keep := rp.running[:0]
		for _, r := range rp.running {
			if r.computed < r.numTokens() {
				keep = append(keep, r)
			}
		}
		clear(rp.running[len(keep):])
		rp.running = keep
		_, at := rp.inst.front.outputs(t, len(rp.produced))
		for i, r := range rp.produced {
			pd.handOff(rp, r, t, at(i))
			rp.freedLast++
			if !r.warmup {
				rs.handoffs++
			}
		}
	}
	rp.noteUsage(t)
	return true
}

// handOff takes r, whose prompt rp finished at t, off the prefill rank:
// its blocks are held for the transfer and its response reaches the proxy
// at back.
func (pd *disagg) handOff(rp *rank, r *request, t, back Time) {
	ps := r.pd
	if pd.onHandOff != nil {
		pd.onHandOff(r)
	}
	rp.kv.registerPrivate(r)
	ps.prefillRank, ps.prefillEnd = rp, t
	ps.held, r.blocks = r.blocks, nil
	r.cached, r.computed = 0, 0
	if !pd.sameBlocks {
		// The decode pool hashes blocks of another size.
		r.hashes, r.hashPos = r.hashes[:0], segCursor{}
	}
	pd.s.push(event{t: back, kind: evPD, client: pdToDecode, req: r})
	if pd.cfg.Layerwise {
		pd.breakdown.started(r.warmup)
		pd.s.push(event{t: max(ps.pushEnd, t) + pd.latency, kind: evPD, client: pdKVDone, req: r})
	}
}

// toDecode sends a request from the proxy to its decode instance (the
// decode router's pick, unless chosen at arrival) and through that
// instance's API server.
func (pd *disagg) toDecode(r *request, t Time) {
	ps := r.pd
	if ps.decodeInst == nil {
		ps.decodeInst = pd.route(pd.decode)
		ps.decodeInst.pending++
	}
	pd.s.admit(ps.decodeInst, t, r, toDecodePool)
}

// decodeArrival is a request reaching a decode engine: it must fit the
// decode engine whole; it then waits at its rank for KV blocks.
func (pd *disagg) decodeArrival(r *request, t Time) {
	ps := r.pd
	ps.decodeInst.pending--
	dp := pd.decode
	if reason := refusal(r.input+r.output, dp.eng.MaxModelLen, dp.units, dp.servable); reason != "" {
		pd.reject(r, t, reason)
		return
	}
	if ps.decodeRank == nil {
		ps.decodeRank = pd.pickDecodeRank(ps.decodeInst)
	}
	rp := ps.decodeRank
	r.place = rp.id
	pd.rank[rp.id].pending.pushBack(r)
	pd.s.kick(rp, t)
}

// afterSchedule is the hook after a rank built a step: a decode rank then
// admits waiting requests into KV blocks, as vLLM's scheduler allocates
// the requests whose KV loads asynchronously after the running and
// waiting ones, in order, while a seat is free, and not in a step that
// preempted.
func (pd *disagg) afterSchedule(rp *rank, t Time) {
	rs := &pd.rank[rp.id]
	preempted := rp.preemptions != rs.seenPreemptions
	rs.seenPreemptions = rp.preemptions
	if rp.inst.pd.prefill {
		return
	}
	if len(rp.sched) == 0 && rp.waiting.len() > 0 {
		// Nothing could run. Requests holding their blocks must not wait
		// behind one that needs those blocks (vLLM's queue would stall
		// here), and a request this schedule preempted may now fit the
		// blocks it freed: schedule again.
		if pd.holdersFirst(rp) || preempted {
			pd.s.kick(rp, t)
		}
		return
	}
	if preempted || rp.waiting.len() > 0 {
		return
	}
	watermark := 0
	if rp.eng.Scheduler == engine.SchedulerV0 && !rp.eng.EnableChunkedPrefill {
		watermark = rp.kv.total / 100 // scheduleV0 keeps 1% free
	}
	for rs.pending.len() > 0 && len(rp.running) < rp.eng.MaxNumSeqs {
		r := rs.pending.front()
		hits := rp.kv.lookup(r)
		if rp.kv.numFree-(rp.kv.units(r.input)-len(hits)) < watermark || !rp.kv.allocate(r, hits, r.input) {
			break
		}
		rs.pending.popFront()
		rs.awaiting++
		ps := r.pd
		ps.admitted = t
		if !pd.cfg.Layerwise {
			pd.pull(rp, r, len(hits)*rp.kv.bs, t)
		} else if ps.kvDone >= 0 {
			pd.ready(rp, r, t)
		}
	}
}

// kvArrived is the end of a request's transfer: the prefill frees its
// blocks, and a request the decode rank admitted is ready to decode.
func (pd *disagg) kvArrived(r *request, t Time) {
	ps := r.pd
	pd.releaseHeld(r, t)
	if ps.rejected {
		return
	}
	ps.kvDone = t
	if ps.admitted >= 0 {
		pd.ready(ps.decodeRank, r, t)
	}
}

// ready puts a request whose KV is in rp's blocks in its waiting queue:
// the engine recomputes the last prompt token and samples the first
// output token in its next step. It goes behind the other requests that
// hold their blocks, ahead of preempted ones: it needs no new block to
// run, and behind a preempted request that needs the blocks it holds it
// could wait forever.
func (pd *disagg) ready(rp *rank, r *request, t Time) {
	pd.rank[rp.id].awaiting--
	r.computed = r.input - 1
	rp.kv.commit(r)
	k := 0
	for k < rp.waiting.len() && len(rp.waiting.at(k).blocks) > 0 {
		k++
	}
	rp.waiting.insertAt(k, r)
	pd.s.kick(rp, t)
}

// holdersFirst moves the waiting requests that hold blocks ahead of
// those that do not, keeping each group's order; it reports whether the
// queue changed.
func (pd *disagg) holdersFirst(rp *rank) bool {
	q := &rp.waiting
	var holders, rest []*request
	moved := false
	for i := 0; i < q.len(); i++ {
		r := q.at(i)
		if len(r.blocks) > 0 {
			moved = moved || len(rest) > 0
			holders = append(holders, r)
		} else {
			rest = append(rest, r)
		}
	}
	if !moved {
		return false
	}
	for q.len() > 0 {
		q.popFront()
	}
	for _, r := range append(holders, rest...) {
		q.pushBack(r)
	}
	return true
}

// releaseHeld frees the prefill blocks a request held for its transfer.
func (pd *disagg) releaseHeld(r *request, t Time) {
	ps := r.pd
	if ps == nil || ps.held == nil {
		return
	}
	rp := ps.prefillRank
	rp.kv.releaseBlocks(ps.held)
	ps.held = nil
	rp.noteUsage(t)
	pd.s.kick(rp, t)
}

// route picks an instance of pool p by its router.
func (pd *disagg) route(p *pdPool) *instance {
	insts := p.insts
	if len(insts) == 1 {
		return insts[0]
	}
	switch p.router {
	case RouterLeastOutstanding:
		best := insts[0]
		for _, in := range insts[1:] {
			if pd.load(in) < pd.load(best) {
				best = in
			}
		}
		return best
	case RouterLeastKV:
		best := insts[0]
		for _, in := range insts[1:] {
			u, bu := in.kvUsage(), best.kvUsage()
			if u < bu || (u == bu && pd.load(in) < pd.load(best)) {
				best = in
			}
		}
		return best
	}
	in := insts[p.rr%len(insts)]
	p.rr++
	return in
}

// load is the router's measure of an instance: every request it was sent
// that has not finished or moved on, those waiting for blocks or KV too.
func (pd *disagg) load(in *instance) int {
	n := in.outstanding()
	for _, rp := range in.ranks {
		n += pd.rank[rp.id].pending.len() + pd.rank[rp.id].awaiting
	}
	return n
}

// pickDecodeRank is the data-parallel balancer of a decode instance,
// counting the requests waiting for blocks or KV as waiting.
func (pd *disagg) pickDecodeRank(in *instance) *rank {
	best, bestScore := in.ranks[0], math.MaxInt
	for _, rp := range in.ranks {
		rs := &pd.rank[rp.id]
		if sc := 4*(rp.waiting.len()+rs.pending.len()+rs.awaiting) + len(rp.running); sc < bestScore {
			best, bestScore = rp, sc
		}
	}
	return best
}

// unfinished lists the measured requests waiting at a decode rank for
// blocks (the ranks' queues and running sets are listed by the caller).
func (pd *disagg) unfinished(keep func(*request)) {
	for i := range pd.rank {
		q := &pd.rank[i].pending
		for j := 0; j < q.len(); j++ {
			keep(q.at(j))
		}
	}
}

// insertAt puts r at position i of the queue, keeping the order of the
// rest.
func (d *deque) insertAt(i int, r *request) {
	d.pushFront(r)
	for j := 0; j < i; j++ {
		a, b := (d.head+j)%len(d.buf), (d.head+j+1)%len(d.buf)
		d.buf[a], d.buf[b] = d.buf[b], d.buf[a]
	}
}
