package sim

import (
	"testing"

	"github.com/headroom-sim/headroom/sim/engine"
)

// end is a request's first-token and completion time, in ticks.
type end struct {
	serial          int64
	firstTick, tick float64
}

// TestSchedulerSteps checks V1 and V0 scheduling step by step on runs
// small enough to do by hand. Steps are "tick: batch" with batch entries
// "request:prompt tokens" or "request:d" (one decode token); every step
// lasts one tick, so a token computed in the step starting at tick k is
// out at tick k+1.
func TestSchedulerSteps(t *testing.T) {
	v0 := func(e *engine.Config) {
		e.Scheduler, e.EnableChunkedPrefill, e.MaxNumBatchedTokens = engine.SchedulerV0, false, 256
	}
	tests := []struct {
		name   string
		engine func(*engine.Config)
		reqs   []handReq
		steps  []string
		ends   []end
	}{{
		// Budget 64: request 0 takes it all (64 of 100); then its last 36
		// and 28 of request 1's 50; then 0 decodes while 1 finishes its
		// prompt (22); then both decode.
		name: "v1 chunked prefill under a 64-token budget",
		reqs: []handReq{{at: 0, in: 100, out: 3}, {at: 0, in: 50, out: 2}},
		steps: []string{
			"0: 0:64",
			"1: 0:36 1:28",
			"2: 0:d 1:22",
			"3: 0:d 1:d",
		},
		ends: []end{{0, 2, 4}, {1, 3, 4}},
	}, {
		// long_prefill_token_threshold 40 caps each prompt's chunk: 40 for
		// request 0, the remaining 24 of the budget for 1, twice; then 0's
		// last 20 and 1's last 2.
		name:   "v1 long prefill threshold",
		engine: func(e *engine.Config) { e.LongPrefillTokenThreshold = 40 },
		reqs:   []handReq{{at: 0, in: 100, out: 3}, {at: 0, in: 50, out: 2}},
		steps: []string{
			"0: 0:40 1:24",
			"1: 0:40 1:24",
			"2: 0:20 1:2",
			"3: 0:d 1:d",
			"4: 0:d",
		},
		ends: []end{{0, 3, 5}, {1, 3, 4}},
	}, {
		// max_num_seqs 2: request 2 waits for a free slot although the
		// budget has room.
		name:   "v1 max_num_seqs",
		engine: func(e *engine.Config) { e.MaxNumSeqs = 2 },
		reqs:   []handReq{{at: 0, in: 16, out: 2}, {at: 0, in: 16, out: 2}, {at: 0, in: 16, out: 2}},
		steps: []string{
			"0: 0:16 1:16",
			"1: 0:d 1:d",
			"2: 2:16",
			"3: 2:d",
		},
		ends: []end{{0, 1, 2}, {1, 1, 2}, {2, 3, 4}},
	}, {
		// Without chunked prefill V1 takes prompts whole and skips one
		// that does not fit the budget left (request 2's 100 > 56) to try
		// the next (3's 50 fits).
		name: "v1 without chunking skips a prompt that does not fit",
		engine: func(e *engine.Config) {
			e.EnableChunkedPrefill, e.MaxNumBatchedTokens = false, 256
		},
		reqs: []handReq{{at: 0, in: 100, out: 2}, {at: 0, in: 100, out: 2}, {at: 0, in: 100, out: 1}, {at: 0, in: 50, out: 2}},
		steps: []string{
			"0: 0:100 1:100 3:50",
			"1: 0:d 1:d 3:d 2:100",
		},
		ends: []end{{0, 1, 2}, {1, 1, 2}, {2, 2, 2}, {3, 1, 2}},
	}, {
		// V0 stops at the first prompt that does not fit (request 2) and
		// does not try 3; the next step is prefills only, the decodes of 0
		// and 1 wait.
		name:   "v0 prefill first, no skipping",
		engine: v0,
		reqs:   []handReq{{at: 0, in: 100, out: 2}, {at: 0, in: 100, out: 2}, {at: 0, in: 100, out: 1}, {at: 0, in: 50, out: 2}},
		steps: []string{
			"0: 0:100 1:100",
			"1: 2:100 3:50",
			"2: 0:d 1:d 3:d",
		},
		ends: []end{{0, 1, 3}, {1, 1, 3}, {2, 2, 2}, {3, 2, 3}},
	}, {
		// Request 1 arrives at tick 1, while 0 is ready to decode: V0 runs
		// 1's prompt alone and 0's second token waits a tick ...
		name:   "v0 a new prompt pauses decodes",
		engine: v0,
		reqs:   []handReq{{at: 0, in: 100, out: 3}, {at: 1, in: 50, out: 2}},
		steps: []string{
			"0: 0:100",
			"1: 1:50",
			"2: 0:d 1:d",
			"3: 0:d",
		},
		ends: []end{{0, 1, 4}, {1, 2, 3}},
	}, {
		// ... while V1 (same budget) runs the decode with the prompt.
		name:   "v1 mixes the new prompt with decodes",
		engine: func(e *engine.Config) { e.MaxNumBatchedTokens = 256 },
		reqs:   []handReq{{at: 0, in: 100, out: 3}, {at: 1, in: 50, out: 2}},
		steps: []string{
			"0: 0:100",
			"1: 0:d 1:50",
			"2: 0:d 1:d",
		},
		ends: []end{{0, 1, 3}, {1, 2, 3}},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := handConfig(t, tt.reqs, handSetup{engine: tt.engine})
			_, log, rep := handRun(t, cfg)
			checkSteps(t, log.steps, tt.steps)
			for _, e := range tt.ends {
				checkEnd(t, log, e.serial, e.firstTick, e.tick)
			}
			if rep.Requests.Completed != len(tt.reqs) || rep.Preemptions != 0 {
				t.Errorf("requests %+v, %d preemptions", rep.Requests, rep.Preemptions)
			}
		})
	}
}
