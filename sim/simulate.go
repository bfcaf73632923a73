package sim

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"

	"github.com/headroom-sim/headroom/hardware"
	"github.com/headroom-sim/headroom/sim/engine"
)

// ErrEventLimit is returned when a run exceeds its event limit.
var ErrEventLimit = errors.New("simulation exceeded its event limit")

// ErrTooLong is returned when simulated time passes MaxSimulatedSeconds.
var ErrTooLong = errors.New("simulation exceeded its time span")

// ErrInternal marks a fault of the simulator or of its step-time model
// (a report that loses requests, a step time that is not a number), not
// of the input: callers report it as theirs to fix, not the user's.
var ErrInternal = errors.New("simulator fault")

// MaxSimulatedSeconds bounds the simulated time of a run (about 116 days):
// a trace whose timestamps mix clocks, or a near-zero rate, would
// otherwise run on.
const MaxSimulatedSeconds = 10_000_000

// Simulator runs one configuration. Use Run.
type Simulator struct {
	cfg   *Config
	log   *slog.Logger
	q     eventQueue
	now   Time
	ranks []*rank
	insts []*instance
	rr    int
	m     *metrics
	pool  reqPool // finished requests' structs, for new ones
	d     *driver
	pd    *disagg     // nil without Config.Disagg
	as    *autoscaler // nil without Config.Autoscale
	rtt   Time
	units func(int) int
	// servableBlocks is the most blocks one request may need: the whole
	// cache, less V0's 1% watermark (vLLM V0 ignores a prompt that would
	// leave fewer free blocks than the watermark: AllocStatus.NEVER).
	servableBlocks int

	err       error           // the first error of the run (see fail)
	ctx       context.Context // the run's, for loops inside one event
	events    int64
	completed int
	rejected  int
	tickNext  Time
	// Progress, if set, is called with the fraction of requests finished.
	progress func(float64)
	// test hooks: after a step is scheduled, and when a request ends
	onStep  func(rp *rank, t Time)
	onEnd   func(r *request, t Time, ok bool)
	onIssue func(r *request)
	// stepTime, if set, replaces the step-time model (tests: a fixed step
	// time makes every timestamp computable by hand).
	stepTime func(rp *rank) float64
	// spec is speculative decoding (speculative.go; nil: off).
	spec *specState
}

// Option adjusts a run.
type Option func(*Simulator)

// WithProgress reports progress (0–1) about every 1% of requests.
func WithProgress(f func(float64)) Option { return func(s *Simulator) { s.progress = f } }

// RequestSample is one completed request, for plots and exports.
type RequestSample struct {
	SentS, FirstTokenS, FinishS float64 // client send, first token and last token times (s)
	TTFTMS, TPOTMS, E2EMS       float64 // TPOTMS is 0 for single-token outputs
	InputTokens, OutputTokens   int
	Stage                       int
	Preemptions                 int
}

// WithRequestSink calls f for every completed request, in completion order.
func WithRequestSink(f func(RequestSample)) Option { return func(s *Simulator) { s.m.requestSink = f } }

// WithTokenSink calls f for every inter-token gap: the time of the later
// token (s) and the gap (ms).
func WithTokenSink(f func(tS, gapMS float64)) Option { return func(s *Simulator) { s.m.tokenSink = f } }

// Sink receives what a run observes: each completed request and each
// inter-token gap (the time of the later token in s, the gap in ms).
// internal/adapter/plot's Distributions and internal/adapter/promexport's
// Collector are sinks.
type Sink interface {
	Request(r RequestSample)
	Token(tS, gapMS float64)
}

// WithSinks feeds every sink from the run: the simulator keeps one request
// sink and one token sink, so collectors that share a run go through here
// rather than each passing its own options. Without sinks it changes
// nothing.
func WithSinks(sinks ...Sink) Option {
	return func(s *Simulator) {
		switch len(sinks) {
		case 0:
		case 1:
			WithRequestSink(sinks[0].Request)(s)
			WithTokenSink(sinks[0].Token)(s)
		default:
			WithRequestSink(func(r RequestSample) {
				for _, k := range sinks {
					k.Request(r)
				}
			})(s)
			WithTokenSink(func(tS, gapMS float64) {
				for _, k := range sinks {
					k.Token(tS, gapMS)
				}
			})(s)
		}
	}
}

