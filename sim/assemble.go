package sim

import "github.com/headroom-sim/headroom/sim/stats"

// report assembles the run's report from its metrics.
func (s *Simulator) report() *Report {
	cfg := s.cfg
	m := s.m
	r := &Report{
		Model: cfg.Model.ID, GPU: cfg.GPU.ID, TP: cfg.TP, Replicas: cfg.Replicas, Seed: cfg.Seed,
		Simulation: RunStats{Events: s.events, SimulatedS: round(float64(s.now)/1e9, 6)},
	}
	dur := float64(m.lastDone-m.firstSent) / 1e9
	if dur <= 0 {
		dur = float64(s.now) / 1e9
	}
	r.DurationS = round(dur, 6)
	sum := m.all.summarize()
	left := s.unfinished()
	r.Requests = m.all.counts(len(left))
	r.TTFTMS, r.TPOTMS, r.ITLMS, r.E2EMS, r.QueueMS = sum.ttft, sum.tpot, sum.itl, sum.e2e, sum.queue
	r.PrefillMS, r.DecodeMS = sum.prefill, sum.decode
	r.Percentiles = Percentiles{PerRequest: m.all.ttft.Method(), ITL: stats.MethodHistogram,
		ExactUpTo: stats.ExactLimit, HistogramRelativeError: stats.HistogramRelativeError}
	if len(m.stages) > 0 {
		r.Percentiles.StagesExactUpTo = stagesExactUpTo
	}
	st := sum.serverTTFT
	r.ServerTTFTMS = &st
	r.Throughput = throughput(m.all, dur)
	if m.all.completed > 0 {
		r.CoStartedRatio = round(float64(m.all.coStarted)/float64(m.all.completed), 4)
	}
	var kv kvTotals
	for _, rp := range s.ranks {
		rp.noteUsage(s.now)
		r.Preemptions += rp.preemptions
		r.Simulation.Steps += rp.steps
		kv.add(rp)
		r.MaxRunning = max(r.MaxRunning, rp.maxRunning)
	}
	r.PrefixCacheHitRatio = kv.hitRatio()
	if s.spec != nil {
		r.Speculative = s.spec.report(r.Simulation.Steps)
	}
	r.KVCache = kv.usage(cfg.NumGPUBlocks, float64(s.servedRanks()), s.now)
	r.Fluency = m.all.fluency(cfg.Report.StallThresholdMS)
	if cfg.SLA != nil {
		r.SLA = evaluateSLA(cfg.SLA, sum, m.all, r.Requests)
		g := round(float64(m.all.good)/dur, 4)
		r.GoodputRPS = &g
	}
	var start float64
	for i, st := range cfg.Workload.Stages {
		c := m.stages[i]
		ss := c.summarize()
		stageLeft := 0
		for _, q := range left {
			if int(q.stage) == i {
				stageLeft++
			}
		}
		sr := StageReport{Index: i, StartS: start, DurationS: st.DurationS, RateRPS: st.RateRPS, Concurrency: st.Concurrency,
			Requests: c.counts(stageLeft), TTFTMS: ss.ttft, TPOTMS: ss.tpot, ITLMS: ss.itl, E2EMS: ss.e2e, QueueMS: ss.queue,
			Fluency: c.fluency(cfg.Report.StallThresholdMS), PerRequestPercentiles: c.method()}
		sr.Throughput = m.windowThroughput(c, start, st.DurationS)
		sr.Preemptions = c.preemptions
		if cfg.SLA != nil {
			sr.SLA = evaluateSLA(cfg.SLA, ss, c, sr.Requests)
			g := round(float64(c.good)/st.DurationS, 4)
			sr.GoodputRPS = &g
		}
		r.Stages = append(r.Stages, sr)
		start += st.DurationS
	}
	if cfg.Report.Timeseries {
		r.Timeseries = m.series
	}
	if s.pd != nil {
		s.pd.report(r)
	}
	if s.as != nil {
		r.Autoscale = s.as.report()
	}
	return r
}

// kvTotals sums the KV-cache use of a set of ranks.
type kvTotals struct {
	hits, queries int64   // prefix-cache hit and looked-up tokens
	area, peak    float64 // ∫ usage dt (usage·ns) and peak usage
}

func (k *kvTotals) add(rp *rank) {
	k.hits += rp.kv.hitTokens
	k.queries += rp.kv.queryTokens
	k.area += rp.usageArea
	k.peak += rp.usagePeak
}

// hitRatio is the prefix-cache hit ratio (0 without look-ups).
func (k *kvTotals) hitRatio() float64 {
	if k.queries == 0 {
		return 0
	}
	return round(float64(k.hits)/float64(k.queries), 4)
}

// usage is the ranks' mean and peak usage over a run of now ns, averaged
// over n ranks of blocks KV blocks each.
func (k *kvTotals) usage(blocks int, n float64, now Time) KVUsage {
	u := KVUsage{NumGPUBlocks: blocks, PeakUsageRatio: round(k.peak/n, 4)}
	if now > 0 {
		u.MeanUsageRatio = round(k.area/n/float64(now), 4)
	}
	return u
}

func throughput(c *collector, dur float64) Throughput {
	if dur <= 0 {
		return Throughput{}
	}
	t := Throughput{
		RequestsPerS:     round(float64(c.completed)/dur, 4),
		InputTokensPerS:  round(float64(c.inTokens)/dur, 4),
		OutputTokensPerS: round(float64(c.outTok)/dur, 4),
	}
	t.TotalTokensPerS = round(t.InputTokensPerS+t.OutputTokensPerS, 4)
	return t
}

// windowThroughput is what the engine produced in [start, start+dur)
// seconds: completions of the stage's requests and all tokens computed.
func (m *metrics) windowThroughput(c *collector, start, dur float64) Throughput {
	if dur <= 0 {
		return Throughput{}
	}
	done := c.windowDone // completions in [start, start+dur)
	var in, out int64
	for sec := int(start); sec < int(start+dur); sec++ {
		if sec < len(m.secIn) {
			in += m.secIn[sec]
		}
		if sec < len(m.secOut) {
			out += m.secOut[sec]
		}
	}
	t := Throughput{
		RequestsPerS:     round(float64(done)/dur, 4),
		InputTokensPerS:  round(float64(in)/dur, 4),
		OutputTokensPerS: round(float64(out)/dur, 4),
	}
	t.TotalTokensPerS = round(t.InputTokensPerS+t.OutputTokensPerS, 4)
	return t
}
