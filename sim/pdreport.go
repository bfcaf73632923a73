package sim

import "github.com/headroom-sim/headroom/sim/stats"

// DisaggReport is what a disaggregated run adds to its report: where TTFT
// goes, the KV transfer, and each pool. The report's own gpu, tp,
// replicas and kv_cache are the decode pool's.
type DisaggReport struct {
	TTFTBreakdown TTFTBreakdown    `json:"ttft_breakdown"`
	KVTransfer    KVTransferReport `json:"kv_transfer"`
	Prefill       PoolReport       `json:"prefill"`
	Decode        PoolReport       `json:"decode"`
}

// TTFTBreakdown splits each completed request's TTFT (the client's view)
// into consecutive parts that sum to it:
//   - PrefillQueueMS: from the client's send until a prefill engine first
//     schedules the prompt (network, the prefill API server, its queue);
//   - PrefillMS: until the prompt's last prefill step ends;
//   - KVAdmissionMS: the time after the prefill until the decode rank
//     holds blocks for the prompt that the transfer does not cover (the
//     response through the prefill API server and the proxy, the decode
//     API server, and the wait for free blocks);
//   - KVTransferMS: the rest of the time until the KV is on the decode
//     GPUs (for a pull, after admission; for a layer-wise push, the part
//     that did not overlap with the prefill);
//   - FirstDecodeMS: from then until the client receives the first token
//     (the decode rank's next step, its API server, the network).
type TTFTBreakdown struct {
	PrefillQueueMS stats.Summary `json:"prefill_queue_ms"`
	PrefillMS      stats.Summary `json:"prefill_ms"`
	KVAdmissionMS  stats.Summary `json:"kv_admission_ms"`
	KVTransferMS   stats.Summary `json:"kv_transfer_ms"`
	FirstDecodeMS  stats.Summary `json:"first_decode_ms"`
}

// KVTransferReport describes the link and what crossed it.
type KVTransferReport struct {
	Link string `json:"link,omitempty"`
	// Overlap is none (read after the prefill) or layerwise (pushed as
	// each layer is computed).
	Overlap       string  `json:"overlap"`
	BandwidthGBps float64 `json:"bandwidth_gbps"`
	LatencyUS     float64 `json:"latency_us"`
	// Transfers counts the measured requests' transfers, and
	// MBPerRequestPerGPU their mean size on one GPU (MB = 1e6 bytes).
	Transfers          int64   `json:"transfers"`
	MBPerRequestPerGPU float64 `json:"mb_per_request_per_gpu"`
	// LinkBusyRatio is the busiest rank's share of the run spent
	// transferring.
	LinkBusyRatio float64 `json:"link_busy_ratio"`
}

// PoolReport is one pool's shape and how hard it worked.
type PoolReport struct {
	GPU      string `json:"gpu"`
	TP       int    `json:"tp"`
	DP       int    `json:"dp"`
	Replicas int    `json:"replicas"`
	GPUs     int    `json:"gpus"`
	Router   string `json:"router"`
	// UtilizationRatio is the mean share of the run its engine ranks spent
	// running steps.
	UtilizationRatio    float64        `json:"utilization_ratio"`
	KVCache             KVUsage        `json:"kv_cache"`
	PrefixCacheHitRatio float64        `json:"prefix_cache_hit_ratio"`
	Steps               int64          `json:"steps"`
	Preemptions         int64          `json:"preemptions"`
	MaxRunning          int            `json:"max_running"`
	Throughput          PoolThroughput `json:"throughput"`
}

// PoolThroughput is a pool's measured work over the run's duration: the
// prompt tokens it computed (recomputation included; a decode pool
// recomputes each prompt's last token) and the output tokens it sent, in
// total and per GPU of the pool; RequestsPerS counts the requests it
// finished (handed to the decode pool, or completed).
type PoolThroughput struct {
	RequestsPerS           float64 `json:"requests_per_s"`
	PromptTokensPerS       float64 `json:"prompt_tokens_per_s"`
	OutputTokensPerS       float64 `json:"output_tokens_per_s"`
	PromptTokensPerSPerGPU float64 `json:"prompt_tokens_per_s_per_gpu"`
	OutputTokensPerSPerGPU float64 `json:"output_tokens_per_s_per_gpu"`
}

// pdBreakdown collects the TTFT parts of completed measured requests and
// the transfers' sizes.
type pdBreakdown struct {
	queue, prefill, admission, xfer, first stats.Distribution
	transfers                              int64
	bytes                                  float64
	completed                              int64
}

// transfer records bytes per GPU of a transfer (or of one pushed chunk).
func (b *pdBreakdown) transfer(bytes float64, warmup bool) {
	if !warmup {
		b.bytes += bytes
	}
}

// started counts a measured request's transfer.
func (b *pdBreakdown) started(warmup bool) {
	if !warmup {
		b.transfers++
	}
}

