package sim

import (
	"fmt"
	"testing"

	"github.com/headroom-sim/headroom/sim/engine"
)

// steps builds expected step lines: the same batch at ticks from, from+1,
// … (count of them), each at offset ticks past the whole tick.
func steps(from, count int, offset float64, batch string) []string {
	var out []string
	for k := from; k < from+count; k++ {
		out = append(out, fmt.Sprintf("%s: %s", ticks(Time((float64(k)+offset)*float64(tick))), batch))
	}
	return out
}

// TestPreemption: two requests of 16 prompt and 40 output tokens on a
// 4-block cache (16-token blocks). Each holds 2 blocks from its 17th
// token on; at tick 17 request 0 needs a third block, none is free, and
// the most recently admitted request (1) is preempted. It cannot come back
// while request 0 runs (request 0 needs 3, then 4 blocks) and resumes at
// tick 40, when 0 is done.
//
// By recompute, request 1 loses its KV and computes its 16 + 17 tokens
// again as a prompt (33 tokens) before its 18th token. By swap, its 2
// blocks go to CPU memory and come back over PCIe: 2 blocks × 125 MB at
// 64 GB/s = 1/256 s = a quarter tick, added to the step that swaps out
// (tick 17) and to the step that swaps in; it resumes with a decode.
func TestPreemption(t *testing.T) {
	const blockBytes = 64e9 / 512 // one block crosses the H100's PCIe 5 x16 (64 GB/s each way) in 1/512 s
	reqs := []handReq{{at: 0, in: 16, out: 40}, {at: 0, in: 16, out: 40}}
	var recompute []string
	recompute = append(recompute, "0: 0:16 1:16")
	recompute = append(recompute, steps(1, 16, 0, "0:d 1:d")...)
	recompute = append(recompute, steps(17, 23, 0, "0:d")...) // 0 alone until its 40th token (tick 40)
	recompute = append(recompute, "40: 1:33")                 // 1 recomputes 16 + 17 tokens
	recompute = append(recompute, steps(41, 22, 0, "1:d")...) // its tokens 19 … 40

	var swap []string
	swap = append(swap, "0: 0:16 1:16")
	swap = append(swap, steps(1, 16, 0, "0:d 1:d")...)
	swap = append(swap, "17: 0:d")                     // swaps 1 out: lasts 1.25 ticks
	swap = append(swap, steps(18, 22, 0.25, "0:d")...) // 0's tokens 19 … 40, to tick 40.25
	swap = append(swap, "40.25: 1:d")                  // swaps 1 in: 1.25 ticks
	swap = append(swap, steps(41, 22, 0.5, "1:d")...)  // to tick 63.5

	tests := []struct {
		name    string
		engine  func(*engine.Config)
		swapGiB float64
		steps   []string
		ends    []end
		prompt  int64   // prompt tokens computed, recomputation included
		stallMS float64 // request 1's pause: from its 17th token (tick 17) to its 18th
	}{
		{"v1 recompute", nil, 0, recompute, []end{{0, 1, 40}, {1, 1, 63}}, 16 + 16 + 33, 24 * 15.625},
		{"v0 recompute", func(e *engine.Config) {
			e.Scheduler, e.EnableChunkedPrefill, e.MaxNumBatchedTokens = engine.SchedulerV0, false, 256
		}, 0, recompute, []end{{0, 1, 40}, {1, 1, 63}}, 16 + 16 + 33, 24 * 15.625},
		{"v1 swap", func(e *engine.Config) { e.PreemptionMode = engine.PreemptSwap }, 1, swap, []end{{0, 1, 40.25}, {1, 1, 63.5}}, 16 + 16, 24.5 * 15.625},
		// 0.1 GiB holds no 125 MB block: swap falls back to recompute.
		{"v1 swap without room", func(e *engine.Config) { e.PreemptionMode = engine.PreemptSwap }, 0.1, recompute, []end{{0, 1, 40}, {1, 1, 63}}, 16 + 16 + 33, 24 * 15.625},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := handConfig(t, reqs, handSetup{blocks: 4, blockBytes: blockBytes, engine: func(e *engine.Config) {
				e.SwapSpaceGiB = tt.swapGiB
				if tt.engine != nil {
					tt.engine(e)
				}
			}})
			s, log, rep := handRun(t, cfg)
			checkSteps(t, log.steps, tt.steps)
			for _, e := range tt.ends {
				checkEnd(t, log, e.serial, e.firstTick, e.tick)
			}
			rp := s.ranks[0]
			if rep.Preemptions != 1 || log.ends[0].preemptions != 0 || log.ends[1].preemptions != 1 {
				t.Errorf("%d preemptions (request 0: %d, request 1: %d), want 1 of request 1", rep.Preemptions, log.ends[0].preemptions, log.ends[1].preemptions)
			}
			if rp.promptTokens != tt.prompt {
				t.Errorf("%d prompt tokens computed, want %d", rp.promptTokens, tt.prompt)
			}
			if rp.swapUsed != 0 || rp.kv.numFree != 4 {
				t.Errorf("ends with %d blocks in swap, %d free", rp.swapUsed, rp.kv.numFree)
			}
			if got := rep.Fluency.LongestStallMS; got != tt.stallMS {
				t.Errorf("longest stall %v ms, want %v", got, tt.stallMS)
			}
		})
	}
}

// TestPreemptedRequestGoesFirst: a preempted request returns to the front
// of the waiting queue, and V1 stops at the first waiting request that
// does not fit, so request 2 (8 tokens, 1 block), which would fit from
// tick 18 on, waits behind request 1 until tick 40.
func TestPreemptedRequestGoesFirst(t *testing.T) {
	cfg := handConfig(t, []handReq{{at: 0, in: 16, out: 40}, {at: 0, in: 16, out: 40}, {at: 10, in: 8, out: 1}}, handSetup{blocks: 4})
	_, log, _ := handRun(t, cfg)
	var want []string
	want = append(want, "0: 0:16 1:16")
	want = append(want, steps(1, 16, 0, "0:d 1:d")...)
	want = append(want, steps(17, 23, 0, "0:d")...)
	want = append(want, "40: 1:33 2:8")
	want = append(want, steps(41, 22, 0, "1:d")...)
	checkSteps(t, log.steps, want)
	checkEnd(t, log, 2, 41, 41)
	checkEnd(t, log, 1, 1, 63)
}
