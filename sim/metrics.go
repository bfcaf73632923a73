package sim

import (
	"github.com/headroom-sim/headroom/sim/stats"
	"github.com/headroom-sim/headroom/sim/workload"
)

// collector gathers the metrics of one group of requests (the whole run or
// one stage). What a completed request leaves behind is its contribution
// to these sums and distributions: memory does not grow with the number
// of requests (stats.Distribution keeps values exactly only up to
// stats.ExactLimit).
type collector struct {
	ttft, tpot, e2e, queue *stats.Distribution
	// serverTTFT, prefill and decode are the run's only: a stage reports
	// none of them (nil in a stage's collector)
	serverTTFT, prefill, decode *stats.Distribution
	// budget is the exact values the run's stages keep together (nil for
	// the run's collector)
	budget *stats.Budget

	completed   int
	coStarted   int              // completed requests whose first token shared its step (request.coStart)
	preemptions int64            // of the completed requests
	itl         *stats.Durations // token-weighted inter-token latencies
	stalls      int64
	inTokens    int64
	outTok      int64
	issued      int // requests the clients created
	rejected    map[string]int
	// good counts completed requests within every per-request SLA bound.
	good int
	// windowDone counts completions whose last token falls in [lo, hi)
	// (a stage's window; both 0 for the whole run).
	lo, hi     Time
	windowDone int
}

// newCollector returns a run's collector (stage nil) or one of its
// stages', whose exact values the stages' budget bounds.
func newCollector(stage *stats.Budget) *collector {
	c := &collector{itl: stats.NewDurations(), rejected: map[string]int{}, budget: stage}
	c.setExactLimit(stats.ExactLimit)
	return c
}

// stagesExactUpTo is the exact per-request values a run's stages keep
// together over their four distributions, beyond the first stageFreeExact
// values of each (which cost less than the histogram they would become);
// past it a stage's summaries come from histograms, and the stage says
// so. A run of long stages then holds a few MB of samples, not eight bytes
// per request per distribution, and one of many short stages stays exact.
const (
	stagesExactUpTo = 4 * stats.ExactLimit
	stageFreeExact  = 2048
)

// setExactLimit empties the per-request distributions, which then keep up
// to n values exactly (and a stage's, within the stages' budget).
func (c *collector) setExactLimit(n int) {
	d := func() *stats.Distribution {
		x := stats.NewDistribution(n)
		if c.budget != nil {
			x.Share(c.budget)
		}
		return x
	}
	c.ttft, c.tpot, c.e2e, c.queue = d(), d(), d(), d()
	if c.budget == nil {
		c.serverTTFT, c.prefill, c.decode = d(), d(), d()
	}
}

// method is how the collector's per-request summaries are computed:
// stats.MethodHistogram when any of them is past what it keeps exactly.
func (c *collector) method() string {
	for _, d := range []*stats.Distribution{c.ttft, c.tpot, c.e2e, c.queue} {
		if d.Method() != stats.MethodExact {
			return stats.MethodHistogram
		}
	}
	return stats.MethodExact
}

// reserve makes room in the run's per-request distributions for n
// requests.
func (c *collector) reserve(n int) {
	for _, d := range []*stats.Distribution{c.ttft, c.serverTTFT, c.tpot, c.e2e, c.queue, c.prefill, c.decode} {
		d.Reserve(n)
	}
}

// slaLimits are the per-request bounds of an SLA: the loosest limit stated
// for each of TTFT, TPOT and E2E (0: none). A request meets the SLA when it
// is within all of them (ITL has no per-request value).
type slaLimits struct{ ttft, tpot, e2e float64 }

func newSLALimits(sla *SLA) slaLimits {
	var l slaLimits
	if sla == nil {
		return l
	}
	loosest := func(qs map[string]float64) float64 {
		v := 0.0
		for _, lim := range qs {
			v = max(v, lim)
		}
		return v
	}
	return slaLimits{ttft: loosest(sla.TTFTMS), tpot: loosest(sla.TPOTMS), e2e: loosest(sla.E2EMS)}
}

