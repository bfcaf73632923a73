package sim

import (
	"testing"

	"github.com/headroom-sim/headroom/sim/engine"
)

// Async scheduling (vLLM's AsyncScheduler) schedules step N+1 while step N
// runs: a request that reaches the engine after step N began waits for
// N+2, and the seats of requests that finished with step N are not free
// until N's output is processed. The same runs with synchronous
// scheduling for contrast.
func TestAsyncSchedulingLag(t *testing.T) {
	async := func(on bool, seqs int) func(*engine.Config) {
		return func(e *engine.Config) {
			e.AsyncScheduling = on
			if seqs > 0 {
				e.MaxNumSeqs = seqs
			}
		}
	}
	tests := []struct {
		name   string
		engine func(*engine.Config)
		reqs   []handReq
		steps  []string
		ends   []end
	}{{
		name:   "sync: a request arriving at a step boundary joins the next step",
		engine: async(false, 0),
		reqs:   []handReq{{at: 0, in: 16, out: 3}, {at: 1, in: 16, out: 1}},
		steps:  []string{"0: 0:16", "1: 0:d 1:16", "2: 0:d"},
		ends:   []end{{0, 1, 3}, {1, 2, 2}},
	}, {
		name:   "async: it arrived after step 1 was scheduled, so it waits for step 2",
		engine: async(true, 0),
		reqs:   []handReq{{at: 0, in: 16, out: 3}, {at: 1, in: 16, out: 1}},
		steps:  []string{"0: 0:16", "1: 0:d", "2: 0:d 1:16"},
		ends:   []end{{0, 1, 3}, {1, 3, 3}},
	}, {
		name:   "sync: a seat freed by step 1 is taken by step 2",
		engine: async(false, 2),
		reqs:   []handReq{{at: 0, in: 16, out: 2}, {at: 0, in: 16, out: 4}, {at: 0, in: 16, out: 1}},
		steps:  []string{"0: 0:16 1:16", "1: 0:d 1:d", "2: 1:d 2:16", "3: 1:d"},
		ends:   []end{{0, 1, 2}, {1, 1, 4}, {2, 3, 3}},
	}, {
		// When the engine would otherwise idle it processes the output
		// first (the retry without the lag); here request 1 still runs.
		name:   "async: the seat freed by step 1 is not free when step 2 is scheduled",
		engine: async(true, 2),
		reqs:   []handReq{{at: 0, in: 16, out: 2}, {at: 0, in: 16, out: 4}, {at: 0, in: 16, out: 1}},
		steps:  []string{"0: 0:16 1:16", "1: 0:d 1:d", "2: 1:d", "3: 1:d 2:16"},
		ends:   []end{{0, 1, 2}, {1, 1, 4}, {2, 4, 4}},
	}, {
		name:   "async: with nothing else to run the freed seat is taken at once",
		engine: async(true, 1),
		reqs:   []handReq{{at: 0, in: 16, out: 2}, {at: 0, in: 16, out: 1}},
		steps:  []string{"0: 0:16", "1: 0:d", "2: 1:16"},
		ends:   []end{{0, 1, 2}, {1, 3, 3}},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, log, _ := handRun(t, handConfig(t, tc.reqs, handSetup{engine: tc.engine}))
			checkSteps(t, log.steps, tc.steps)
			for _, e := range tc.ends {
				checkEnd(t, log, e.serial, e.firstTick, e.tick)
			}
		})
	}
}
