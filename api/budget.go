package api

import (
	"context"
	"slices"
	"sync"
)

// budget is the server's one CPU budget: the simulations that may run at
// once across synchronous calls and every job (limits.simulations, one per
// core by default). A simulation takes a slot while it runs. Waiters are
// served first come, first served within their class, and synchronous
// calls (someone is waiting on the connection) before jobs: a sweep's
// hundreds of queued simulations do not stand in front of a quick
// POST /v1/simulate. It implements plan.Slots for the job class.
type budget struct {
	mu      sync.Mutex
	size    int64
	used    int64
	waiters [2][]*slotWaiter // by class: sync first
}

// Classes of simulations, in the order they are served.
const (
	classSync = iota
	classJob
)

type slotWaiter struct {
	n     int64
	ready chan struct{} // closed once the slots are granted
}

func newBudget(size int) *budget { return &budget{size: int64(size)} }

// acquire takes n slots for a simulation of class, waiting until they are
// free or ctx ends (then it returns ctx's error and holds nothing).
func (b *budget) acquire(ctx context.Context, class int, n int64) error {
	n = min(max(n, 1), b.size)
	b.mu.Lock()
	if b.used+n <= b.size && b.queuedAhead(class) == 0 {
		b.used += n
		b.mu.Unlock()
		return nil
	}
	w := &slotWaiter{n: n, ready: make(chan struct{})}
	b.waiters[class] = append(b.waiters[class], w)
	b.mu.Unlock()
	select {
	case <-w.ready:
		return nil
	case <-ctx.Done():
		b.mu.Lock()
		select {
		case <-w.ready: // granted meanwhile: give it back
			b.used -= w.n
			b.grantLocked()
		default:
			q := b.waiters[class]
			if i := slices.Index(q, w); i >= 0 {
				b.waiters[class] = slices.Delete(q, i, i+1)
			}
			b.grantLocked() // a large waiter leaving may unblock smaller ones
		}
		b.mu.Unlock()
		return ctx.Err()
	}
}

// queuedAhead counts the waiters a new one of class would stand behind.
func (b *budget) queuedAhead(class int) int {
	n := 0
	for c := 0; c <= class; c++ {
		n += len(b.waiters[c])
	}
	return n
}

// release returns n slots.
func (b *budget) release(n int64) {
	n = min(max(n, 1), b.size)
	b.mu.Lock()
	b.used -= n
	if b.used < 0 {
		b.mu.Unlock()
		panic("api: budget released more than it granted")
	}
	b.grantLocked()
	b.mu.Unlock()
}

// grantLocked hands free slots to the waiters in order.
func (b *budget) grantLocked() {
	for c := range b.waiters {
		for len(b.waiters[c]) > 0 {
			w := b.waiters[c][0]
			if b.used+w.n > b.size {
				return // keep the order: nobody overtakes the head
			}
			b.used += w.n
			b.waiters[c] = b.waiters[c][1:]
			close(w.ready)
		}
	}
}

// stats is the slots in use and the simulations waiting for one.
func (b *budget) stats() (used int64, waiting int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.used, len(b.waiters[classSync]) + len(b.waiters[classJob])
}

// jobSlots is the budget as plan.Slots, for the planner jobs' Runners.
type jobSlots struct{ b *budget }

func (j jobSlots) Acquire(ctx context.Context, n int64) error { return j.b.acquire(ctx, classJob, n) }
func (j jobSlots) Release(n int64)                            { j.b.release(n) }