// meets reports whether a request's TTFT, TPOT (when it has one) and E2E
// are within the limits.
func (l slaLimits) meets(ttft, tpot float64, hasTPOT bool, e2e float64) bool {
	switch {
	case l.ttft != 0 && ttft > l.ttft:
		return false
	case l.tpot != 0 && hasTPOT && tpot > l.tpot:
		return false
	case l.e2e != 0 && e2e > l.e2e:
		return false
	}
	return true
}

// metrics records what a run observes.
type metrics struct {
	all       *collector
	stages    []*collector
	stallNS   Time
	rtt       Time
	firstSent Time
	lastDone  Time
	started   bool
	// time series, one point per simulated second
	series []TimePoint
	// tokens produced per second bucket (kept for time series and stages)
	secOut, secIn []int64
	perSecond     bool

	sla slaLimits

	run gapRun // equal gaps waiting for flushGaps

	requestSink func(RequestSample)
	tokenSink   func(tS, gapMS float64)
	// onFinish, if set, sees every completed measured request.
	onFinish func(r *request)
}

// newMetrics records a run with the given stages (their windows, in
// seconds, back to back from 0).
func newMetrics(stages []workload.StageSpec, stallMS float64, rtt Time, sla *SLA) *metrics {
	stall, _ := toClock(stallMS, nsPerMS) // validated
	m := &metrics{all: newCollector(nil), stallNS: stall, rtt: rtt, sla: newSLALimits(sla)}
	var start float64
	budget := stats.NewBudget(stagesExactUpTo, stageFreeExact)
	for _, st := range stages {
		c := newCollector(budget)
		c.lo, _ = toClock(start, 1e9) // validated: within maxSeriesSeconds
		c.hi, _ = toClock(start+st.DurationS, 1e9)
		m.stages = append(m.stages, c)
		start += st.DurationS
	}
	return m
}

func (m *metrics) stage(r *request) *collector {
	if int(r.stage) < len(m.stages) {
		return m.stages[r.stage]
	}
	return nil
}

func (m *metrics) sent(r *request, t Time) {
	if r.warmup {
		return
	}
	if !m.started || t < m.firstSent {
		m.firstSent, m.started = t, true
	}
}

// maxSeriesSeconds bounds the per-second counters (11.6 days).
const maxSeriesSeconds = 1_000_000

// bucket grows a per-second counter slice to hold second s.
func bucket(xs []int64, s int) []int64 {
	for len(xs) <= s {
		xs = append(xs, 0)
	}
	return xs
}

// countSecond adds n to second s of a per-second counter, when the run
// keeps them (time series or stages) and s is within the bound.
func (m *metrics) countSecond(xs *[]int64, s int, n int64) {
	if !m.perSecond || s >= maxSeriesSeconds {
		return
	}
	*xs = bucket(*xs, s)
	(*xs)[s] += n
}

// delivered records the latest output token of r (r.generated of them so
// far), received by the client at client. (The caller counts the step's
// tokens per second.) Equal gaps of one stage that follow each other, as
// the requests of a stable batch produce them, reach the histograms in one
// call at flushGaps.
func (m *metrics) delivered(r *request, client Time) {
	if r.generated == 1 {
		r.firstToken = client
		r.lastToken = client
		return
	}
	gap := client - r.lastToken
	r.lastToken = client
	if r.warmup {
		return
	}
	if m.tokenSink != nil {
		m.tokenSink(float64(client)/1e9, float64(gap)/nsPerMS)
	}
	c := m.stage(r)
	if m.run.n > 0 && (gap != m.run.gap || c != m.run.c) {
		m.flushGaps()
	}
	m.run.c, m.run.gap = c, gap
	m.run.n++
}

