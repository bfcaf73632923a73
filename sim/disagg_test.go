package sim

import (
	"math"
	"testing"
)

// Disaggregated runs small enough to work out by hand, on the harness of
// handsim_test.go (a fixed step time of one tick = 15.625 ms, a free API
// server, 64-token budget, block size 16). Both pools run the hand
// engine; blocks are 1 MB on each GPU and the link moves 1 GB/s, so a
// block takes exactly 1 ms, plus a 10 µs latency per transfer. The
// decode pool is built first (replica 0), the prefill pool after it
// (replica 1).

// handPD turns a hand config into a disaggregated one with one prefill
// replica of prefillBlocks blocks and the decode pool's blocks.
func handPD(t *testing.T, reqs []handReq, decodeBlocks, prefillBlocks int, layerwise bool) Config {
	t.Helper()
	cfg := handConfig(t, reqs, handSetup{blocks: decodeBlocks, blockBytes: 1e6})
	cfg.Disagg = &Disaggregation{
		Prefill: Pool{GPU: cfg.GPU, TP: 1, Replicas: 1, Router: RouterRoundRobin, Engine: cfg.Engine,
			NumGPUBlocks: prefillBlocks, BlockBytes: 1e6, Profile: cfg.Profile},
		Link:      KVLink{Name: "test", BandwidthGBps: 1, LatencyUS: 10},
		Layerwise: layerwise,
	}
	return cfg
}

// checkEndAt checks a request's first token and end times exactly, in ns.
func checkEndAt(t *testing.T, log *handLog, serial int64, first, end Time) {
	t.Helper()
	e, ok := log.ends[serial]
	switch {
	case !ok || !e.ok:
		t.Errorf("request %d did not complete (ended: %v)", serial, ok)
	case e.firstToken != first || e.at != end:
		t.Errorf("request %d: first token at %s ticks, done at %s; want %s and %s", serial, ticks(e.firstToken), ticks(e.at), ticks(first), ticks(end))
	}
}

// near compares a report figure (rounded to 4 decimals) with a hand value.
func near(got, want float64) bool { return math.Abs(got-want) <= 6e-5 }

// One request, 100 prompt tokens = 7 blocks of 1 MB at 1 GB/s: the
// transfer takes 7 ms + 10 µs = 0.44864 ticks after the prompt's second
// prefill step (64 + 36 tokens), then the decode engine recomputes the
// last prompt token and decodes.
func TestDisaggOneRequestPullTransferTime(t *testing.T) {
	cfg := handPD(t, []handReq{{at: 0, in: 100, out: 3}}, 1000, 1000, false)
	s, log, rep := handRun(t, cfg)
	checkSteps(t, log.steps, []string{
		"0 r1: 0:64",
		"1 r1: 0:36",
		"2.44864: 0:1",
		"3.44864: 0:d",
		"4.44864: 0:d",
	})
	checkEndAt(t, log, 0, 3*tick+7_010_000, 5*tick+7_010_000)
	b := rep.Disaggregation.TTFTBreakdown
	for _, c := range []struct {
		name     string
		got, ms_ float64
	}{
		{"prefill_queue", b.PrefillQueueMS.Mean, 0},
		{"prefill", b.PrefillMS.Mean, 31.25},
		{"kv_admission", b.KVAdmissionMS.Mean, 0},
		{"kv_transfer", b.KVTransferMS.Mean, 7.01},
		{"first_decode", b.FirstDecodeMS.Mean, 15.625},
	} {
		if !near(c.got, c.ms_) {
			t.Errorf("%s: %g ms, want %g", c.name, c.got, c.ms_)
		}
	}
	if got, want := rep.TTFTMS.Mean, 31.25+7.01+15.625; !near(got, want) {
		t.Errorf("TTFT %g ms, want the parts' sum %g", got, want)
	}
	x := rep.Disaggregation.KVTransfer
	if x.Transfers != 1 || x.MBPerRequestPerGPU != 7 {
		t.Errorf("transfers %d of %g MB, want 1 of 7 MB", x.Transfers, x.MBPerRequestPerGPU)
	}
	// The prefill held its 7 blocks until the read ended; both pools end
	// with every block free.
	for _, rp := range s.ranks {
		if rp.kv.numFree != rp.kv.total || rp.kv.referenced() != 0 {
			t.Errorf("replica %d ends with %d of %d blocks free", rp.id, rp.kv.numFree, rp.kv.total)
		}
	}
}