// Run simulates cfg and returns its report. It stops early with ctx's
// error when ctx is cancelled, and with ErrEventLimit past the event limit.
func Run(ctx context.Context, cfg Config, opts ...Option) (*Report, error) {
	s, err := newSimulator(&cfg)
	if err != nil {
		return nil, err
	}
	for _, o := range opts {
		o(s)
	}
	return s.run(ctx)
}

// run runs the event loop to the end and assembles the report.
func (s *Simulator) run(ctx context.Context) (*Report, error) {
	if err := s.loop(ctx); err != nil {
		return nil, err
	}
	rep := s.report()
	if err := checkAccounting(rep.Requests); err != nil {
		return nil, err
	}
	if n := rep.Requests.Unfinished; n > 0 {
		s.log.Warn("requests left unfinished: the engine could never schedule them", "unfinished", n, "total", rep.Requests.Total)
	}
	return rep, nil
}

func newSimulator(cfg *Config) (*Simulator, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	rtt, _ := toClock(cfg.NetworkRTTMS, nsPerMS) // validated
	s := &Simulator{cfg: cfg, log: cfg.Logger, rtt: rtt}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	s.units = cfg.blockUnits()
	for range cfg.instanceSlots() {
		if _, err := s.addInstance(cfg, nil); err != nil {
			return nil, fmt.Errorf("step-time profile: %w", err)
		}
	}
	if cfg.Speculative != nil {
		sp, err := newSpecState(cfg)
		if err != nil {
			return nil, err
		}
		s.spec = sp
	}
	s.servableBlocks = cfg.NumGPUBlocks
	if cfg.Engine.Scheduler == engine.SchedulerV0 && !cfg.Engine.EnableChunkedPrefill {
		s.servableBlocks -= cfg.NumGPUBlocks / 100 // scheduleV0's watermark
	}
	s.m = newMetrics(cfg.Workload.Stages, cfg.Report.StallThresholdMS, s.rtt, cfg.SLA)
	s.m.perSecond = cfg.Report.Timeseries || len(cfg.Workload.Stages) > 0
	s.m.all.reserve(max(cfg.Workload.Requests, len(cfg.Workload.Trace)))
	d, err := newDriver(s)
	if err != nil {
		return nil, err
	}
	s.d = d
	if cfg.Disagg == nil {
		s.pool.on = true
		for _, rp := range s.ranks {
			rp.waiting.park = newParking(d, rp.id, &s.pool)
		}
		for _, in := range s.insts {
			in.toEngine.park = newParking(d, in.id, &s.pool)
		}
	}
	if cfg.Disagg != nil {
		if s.pd, err = newDisagg(s); err != nil {
			return nil, err
		}
	}
	if cfg.Autoscale != nil {
		s.as = newAutoscaler(s)
	}
	return s, nil
}

func (s *Simulator) push(e event) { s.q.push(e) }

