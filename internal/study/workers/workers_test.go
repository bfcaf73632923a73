package workers

import (
	"sync/atomic"
	"testing"
)

// Every job runs once, and never more than the given number at a time.
func TestForRunsEachJobOnceWithinTheBound(t *testing.T) {
	for _, c := range []struct{ n, workers int }{{0, 4}, {1, 4}, {10, 1}, {100, 3}, {7, 0}} {
		ran := make([]int32, c.n)
		var busy, peak atomic.Int32
		For(c.n, c.workers, func(i int) {
			b := busy.Add(1)
			for {
				p := peak.Load()
				if b <= p || peak.CompareAndSwap(p, b) {
					break
				}
			}
			atomic.AddInt32(&ran[i], 1)
			busy.Add(-1)
		})
		for i, k := range ran {
			if k != 1 {
				t.Fatalf("n=%d workers=%d: job %d ran %d times", c.n, c.workers, i, k)
			}
		}
		if c.workers > 0 && int(peak.Load()) > c.workers {
			t.Errorf("n=%d: %d jobs at once, bound %d", c.n, peak.Load(), c.workers)
		}
	}
}
