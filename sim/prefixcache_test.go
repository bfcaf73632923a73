package sim

import (
	"testing"

	"github.com/headroom-sim/headroom/sim/engine"
)

func caching(e *engine.Config) { e.EnablePrefixCaching = true }

// checkHits checks the prompt tokens each request found in the prefix
// cache when it was first admitted.
func checkHits(t *testing.T, log *handLog, want []int) {
	t.Helper()
	for serial, w := range want {
		if got := log.ends[int64(serial)].hitTokens; got != w {
			t.Errorf("request %d: %d prompt tokens from the prefix cache, want %d", serial, got, w)
		}
	}
}

// TestPrefixCacheHits: a request hits exactly the full blocks it shares
// with what is cached, from the start of the prompt, stopping at the
// first block that differs and always leaving one token to compute.
func TestPrefixCacheHits(t *testing.T) {
	cfg := handConfig(t, []handReq{
		{at: 0, in: 64, out: 1, blocks: []int64{1, 2, 3, 4}},
		{at: 2, in: 64, out: 1, blocks: []int64{1, 2, 3, 5}}, // 3 shared blocks
		{at: 4, in: 64, out: 1, blocks: []int64{1, 2, 9, 4}}, // 2: block 4 follows a different block 3
		{at: 6, in: 64, out: 1, blocks: []int64{1, 2, 3, 4}}, // all 4 shared, the last token is computed: 3
		{at: 8, in: 60, out: 1, blocks: []int64{1, 2, 3, 4}}, // 3 full blocks and 12 tokens of block 4
		{at: 10, in: 48, out: 1, blocks: []int64{2, 3, 4}},   // none: the same blocks after a different prefix
	}, handSetup{engine: caching})
	_, log, rep := handRun(t, cfg)
	checkSteps(t, log.steps, []string{"0: 0:64", "2: 1:16", "4: 2:32", "6: 3:16", "8: 4:12", "10: 5:48"})
	checkHits(t, log, []int{0, 48, 32, 48, 48, 0})
	// Looked up: 64 × 4 + 60 + 48 prompt tokens; found: 48 + 32 + 48 + 48.
	if want := round(176.0/364, 4); rep.PrefixCacheHitRatio != want {
		t.Errorf("prefix_cache_hit_ratio %v, want %v", rep.PrefixCacheHitRatio, want)
	}
}

// TestPrefixCacheHitRatioCountsEachLookup: vLLM counts a lookup each time
// the scheduler tries a waiting request, also when it then does not fit.
// Request 1 shares 2 blocks with request 0, which is still running, and is
// tried three times (ticks 1, 2 and 3) before it fits.
func TestPrefixCacheHitRatioCountsEachLookup(t *testing.T) {
	// 7 blocks: request 0 holds 4, then 5 once its first token is out
	// (65 tokens); request 1 needs 3 new blocks next to the 2 it shares.
	cfg := handConfig(t, []handReq{
		{at: 0, in: 64, out: 3, blocks: []int64{1, 2, 3, 4}},
		{at: 0, in: 80, out: 1, blocks: []int64{1, 2, 7, 8, 9}},
	}, handSetup{engine: caching, blocks: 7})
	_, log, rep := handRun(t, cfg)
	checkSteps(t, log.steps, []string{"0: 0:64", "1: 0:d", "2: 0:d", "3: 1:48"})
	checkHits(t, log, []int{0, 32})
	// One lookup of request 0 (64 tokens, no hit) and three of request 1
	// (80 tokens, 32 hit each).
	if want := round(3*32.0/(64+3*80), 4); rep.PrefixCacheHitRatio != want {
		t.Errorf("prefix_cache_hit_ratio %v, want %v", rep.PrefixCacheHitRatio, want)
	}
}

// TestPrefixCacheLRUEviction: with 8 blocks, freed blocks go to the back
// of the free queue, a request's tail blocks first, and new blocks come
// from the front, evicting the cached content they held. The schedule of
// evictions, worked out by hand:
//
//	request 0 [1 2 3]      takes blocks 0 1 2; frees them: queue 3 4 5 6 7 2 1 0
//	request 1 [11 12 13]   takes 3 4 5;          queue 6 7 2 1 0 5 4 3
//	request 2 [21 22 23 24] takes 6 7 2 1, evicting 3 and 2 of request 0
//	request 3 [1 2 3]      hits block 0 (content 1) only; takes 5 4,
//	                       evicting 13 and 12 of request 1
//	request 4 [11 12 13]   hits block 3 (content 11) only; takes 1 2,
//	                       evicting 24 and 23 of request 2
//	request 5 [21 22 23 24] hits 21 and 22 only; takes 4 5, evicting the
//	                       3 and 2 request 3 cached again; frees 5 4 7 6
func TestPrefixCacheLRUEviction(t *testing.T) {
	cfg := handConfig(t, []handReq{
		{at: 0, in: 48, out: 1, blocks: []int64{1, 2, 3}},
		{at: 2, in: 48, out: 1, blocks: []int64{11, 12, 13}},
		{at: 4, in: 64, out: 1, blocks: []int64{21, 22, 23, 24}},
		{at: 6, in: 48, out: 1, blocks: []int64{1, 2, 3}},
		{at: 8, in: 48, out: 1, blocks: []int64{11, 12, 13}},
		{at: 10, in: 64, out: 1, blocks: []int64{21, 22, 23, 24}},
	}, handSetup{engine: caching, blocks: 8})
	s, log, _ := handRun(t, cfg)
	checkSteps(t, log.steps, []string{"0: 0:48", "2: 1:48", "4: 2:64", "6: 3:32", "8: 4:32", "10: 5:32"})
	checkHits(t, log, []int{0, 0, 0, 16, 16, 32})
	// At the end the free queue holds every block, in the order worked out
	// above.
	kv := s.ranks[0].kv
	order := kv.freeQueue()
	want := []int32{0, 2, 1, 3, 5, 4, 7, 6}
	if len(order) != len(want) {
		t.Fatalf("free queue %v, want %v", order, want)
	}
	for i := range want {
		if order[i] != want[i] {
			t.Fatalf("free queue %v, want %v", order, want)
		}
	}
}