func (s *Simulator) loop(ctx context.Context) error {
	limit := s.cfg.MaxEvents
	if limit <= 0 {
		limit = DefaultMaxEvents
	}
	s.ctx = ctx
	if err := ctx.Err(); err != nil {
		return err // ended before the run began (a deadline already past)
	}
	s.d.start()
	if s.err != nil {
		return s.err
	}
	if s.as != nil {
		s.as.start()
	}
	if s.cfg.Report.Timeseries {
		s.tickNext = nsPerSecond
		s.push(event{t: s.tickNext, kind: evTick})
	}
	nextProgress := 0.01
	for s.q.len() > 0 {
		e := s.q.pop()
		if e.t > horizon {
			if s.idleAfterHorizon(&e) {
				continue
			}
			return s.pastHorizon(&e)
		}
		s.now = e.t
		s.events++
		if s.events > limit {
			return fmt.Errorf("%w (%d events)", ErrEventLimit, limit)
		}
		if s.events&4095 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		switch e.kind {
		case evArrival:
			s.d.arrival(e.t, e.client)
		case evWake:
			s.d.wake(e.t, e.client, e.sess)
		case evStage:
			s.d.stage(e.t, int(e.client))
		case evDeliver:
			s.deliver(e.req, e.t)
		case evTokenize:
			s.tokenizerDeadline(s.insts[e.target], e.client, e.t)
		case evEngine:
			s.engineArrival(s.insts[e.target].toEngine.popFront(), e.t)
		case evPD:
			s.pd.handle(&e)
		case evStepEnd:
			if e.target < 0 {
				s.groupStepEnd(s.insts[-1-e.target], e.t)
			} else {
				s.stepEnd(s.ranks[e.target], e.t)
			}
		case evKick:
			if e.target < 0 {
				in := s.insts[-1-e.target]
				in.kickSent = false
				s.tryStartGroup(in, e.t)
			} else {
				rp := s.ranks[e.target]
				rp.kickSent = false
				s.tryStart(rp, e.t)
			}
		case evTick:
			s.tick(e.t)
		case evScale, evReady:
			s.as.handle(&e)
		}
		if s.err != nil {
			return s.err
		}
		if s.progress != nil && s.d.expected > 0 {
			if f := float64(s.completed+s.rejected) / float64(s.d.expected); f >= nextProgress {
				s.progress(math.Min(f, 1))
				nextProgress = f + 0.01
			}
		}
	}
	return nil
}

// kick asks rank rp to schedule at time t, once (its whole group, for
// a lock-stepped rank).
func (s *Simulator) kick(rp *rank, t Time) {
	if rp.inst.lockstep {
		s.kickGroup(rp.inst, t)
		return
	}
	if rp.busy || rp.kickSent {
		return
	}
	rp.kickSent = true
	s.push(event{t: t, kind: evKick, target: rp.id})
}

// deliver hands a request that reached the serving endpoint at t to an
// instance (the router's choice) and through its API server, which passes
// it to an engine rank when parsing and tokenisation are done.
func (s *Simulator) deliver(r *request, t Time) {
	if s.pd != nil {
		s.pd.deliver(r, t) // to the prefill pool
		return
	}
	in := s.route()
	r.place = in.id // the instance, until a rank takes it
	in.pending++
	s.admit(in, t+s.clientSend(r), r, toEngine)
}

// clientSend is r's time on the client's send path (requestpath.go).
func (s *Simulator) clientSend(r *request) Time {
	c := &s.cfg.Profile.Frontend
	return pathTime(s.cfg.Seed, r.serial, pathClientSend, c.ClientUS, c.ClientSigma, orOne(s.cfg.Profile.Scale.Overhead))
}

// clientReceive is r's time on the client's receive path: from the API
// server's write of an event to the client's timestamp of it.
func (s *Simulator) clientReceive(r *request) Time {
	c := &s.cfg.Profile.Frontend
	return pathTime(s.cfg.Seed, r.serial, pathClientReceive, c.ClientReceiveUS, c.ClientSigma, orOne(s.cfg.Profile.Scale.Overhead))
}

// turnaround is a closed-loop client's time from r's last event to its
// next request (the think time comes on top).
func (s *Simulator) turnaround(r *request) Time {
	c := &s.cfg.Profile.Frontend
	return pathTime(s.cfg.Seed, r.serial, pathTurnaround, c.TurnaroundUS, c.ClientSigma, orOne(s.cfg.Profile.Scale.Overhead))
}

// engineArrival is a request reaching the engine at t: vLLM's input
// processor refuses what can never be served, the data-parallel balancer
// picks a rank, and the rank takes it at its next step boundary.
func (s *Simulator) engineArrival(r *request, t Time) {
	r.arrival = t
	s.insts[r.place].pending--
	if reason := refusal(r.input+r.output, s.cfg.Engine.MaxModelLen, s.units, s.servableBlocks); reason != "" {
		s.rejected++
		s.m.reject(r, reason)
		if s.onEnd != nil {
			s.onEnd(r, t, false)
		}
		s.d.done(r, t+s.rtt/2+s.clientReceive(r), false)
		return
	}
	rp := s.insts[r.place].pickRank()
	r.place = rp.id
	rp.waiting.pushBack(r)
	s.kick(rp, t)
}

