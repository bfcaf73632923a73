package sim

import (
	"testing"

	"github.com/headroom-sim/headroom/catalogs"
)

// Data-parallel ranks of a mixture-of-experts model step in lock-step
// (every MoE layer exchanges tokens across them): a step lasts as long as
// the slowest rank's, and a rank without work runs a dummy batch so the
// collective completes. Dense ranks step on their own.
func TestDataParallelLockstep(t *testing.T) {
	cat, err := catalogs.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	moe, _ := cat.Model("qwen3-30b-a3b")
	// Rank 1's steps take two ticks, rank 0's one.
	uneven := func(rp *rank) float64 { return float64(tick) * float64(1+rp.id) / 1e9 }
	tests := []struct {
		name     string
		moe      bool
		reqs     []handReq
		stepTime func(*rank) float64
		steps    []string
		ends     []end
	}{{
		// Both ranks wait for the slower one.
		name: "MoE ranks wait for the slowest", moe: true, stepTime: uneven,
		reqs:  []handReq{{at: 0, in: 16, out: 3}, {at: 0, in: 16, out: 3}},
		steps: []string{"0: 0:16", "0 r1: 1:16", "2: 0:d", "2 r1: 1:d", "4: 0:d", "4 r1: 1:d"},
		ends:  []end{{0, 2, 6}, {1, 2, 6}},
	}, {
		name: "dense ranks step on their own", stepTime: uneven,
		reqs:  []handReq{{at: 0, in: 16, out: 3}, {at: 0, in: 16, out: 3}},
		steps: []string{"0: 0:16", "0 r1: 1:16", "1: 0:d", "2 r1: 1:d", "2: 0:d", "4 r1: 1:d"},
		ends:  []end{{0, 1, 3}, {1, 2, 6}},
	}, {
		// Request 1 reaches the balancer while rank 0 runs request 0:
		// it goes to the idle rank 1, which joins the group's next step;
		// rank 1 ran dummy batches until then (no step logged).
		name: "an idle MoE rank joins the next group step", moe: true,
		reqs:  []handReq{{at: 0, in: 16, out: 3}, {at: 1, in: 16, out: 1}},
		steps: []string{"0: 0:16", "1: 0:d", "1 r1: 1:16", "2: 0:d"},
		ends:  []end{{0, 1, 3}, {1, 2, 2}},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := handConfig(t, tc.reqs, handSetup{})
			cfg.DP = 2
			if tc.moe {
				cfg.Model, cfg.Precision = moe, moe.DefaultPrecision()
			}
			s, log := newHandSim(t, cfg)
			if tc.stepTime != nil {
				s.stepTime = tc.stepTime
			}
			if got := s.insts[0].lockstep; got != tc.moe {
				t.Fatalf("lockstep %v, want %v", got, tc.moe)
			}
			if err := s.loop(t.Context()); err != nil {
				t.Fatal(err)
			}
			checkSteps(t, log.steps, tc.steps)
			for _, e := range tc.ends {
				checkEnd(t, log, e.serial, e.firstTick, e.tick)
			}
		})
	}
}

// Lock-stepped ranks pad to the largest rank's token count: with 16
// prompt tokens on one rank and 4 on the other, the MoE layers see 2 × 16
// rows; a rank without work pads its dummy batch to the same count.
func TestDataParallelPadding(t *testing.T) {
	cat, err := catalogs.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	moe, _ := cat.Model("qwen3-30b-a3b")
	cfg := handConfig(t, []handReq{{at: 0, in: 16, out: 2}, {at: 0, in: 4, out: 1}}, handSetup{})
	cfg.DP = 2
	cfg.Model, cfg.Precision = moe, moe.DefaultPrecision()
	s, _ := newHandSim(t, cfg)
	var groups []int
	s.stepTime = func(rp *rank) float64 {
		groups = append(groups, rp.batch.GroupTokens)
		return float64(tick) / 1e9
	}
	if err := s.loop(t.Context()); err != nil {
		t.Fatal(err)
	}
	// Step 0: both ranks prefill (16 and 4 tokens): 32 rows. Step 1: rank
	// 0 decodes one token, rank 1 is done (a dummy token): 2 rows.
	if len(groups) < 3 || groups[0] != 32 || groups[1] != 32 || groups[2] != 2 {
		t.Errorf("group tokens per rank step %v, want [32 32 2 …]", groups)
	}
}
