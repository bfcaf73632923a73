package api

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// waitFor polls cond for up to 5 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestBudgetServesSyncFirst: with every slot taken, a synchronous call that
// arrives after a queued job simulation gets the next free slot.
func TestBudgetServesSyncFirst(t *testing.T) {
	b := newBudget(2)
	ctx := context.Background()
	for range 2 {
		if err := b.acquire(ctx, classJob, 1); err != nil {
			t.Fatal(err)
		}
	}
	order := make(chan string, 2)
	go func() { b.acquire(ctx, classJob, 1); order <- "job" }()
	waitFor(t, "the job to queue", func() bool { _, w := b.stats(); return w == 1 })
	go func() { b.acquire(ctx, classSync, 1); order <- "sync" }()
	waitFor(t, "the call to queue", func() bool { _, w := b.stats(); return w == 2 })
	b.release(1)
	if got := <-order; got != "sync" {
		t.Fatalf("%s got the slot first, want sync", got)
	}
	b.release(1)
	if got := <-order; got != "job" {
		t.Fatalf("%s, want job", got)
	}
	if used, waiting := b.stats(); used != 2 || waiting != 0 {
		t.Fatalf("used %d, waiting %d", used, waiting)
	}
}

// TestBudgetCancelledWaiterHoldsNothing: a waiter whose context ends
// leaves the queue and takes no slot.
func TestBudgetCancelledWaiterHoldsNothing(t *testing.T) {
	b := newBudget(1)
	if err := b.acquire(context.Background(), classJob, 1); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if err := b.acquire(ctx, classSync, 1); err != context.DeadlineExceeded {
		t.Fatalf("err %v, want DeadlineExceeded", err)
	}
	b.release(1)
	if used, waiting := b.stats(); used != 0 || waiting != 0 {
		t.Fatalf("used %d, waiting %d after the cancelled wait", used, waiting)
	}
}

// TestBudgetNeverOversubscribed: many goroutines of both classes never hold
// more slots than the budget has, and every one is served.
func TestBudgetNeverOversubscribed(t *testing.T) {
	b := newBudget(3)
	var held, peak atomic.Int64
	var wg sync.WaitGroup
	for g := range 16 {
		wg.Go(func() {
			for i := range 50 {
				ctx := context.Background()
				var cancel context.CancelFunc = func() {}
				if i%7 == 0 {
					ctx, cancel = context.WithTimeout(ctx, time.Microsecond)
				}
				if err := b.acquire(ctx, g%2, int64(1+i%2)); err != nil {
					cancel()
					continue
				}
				n := held.Add(int64(1 + i%2))
				for {
					p := peak.Load()
					if n <= p || peak.CompareAndSwap(p, n) {
						break
					}
				}
				held.Add(-int64(1 + i%2))
				b.release(int64(1 + i%2))
				cancel()
			}
		})
	}
	wg.Wait()
	if p := peak.Load(); p > 3 {
		t.Fatalf("%d slots held at once, the budget has 3", p)
	}
	if used, waiting := b.stats(); used != 0 || waiting != 0 {
		t.Fatalf("used %d, waiting %d at the end", used, waiting)
	}
}