// refusal is why vLLM's input processor refuses a request of n tokens
// (prompt and output) from an engine of maxModelLen tokens whose KV cache
// serves at most servable blocks ("" when it takes it).
func refusal(n, maxModelLen int, units func(int) int, servable int) string {
	switch {
	case n > maxModelLen:
		return "exceeds_max_model_len"
	case units(n) > servable:
		return "exceeds_kv_cache"
	}
	return ""
}

// route picks an instance for a new request (of those serving, with an
// autoscaler).
func (s *Simulator) route() *instance {
	insts := s.insts
	if s.as != nil {
		insts = s.as.routable()
	}
	if len(insts) == 1 {
		return insts[0]
	}
	switch s.cfg.Router {
	case RouterLeastOutstanding:
		best := insts[0]
		for _, in := range insts[1:] {
			if in.outstanding() < best.outstanding() {
				best = in
			}
		}
		return best
	case RouterLeastKV:
		best := insts[0]
		for _, in := range insts[1:] {
			u, bu := in.kvUsage(), best.kvUsage()
			if u < bu || (u == bu && in.outstanding() < best.outstanding()) {
				best = in
			}
		}
		return best
	}
	in := insts[s.rr%len(insts)]
	s.rr++
	return in
}

// tryStart starts a step on an idle rank if it has work.
func (s *Simulator) tryStart(rp *rank, t Time) {
	if rp.busy {
		return
	}
	ok := rp.schedule(t)
	if rp.inst.pd != nil {
		s.pd.afterSchedule(rp, t)
	}
	rp.noteUsage(t)
	if !ok {
		return
	}
	if s.onStep != nil {
		s.onStep(rp, t)
	}
	compute := 0.0
	if s.stepTime != nil {
		compute = s.stepTime(rp)
	} else {
		compute = rp.model.StepTime(&rp.batch)
		if s.spec != nil {
			compute = s.spec.withProposer(rp, compute)
		}
	}
	dt, err := stepClock(compute + rp.swapSec)
	if err != nil {
		s.fail(err)
		return
	}
	end := t + dt
	rp.busy = true
	rp.steps++
	rp.stepStart = t
	s.push(event{t: end, kind: evStepEnd, target: rp.id})
}

// stepEnd applies a finished step of an independent rank and lets it
// schedule the next.
func (s *Simulator) stepEnd(rp *rank, t Time) {
	s.applyStep(rp, t)
	s.kick(rp, t)
}

// applyStep applies a step that ended at t: progress, tokens (through the
// API server to the client), completions.
func (s *Simulator) applyStep(rp *rank, t Time) {
	rp.busy = false
	rp.lastEnd = t
	if rp.inst.pd == nil {
		s.applyStepPlain(rp, t)
		return
	}
	rp.produced = rp.produced[:0]
	for _, sc := range rp.sched {
		r := sc.r
		if sc.prefill {
			s.m.prompt(sc.n, t)
			rp.promptTokens += int64(sc.n)
		}
		r.computed += sc.n
		if r.computed >= (r.cached+1)*rp.kv.bs { // a block filled: register it
			rp.kv.commit(r)
		}
		if r.computed == r.numTokens() {
			rp.produced = append(rp.produced, r)
		}
	}
	if rp.inst.pd != nil && s.pd.stepEnd(rp, t) {
		return // a prefill rank: finished prompts left for the decode pool
	}
	anyDone := false
	if len(rp.produced) > 0 {
		// The API server writes request i's event at first + tok·i; the
		// client receives it half a round trip later.
		begin, first, tok := rp.inst.front.batch(t, len(rp.produced))
		s.m.countSecond(&s.m.secOut, int(t/nsPerSecond), int64(len(rp.produced)))
		at := first + s.rtt/2
		for _, r := range rp.produced {
			if s.produce(rp, r, t, begin, at) {
				anyDone = true
			}
			at += tok
		}
		s.m.flushGaps()
	}
	rp.freedLast = 0
	rp.firstOfStep = nil // the step's first tokens are all out
	if anyDone {
		s.finishDone(rp, t)
	}
	rp.noteUsage(t)
}

