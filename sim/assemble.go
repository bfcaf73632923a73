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
	st := sum.serverTTFT
	r.ServerTTFTMS = &st
	r.Throughput = throughput(m.all, dur)
	var hits, queries int64
	var area, peak float64
	for _, rp := range s.replicas {
		rp.noteUsage(s.now)
		r.Preemptions += rp.preemptions
		r.Simulation.Steps += rp.steps
		hits += rp.kv.hitTokens
		queries += rp.kv.queryTokens
		area += rp.usageArea
		peak += rp.usagePeak
		r.MaxRunning = max(r.MaxRunning, rp.maxRunning)
	}
	if queries > 0 {
		r.PrefixCacheHitRatio = round(float64(hits)/float64(queries), 4)
	}
	if s.spec != nil {
		r.Speculative = s.spec.report(r.Simulation.Steps)
	}
	n := float64(s.servedRanks())
	r.KVCache = KVUsage{NumGPUBlocks: cfg.NumGPUBlocks, PeakUsageRatio: round(peak/n, 4)}
	if s.now > 0 {
		r.KVCache.MeanUsageRatio = round(area/n/float64(s.now), 4)
	}
	r.Fluency = m.all.fluency(cfg.Report.StallThresholdMS)
	if cfg.SLA != nil {
		r.SLA = evaluateSLA(cfg.SLA, sum)
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
			Fluency: c.fluency(cfg.Report.StallThresholdMS)}
		sr.Throughput = m.windowThroughput(c, start, st.DurationS)
		sr.Preemptions = c.preemptions
		if cfg.SLA != nil {
			sr.SLA = evaluateSLA(cfg.SLA, ss)
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
