package sim

import (
	"math/rand/v2"
)

// LongestRequest is the most tokens, prompt and output together, one
// request of the run holds: the trace's longest, or the longest of the
// run's own draws (the same seed and streams the driver draws from, so
// the same lengths), its shared prefix included. A conversation's later
// turns carry the earlier ones: for multi-turn workloads it is the prefix
// plus turns × the longest turn (an upper bound). n is how many requests
// to draw (the run's own count when n <= 0 and it has one).
func LongestRequest(w *Workload, seed uint64, n int) int {
	if w.Trace != nil {
		longest := 0
		for _, r := range w.Trace {
			longest = max(longest, r.InputTokens+r.OutputTokens)
		}
		return longest
	}
	if w.Input == nil || w.Output == nil {
		return 0
	}
	if n <= 0 {
		n = w.Requests + w.Warmup
	}
	rin := rand.New(rand.NewPCG(seed, streamInput))
	rout := rand.New(rand.NewPCG(seed, streamOutput))
	turn := 0
	for range max(n, 1) {
		turn = max(turn, w.Input.Sample(rin)+w.Output.Sample(rout))
	}
	prefix := 0
	if w.SharedPrefix != nil {
		prefix = w.SharedPrefix.PrefixTokens
	}
	if mt := w.MultiTurn; mt != nil && mt.Turns > 1 {
		return prefix + mt.Turns*turn
	}
	return prefix + turn
}