// produce gives r the token its step, ended at t, sampled: the API server
// began the step's output batch at begin and the client receives r's
// event at at. It reports whether that was r's last token.
func (s *Simulator) produce(rp *rank, r *request, t, begin, at Time) bool {
	r.generated++
	if r.generated == 1 {
		r.engineFirst, r.serverFirst = t, begin
		if rp.firstOfStep != nil && rp.firstStepT == t {
			rp.firstOfStep.coStart, r.coStart = true, true
		} else {
			rp.firstOfStep, rp.firstStepT = r, t
		}
	}
	s.m.delivered(r, at)
	if s.spec != nil {
		s.specDelivered(r, t)
	}
	return r.generated >= r.output
}

// applyStepPlain is applyStep for a rank outside a disaggregated pool,
// in one pass over the step: each request's progress, block registration
// and token delivery together. Request i's event is written at first +
// tok·i (neither depends on how many requests the batch carries, which the
// API server learns after the pass, as batchEnd).
func (s *Simulator) applyStepPlain(rp *rank, t Time) {
	begin, first, tok := rp.inst.front.batchStart(t)
	at := first + s.rtt/2
	bs := rp.kv.bs
	n := 0
	anyDone := false
	runs := s.spec == nil && s.m.tokenSink == nil
	for k := 0; k < len(rp.sched); k++ {
		if runs {
			j, next := s.deliverRun(rp, k, at, tok)
			n += j - k
			k, at = j, next
			if k == len(rp.sched) {
				break
			}
		}
		sc := rp.sched[k]
		r := sc.r
		if sc.prefill {
			s.m.prompt(sc.n, t)
			rp.promptTokens += int64(sc.n)
		}
		r.computed += sc.n
		if r.computed >= (r.cached+1)*bs { // a block filled: register it
			rp.kv.commit(r)
		}
		if r.computed != r.numTokens() {
			continue
		}
		n++
		if s.produce(rp, r, t, begin, at) {
			anyDone = true
		}
		at += tok
	}
	if n > 0 {
		rp.inst.front.batchEnd(begin, n)
		s.m.countSecond(&s.m.secOut, int(t/nsPerSecond), int64(n))
		s.m.flushGaps()
	}
	rp.freedLast = 0
	rp.firstOfStep = nil // the step's first tokens are all out
	if anyDone {
		s.finishDone(rp, t)
	}
	rp.noteUsage(t)
}

// deliverRun applies the entries of rp.sched from k on while they are
// decodes of measured requests past their first token that neither fill a
// block nor finish, delivering their tokens from at on, tok apart: the
// general pass of applyStepPlain and metrics.delivered for each, in a tight
// loop (the caller makes sure there is no speculative decoding and no
// token sink). It returns the index after the run and the next event time.
func (s *Simulator) deliverRun(rp *rank, k int, at, tok Time) (int, Time) {
	m, sched, bs := s.m, rp.sched, rp.kv.bs
	run := m.run
	for ; k < len(sched); k++ {
		sc := sched[k]
		r := sc.r
		c := r.computed + 1
		if sc.prefill || sc.n != 1 || r.warmup || r.generated == 0 || c != r.input+r.generated ||
			c >= (r.cached+1)*bs || r.generated+1 >= r.output {
			break
		}
		r.computed = c
		r.generated++
		gap := at - r.lastToken
		r.lastToken = at
		col := m.stage(r)
		if run.n > 0 && (gap != run.gap || col != run.c) {
			m.gaps(run.c, run.gap, run.n)
			run.n = 0
		}
		run.c, run.gap = col, gap
		run.n++
		at += tok
	}
	m.run = run
	return k, at
}