// The same request with the KV pushed layer by layer (32 layers): the
// first chunk's 4 blocks (4 ms) go during its step, the second chunk's 3
// blocks start one layer (488,281 ns) into the second step and end 3 ms /
// 32 after it; only that and the latency remain after the prefill:
// 93,750 + 10,000 ns.
func TestDisaggOneRequestLayerwiseOverlap(t *testing.T) {
	cfg := handPD(t, []handReq{{at: 0, in: 100, out: 3}}, 1000, 1000, true)
	_, log, rep := handRun(t, cfg)
	ready := 2 + 103_750/float64(tick)
	checkSteps(t, log.steps, []string{
		"0 r1: 0:64",
		"1 r1: 0:36",
		ticks(Time(ready*float64(tick))) + ": 0:1",
		ticks(Time((ready+1)*float64(tick))) + ": 0:d",
		ticks(Time((ready+2)*float64(tick))) + ": 0:d",
	})
	checkEndAt(t, log, 0, 3*tick+103_750, 5*tick+103_750)
	b := rep.Disaggregation.TTFTBreakdown
	if got := b.KVTransferMS.Mean; !near(got, 0.10375) {
		t.Errorf("exposed transfer %g ms, want 0.10375", got)
	}
	if got := b.KVAdmissionMS.Mean; got != 0 {
		t.Errorf("admission %g ms, want 0 (the decode pool had blocks)", got)
	}
	if rep.Disaggregation.KVTransfer.Overlap != OverlapLayerwise {
		t.Errorf("overlap %q", rep.Disaggregation.KVTransfer.Overlap)
	}
}

// Three 50-token prompts (4 blocks each) into a decode pool of 9 blocks:
// the third waits at the decode engine, one block short, until the first
// finishes and frees its blocks; none is lost, and the wait shows as
// admission time.
func TestDisaggDecodeOutOfBlocksWaits(t *testing.T) {
	reqs := []handReq{{at: 0, in: 50, out: 3}, {at: 0, in: 50, out: 3}, {at: 0, in: 50, out: 3}}
	cfg := handPD(t, reqs, 9, 1000, false)
	s, log, rep := handRun(t, cfg)
	checkSteps(t, log.steps, []string{
		"0 r1: 0:50 1:14",
		"1 r1: 1:36 2:28",
		"1.25664: 0:1",
		"2 r1: 2:22",
		"2.25664: 0:d",
		"3.25664: 0:d 1:1",
		"4.25664: 1:d",
		"5.25664: 1:d 2:1",
		"6.25664: 2:d",
		"7.25664: 2:d",
	})
	const x = 4_010_000 // a 4-block read: 4 ms + 10 µs
	checkEndAt(t, log, 0, 2*tick+x, 4*tick+x)
	checkEndAt(t, log, 1, 4*tick+x, 6*tick+x)
	checkEndAt(t, log, 2, 6*tick+x, 8*tick+x)
	if rep.Requests.Completed != 3 || rep.Requests.Unfinished != 0 || rep.Requests.Rejected != 0 {
		t.Errorf("requests %+v, want 3 completed", rep.Requests)
	}
	// Request 2 reached the decode engine at tick 3 and got blocks when
	// request 0 finished, at 4.25664: 1.25664 ticks of admission. Request
	// 1 arrived at tick 2 while the rank ran a step until 2.25664.
	b := rep.Disaggregation.TTFTBreakdown
	if got, want := b.KVAdmissionMS.Max, 1.25664*15.625; !near(got, want) {
		t.Errorf("longest admission %g ms, want %g", got, want)
	}
	if got, want := b.KVAdmissionMS.Mean, (0+0.25664+1.25664)*15.625/3; !near(got, want) {
		t.Errorf("mean admission %g ms, want %g", got, want)
	}
	if rep.KVCache.NumGPUBlocks != 9 || rep.KVCache.PeakUsageRatio != 0.8889 {
		t.Errorf("decode kv_cache %+v, want 9 blocks, 8 used at the peak", rep.KVCache)
	}
	for _, rp := range s.ranks {
		if rp.kv.numFree != rp.kv.total {
			t.Errorf("replica %d ends with %d of %d blocks free", rp.id, rp.kv.numFree, rp.kv.total)
		}
	}
}

// A request the decode pool can never hold is refused there, after its
// prefill, and its prefill blocks are freed; one the prefill pool cannot
// hold is refused at the prefill.
func TestDisaggRejectsWhatAPoolCannotHold(t *testing.T) {
	reqs := []handReq{{at: 0, in: 100, out: 100}, {at: 0, in: 200, out: 3}}
	cfg := handPD(t, reqs, 10, 10, false) // 160 tokens per pool
	s, log, rep := handRun(t, cfg)
	if e := log.ends[0]; e.ok || e.at != 2*tick {
		t.Errorf("request 0 (fits the prefill, not the decode): ended ok=%v at %s ticks, want refused at 2", e.ok, ticks(e.at))
	}
	if e := log.ends[1]; e.ok || e.at != 0 {
		t.Errorf("request 1 (fits neither): ended ok=%v at %s ticks, want refused at 0", e.ok, ticks(e.at))
	}
	if rep.Requests.RejectedReasons["exceeds_kv_cache"] != 2 {
		t.Errorf("rejections %v, want 2 exceeds_kv_cache", rep.Requests.RejectedReasons)
	}
	for _, rp := range s.ranks {
		if rp.kv.numFree != rp.kv.total {
			t.Errorf("replica %d ends with %d of %d blocks free", rp.id, rp.kv.numFree, rp.kv.total)
		}
	}
}
