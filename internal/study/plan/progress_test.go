package plan

import (
	"sync"
	"testing"
)

// TestProgressConcurrentSteps steps from many goroutines into a callback
// that is not safe for concurrent use (as the CLI's progress bar is not):
// every step must be reported, one at a time, never going back.
func TestProgressConcurrentSteps(t *testing.T) {
	const goroutines, steps = 8, 500
	var got []float64 // appended without a lock: Progress must serialise
	p := NewProgress(goroutines*steps, func(f float64) { got = append(got, f) })
	var wg sync.WaitGroup
	for range goroutines {
		wg.Go(func() {
			for range steps {
				p.Step()
			}
		})
	}
	wg.Wait()
	if len(got) != goroutines*steps {
		t.Fatalf("%d callbacks, want %d", len(got), goroutines*steps)
	}
	for i := 1; i < len(got); i++ {
		if got[i] < got[i-1] {
			t.Fatalf("progress went back: %v then %v (call %d)", got[i-1], got[i], i)
		}
	}
	if got[len(got)-1] != 1 {
		t.Fatalf("last progress %v, want 1", got[len(got)-1])
	}
}

// TestProgressGrowNeverGoesBack: a search that learns of more steps lowers
// done/total, but the reported fraction holds.
func TestProgressGrowNeverGoesBack(t *testing.T) {
	var got []float64
	p := NewProgress(2, func(f float64) { got = append(got, f) })
	p.Step() // 1/2
	p.Grow(8)
	p.Step() // 2/10, reported as 0.5
	p.Step()
	if got[0] != 0.5 || got[1] != 0.5 || got[2] != 0.5 {
		t.Fatalf("progress %v, want 0.5 held", got)
	}
}