// finish records a completed measured request's TTFT parts (the metrics'
// onFinish hook).
func (pd *disagg) finish(r *request) {
	ps := r.pd
	if ps == nil {
		return
	}
	b := &pd.breakdown
	ms := func(d Time) float64 { return float64(d) / nsPerMS }
	ready := max(ps.admitted, ps.kvDone)
	var admission, transfer Time
	if pd.cfg.Layerwise {
		transfer = min(max(ps.kvDone-ps.prefillEnd, 0), ready-ps.prefillEnd)
		admission = ready - ps.prefillEnd - transfer
	} else {
		admission, transfer = ps.admitted-ps.prefillEnd, ps.kvDone-ps.admitted
	}
	b.queue.Add(ms(r.scheduled - r.sent))
	b.prefill.Add(ms(ps.prefillEnd - r.scheduled))
	b.admission.Add(ms(admission))
	b.xfer.Add(ms(transfer))
	b.first.Add(ms(r.firstToken - ready))
	b.completed++
}

// report adds the disaggregation section to a run's report and makes its
// kv_cache the decode pool's.
func (pd *disagg) report(rep *Report) {
	s := pd.s
	b := &pd.breakdown
	sum := func(d *stats.Distribution) stats.Summary { return roundSummary(d.Summary()) }
	out := &DisaggReport{
		TTFTBreakdown: TTFTBreakdown{PrefillQueueMS: sum(&b.queue), PrefillMS: sum(&b.prefill),
			KVAdmissionMS: sum(&b.admission), KVTransferMS: sum(&b.xfer), FirstDecodeMS: sum(&b.first)},
		KVTransfer: KVTransferReport{Link: pd.cfg.Link.Name, Overlap: OverlapNone,
			BandwidthGBps: pd.cfg.Link.BandwidthGBps, LatencyUS: pd.cfg.Link.LatencyUS, Transfers: b.transfers},
	}
	if pd.cfg.Layerwise {
		out.KVTransfer.Overlap = OverlapLayerwise
	}
	if b.transfers > 0 {
		out.KVTransfer.MBPerRequestPerGPU = round(b.bytes/float64(b.transfers)/1e6, 4)
	}
	var busiest int64
	for i := range pd.rank {
		busiest = max(busiest, pd.rank[i].linkBusyNS)
	}
	if s.now > 0 {
		out.KVTransfer.LinkBusyRatio = round(float64(busiest)/float64(s.now), 4)
	}
	cfg := s.cfg
	p := &cfg.Disagg.Prefill
	out.Prefill = pd.poolReport(pd.prefill, rep.DurationS, p.GPU.ID, p.TP, p.DP, p.Replicas, p.NumGPUBlocks)
	out.Decode = pd.poolReport(pd.decode, rep.DurationS, cfg.GPU.ID, cfg.TP, cfg.DP, cfg.Replicas, cfg.NumGPUBlocks)
	out.Prefill.Throughput.RequestsPerS = 0
	var handoffs int64
	for _, in := range pd.prefill.insts {
		for _, rp := range in.ranks {
			handoffs += pd.rank[rp.id].handoffs
		}
	}
	if rep.DurationS > 0 {
		out.Prefill.Throughput.RequestsPerS = round(float64(handoffs)/rep.DurationS, 4)
		out.Decode.Throughput.RequestsPerS = round(float64(b.completed)/rep.DurationS, 4)
	}
	rep.KVCache = out.Decode.KVCache
	rep.Disaggregation = out
}

// poolReport sums a pool's ranks.
func (pd *disagg) poolReport(p *pdPool, durS float64, gpu string, tp, dp, replicas, blocks int) PoolReport {
	s := pd.s
	pr := PoolReport{GPU: gpu, TP: tp, DP: max(dp, 1), Replicas: replicas, Router: p.router}
	pr.GPUs = tp * pr.DP * replicas
	var ranks, prompt, output, busy int64
	var kv kvTotals
	for _, in := range p.insts {
		for _, rp := range in.ranks {
			ranks++
			rs := &pd.rank[rp.id]
			busy += rs.busyNS
			prompt += rs.promptTokens
			output += rs.outputTokens
			pr.Steps += rp.steps
			pr.Preemptions += rp.preemptions
			pr.MaxRunning = max(pr.MaxRunning, rp.maxRunning)
			kv.add(rp)
		}
	}
	n := float64(ranks)
	pr.KVCache = kv.usage(blocks, n, s.now)
	if s.now > 0 {
		pr.UtilizationRatio = round(float64(busy)/n/float64(s.now), 4)
	}
	pr.PrefixCacheHitRatio = kv.hitRatio()
	if durS > 0 {
		t := &pr.Throughput
		t.PromptTokensPerS = round(float64(prompt)/durS, 4)
		t.OutputTokensPerS = round(float64(output)/durS, 4)
		t.PromptTokensPerSPerGPU = round(float64(prompt)/durS/float64(pr.GPUs), 4)
		t.OutputTokensPerSPerGPU = round(float64(output)/durS/float64(pr.GPUs), 4)
	}
	return pr
}
