package sim

import "fmt"

// The sizes a run allocates by are bounded before it starts, by what the
// hardware could hold (KV blocks: engine.CheckBlocks, in Config.Validate)
// or what the run could use (users, here): a number past the bound is an
// input error naming its field, never an allocation that takes the
// process down.

// MaxUsers bounds the closed-loop users of a run (workload.arrival
// .concurrency, a stage's concurrency): every user holds a record and,
// without a request limit, a request in flight from the start. A million
// users is beyond any benchmark's client pool; a load that large is an
// open-loop rate.
const MaxUsers = 1 << 20

// MaxRanks bounds the engine ranks a run builds (instances × dp, an
// autoscaled run's slots and a prefill pool's included): each holds a
// scheduler and a KV cache, and 32,768 of them is far beyond a served
// cluster's engines.
const MaxRanks = 1 << 15

// validateRanks refuses a run of more engine ranks than MaxRanks.
func (c *Config) validateRanks() error {
	ranks := c.instanceSlots() * max(c.DP, 1)
	if d := c.Disagg; d != nil {
		ranks += d.Prefill.Replicas * max(d.Prefill.DP, 1)
	}
	if ranks > MaxRanks {
		return fieldErr("replicas", fmt.Sprintf("%d replicas of %d data-parallel ranks (with autoscale's slots and a prefill pool) make %d engine ranks, more than the %d a run may hold", c.Replicas, max(c.DP, 1), ranks, MaxRanks))
	}
	return nil
}

// ValidateSizes checks the numbers the workload allocates by: the users of
// a closed loop and of each stage. With a request limit only as many users
// as there are requests are ever created (the rest could never issue
// one); the bound holds either way. Errors are *hardware.FieldError named
// as the scenario's fields. Run calls it; scenario validation calls it to
// refuse such input early.
func (w *Workload) ValidateSizes() error {
	if w.Trace == nil && len(w.Stages) == 0 && w.Arrival.Type == "closed_loop" && w.Arrival.Concurrency > MaxUsers {
		return fieldErr("workload.arrival.concurrency", usersReason(w.Arrival.Concurrency))
	}
	for i, st := range w.Stages {
		if st.Concurrency < 0 || st.Concurrency > MaxUsers {
			return fieldErr(fmt.Sprintf("workload.stages[%d].concurrency", i), usersReason(st.Concurrency))
		}
	}
	return nil
}

func usersReason(n int) string {
	return fmt.Sprintf("%d users is not in [1, %d] (the most closed-loop users the simulator keeps; a larger load is an open-loop rate_rps)", n, MaxUsers)
}