// gapRun is n equal inter-token gaps of measured requests of stage
// collector c (nil: no stage) not yet recorded.
type gapRun struct {
	c   *collector
	gap Time
	n   int64
}

// flushGaps records the pending run of equal gaps.
func (m *metrics) flushGaps() {
	if m.run.n > 0 {
		m.gaps(m.run.c, m.run.gap, m.run.n)
		m.run.n = 0
	}
}

// gaps records n inter-token gaps of gap ns of measured requests of stage
// collector c (nil: no stage).
func (m *metrics) gaps(c *collector, gap Time, n int64) {
	m.all.itl.Add(gap, n)
	stalled := gap > m.stallNS
	if stalled {
		m.all.stalls += n
	}
	if c != nil {
		c.itl.Add(gap, n)
		if stalled {
			c.stalls += n
		}
	}
}

// prompt records n prompt tokens computed at time t.
func (m *metrics) prompt(n int, t Time) {
	m.countSecond(&m.secIn, int(t/nsPerSecond), int64(n))
}

// finish records a request completed by the engine at t, whose last token
// the client received at r.lastToken. TTFT, TPOT and E2E are the client's
// view (from its send to the tokens it receives: network, API server and
// streaming included, as benchmark tools measure them); server TTFT is
// vLLM's own (engine arrival to the output batch that carries the first
// token); queue, prefill and decode are engine times.
func (m *metrics) finish(r *request, t Time) {
	if r.warmup {
		return
	}
	ms := func(d Time) float64 { return float64(d) / nsPerMS }
	ttft, e2e := ms(r.firstToken-r.sent), ms(r.lastToken-r.sent)
	tpot, hasTPOT := 0.0, r.output > 1
	if hasTPOT {
		tpot = ms(r.lastToken-r.firstToken) / float64(r.output-1)
	}
	if m.onFinish != nil {
		m.onFinish(r)
	}
	if m.requestSink != nil {
		m.requestSink(RequestSample{
			SentS: float64(r.sent) / 1e9, FirstTokenS: float64(r.firstToken) / 1e9, FinishS: float64(r.lastToken) / 1e9,
			TTFTMS: ttft, TPOTMS: tpot, E2EMS: e2e, InputTokens: r.input, OutputTokens: r.output,
			Stage: int(r.stage), Preemptions: int(r.preemptions),
		})
	}
	done := r.lastToken
	if done > m.lastDone {
		m.lastDone = done
	}
	good := m.sla.meets(ttft, tpot, hasTPOT, e2e)
	for _, c := range []*collector{m.all, m.stage(r)} {
		if c == nil {
			continue
		}
		c.ttft.Add(ttft)
		c.e2e.Add(e2e)
		c.queue.Add(ms(r.scheduled - r.arrival))
		if c.serverTTFT != nil {
			c.serverTTFT.Add(ms(r.serverFirst - r.arrival))
			c.prefill.Add(ms(r.engineFirst - r.scheduled))
			c.decode.Add(ms(t - r.engineFirst))
		}
		if hasTPOT {
			c.tpot.Add(tpot)
		}
		c.completed++
		if r.coStart {
			c.coStarted++
		}
		c.preemptions += int64(r.preemptions)
		c.inTokens += int64(r.input)
		c.outTok += int64(r.output)
		if good {
			c.good++
		}
		if done >= c.lo && done < c.hi {
			c.windowDone++
		}
	}
}

// issue records a request the clients created (warm-up requests are not
// counted: the report accounts for the measured ones).
func (m *metrics) issue(r *request) {
	if r.warmup {
		return
	}
	m.all.issued++
	if c := m.stage(r); c != nil {
		c.issued++
	}
}

// reject records a request the engine refuses.
func (m *metrics) reject(r *request, reason string) {
	if r.warmup {
		return
	}
	m.all.rejected[reason]++
	if c := m.stage(r); c != nil {
		c.rejected[reason]++
	}
}