// finishDone takes the requests that generated their last token out of
// the running set, in its order, and records their completion.
func (s *Simulator) finishDone(rp *rank, t Time) {
	keep := rp.running[:0]
	for _, r := range rp.running {
		if r.generated >= r.output {
			rp.kv.release(r)
			rp.kv.retire(r)
			rp.freedLast++
			s.completed++
			// The client's timestamps of the first and last token come
			// after its receive path.
			recv := s.clientReceive(r)
			r.firstToken += recv
			r.lastToken += recv
			s.m.finish(r, t)
			if s.onEnd != nil {
				s.onEnd(r, t, true)
			}
			s.d.done(r, r.lastToken, true)
			s.pool.put(r)
			continue
		}
		keep = append(keep, r)
	}
	clear(rp.running[len(keep):])
	rp.running = keep
}

// tick records one time-series point and schedules the next while there is
// anything left to happen.
func (s *Simulator) tick(t Time) {
	p := TimePoint{TS: float64(t) / 1e9, CompletedTotal: s.completed}
	for _, rp := range s.ranks {
		p.Running += len(rp.running)
		p.Waiting += rp.waiting.len()
		p.KVUsageRatio += rp.kv.usage()
		p.PreemptionsTotal += rp.preemptions
	}
	p.KVUsageRatio = round(p.KVUsageRatio/float64(len(s.ranks)), 4)
	sec := int(t/nsPerSecond) - 1
	if sec >= 0 && sec < len(s.m.secOut) {
		p.OutputTokensPerS = float64(s.m.secOut[sec])
	}
	if sec >= 0 && sec < len(s.m.secIn) {
		p.PromptTokensPerS = float64(s.m.secIn[sec])
	}
	s.m.series = append(s.m.series, p)
	if s.q.len() > 0 && t < maxSeriesSeconds*nsPerSecond {
		s.push(event{t: t + nsPerSecond, kind: evTick})
	}
}

// addInstance builds one instance of cfg's serving fields (DP ranks, each
// with its own step-time model and KV cache) in pool pd (nil outside a
// disaggregated run) and appends it and its ranks to the simulator.
func (s *Simulator) addInstance(cfg *Config, pd *pdPool) (*instance, error) {
	bs := cfg.Engine.BlockSize
	// Prefix caching is modelled block-exactly for models whose layers all
	// hold the full context; sliding-window models keep fewer blocks than
	// their table would index, so their blocks are not shared.
	caching := cfg.Engine.EnablePrefixCaching && cfg.Model.NumSlidingLayers() == 0
	dp := max(cfg.DP, 1)
	in := &instance{id: int32(len(s.insts)), lockstep: dp > 1 && cfg.Model.MoE != nil, pd: pd,
		front: frontend{coef: cfg.Profile.Frontend, scale: orOne(cfg.Profile.Scale.Overhead), seed: cfg.Seed}}
	for range dp {
		sm, err := cfg.StepModel()
		if err != nil {
			return nil, err
		}
		rp := &rank{
			id: int32(len(s.ranks)), eng: &cfg.Engine, model: sm, window: cfg.Model.SlidingWindow, inst: in,
			kv:              newKVCache(cfg.NumGPUBlocks, bs, caching, cfg.BlockUnits),
			blockBytes:      cfg.BlockBytes,
			pcieBytesPerSec: math.Max(cfg.GPU.PCIe.UnidirectionalGBps(), 1) * 1e9,
		}
		if cfg.BlockBytes > 0 {
			rp.swapCap = int(cfg.Engine.SwapSpaceGiB * hardware.GiB / cfg.BlockBytes)
		}
		if sp := cfg.Speculative; sp != nil {
			// Both follow vLLM's use_eagle() (eagle, eagle3, mtp).
			rp.lookahead = sp.Lookahead
			rp.kv.dropLastHit = sp.Lookahead > 0
		}
		in.ranks = append(in.ranks, rp)
		s.ranks = append(s.ranks, rp)
	}
	s.insts = append(s.insts, in)
	return in, nil
}

// blockUnits is the number of KV blocks n tokens take: cfg.BlockUnits
// where set, otherwise n over the block size, rounded up.
func (c *Config) blockUnits() func(int) int {
	if c.BlockUnits != nil {
		return c.BlockUnits
	}
	bs := c.Engine.BlockSize
	return func(n int) int { return (n + bs - 1) / bs }
}
