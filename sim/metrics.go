package sim

import (
	"github.com/headroom-sim/headroom/sim/stats"
)

// sample holds one completed request's metrics, in milliseconds.
type sample struct {
	ttft, serverTTFT, tpot, e2e, queue, prefill, decode float64
	input, output                                       int
	preemptions                                         int32
	finish                                              Time
	hasTPOT                                             bool
}

// collector gathers the metrics of one group of requests (the whole run or
// one stage).
type collector struct {
	samples  []sample
	itl      *stats.Histogram // token-weighted inter-token latencies, ms
	stalls   int64
	inTokens int64
	outTok   int64
	issued   int // requests the clients created
	// token counts produced inside the group's time window (stages)
	rejected map[string]int
}

func newCollector() *collector {
	return &collector{itl: stats.NewHistogram(), rejected: map[string]int{}}
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

	requestSink func(RequestSample)
	tokenSink   func(tS, gapMS float64)
	// onFinish, if set, sees every completed measured request.
	onFinish func(r *request)
}

func newMetrics(stages int, stallMS float64, rtt Time) *metrics {
	stall, _ := toClock(stallMS, nsPerMS) // validated
	m := &metrics{all: newCollector(), stallNS: stall, rtt: rtt}
	for range stages {
		m.stages = append(m.stages, newCollector())
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

// token records one output token of r, produced by the engine at engine
// and received by the client at client.
func (m *metrics) token(r *request, engine, client Time) {
	m.countSecond(&m.secOut, int(engine/nsPerSecond), 1)
	if r.generated == 1 {
		r.firstToken = client
		r.lastToken = client
		return
	}
	t := client
	gap := t - r.lastToken
	r.lastToken = t
	if r.warmup {
		return
	}
	g := float64(gap) / nsPerMS
	m.all.itl.Add(g, 1)
	if m.tokenSink != nil {
		m.tokenSink(float64(t)/1e9, g)
	}
	stalled := gap > m.stallNS
	if stalled {
		m.all.stalls++
	}
	if c := m.stage(r); c != nil {
		c.itl.Add(g, 1)
		if stalled {
			c.stalls++
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
	s := sample{
		serverTTFT:  ms(r.serverFirst - r.arrival),
		ttft:        ms(r.firstToken - r.sent),
		e2e:         ms(r.lastToken - r.sent),
		queue:       ms(r.scheduled - r.arrival),
		prefill:     ms(r.engineFirst - r.scheduled),
		decode:      ms(t - r.engineFirst),
		input:       r.input,
		output:      r.output,
		preemptions: r.preemptions,
		finish:      r.lastToken,
	}
	if r.output > 1 {
		s.tpot = ms(r.lastToken-r.firstToken) / float64(r.output-1)
		s.hasTPOT = true
	}
	if m.onFinish != nil {
		m.onFinish(r)
	}
	if m.requestSink != nil {
		m.requestSink(RequestSample{
			SentS: float64(r.sent) / 1e9, FirstTokenS: float64(r.firstToken) / 1e9, FinishS: float64(r.lastToken) / 1e9,
			TTFTMS: s.ttft, TPOTMS: s.tpot, E2EMS: s.e2e, InputTokens: r.input, OutputTokens: r.output,
			Stage: int(r.stage), Preemptions: int(r.preemptions),
		})
	}
	done := r.lastToken
	if done > m.lastDone {
		m.lastDone = done
	}
	for _, c := range []*collector{m.all, m.stage(r)} {
		if c == nil {
			continue
		}
		c.samples = append(c.samples, s)
		c.inTokens += int64(r.input)
		c.outTok += int64(r.output)
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
