package plan

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/headroom-sim/headroom/internal/study/scenario"
)

// countingSlots is a Slots of n slots that records how many were taken at
// most, and in all.
type countingSlots struct {
	ch             chan struct{}
	mu             sync.Mutex
	held, max, all int
}

func newCountingSlots(n int) *countingSlots { return &countingSlots{ch: make(chan struct{}, n)} }

func (c *countingSlots) Acquire(ctx context.Context, n int64) error {
	for range n {
		select {
		case c.ch <- struct{}{}:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	c.mu.Lock()
	c.held += int(n)
	c.all += int(n)
	c.max = max(c.max, c.held)
	c.mu.Unlock()
	return nil
}

func (c *countingSlots) Release(n int64) {
	c.mu.Lock()
	c.held -= int(n)
	c.mu.Unlock()
	for range n {
		<-c.ch
	}
}

// TestRunnerTakesSharedSlots: with a shared budget, every simulation of a
// sweep and of a plan (its replica searches and its headroom searches)
// takes a slot, and no more run at once than the budget holds, whatever
// Workers says.
func TestRunnerTakesSharedSlots(t *testing.T) {
	slots := newCountingSlots(2)
	r := runner(t)
	r.Workers, r.Slots = 8, slots
	res, err := r.Sweep(context.Background(), SweepSpec{Scenario: small(40), Axes: []Axis{
		{Path: "engine.max_num_seqs", Values: []any{8, 16, 32, 64}},
		{Path: "tp", Values: []any{1, 2}},
	}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if slots.all != len(res.Points) || slots.max > 2 || slots.held != 0 {
		t.Fatalf("sweep of %d points: %d slots taken, %d at once, %d still held", len(res.Points), slots.all, slots.max, slots.held)
	}

	slots = newCountingSlots(3)
	r.Slots = slots
	pr, err := r.Plan(context.Background(), PlanSpec{Scenario: small(30), GPUs: []string{"h100-sxm", "a100-80gb"}, TPs: []int{1}, MaxReplicas: 2}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if pr.Simulations < 4 || slots.all < pr.Simulations || slots.max > 3 || slots.held != 0 {
		t.Fatalf("plan of %d simulations: %d slots taken, %d at once, %d still held", pr.Simulations, slots.all, slots.max, slots.held)
	}
}

// TestRunnerSlotsHonourContext: a simulation waiting for a slot stops
// with ctx.
func TestRunnerSlotsHonourContext(t *testing.T) {
	slots := newCountingSlots(1)
	if err := slots.Acquire(context.Background(), 1); err != nil {
		t.Fatal(err)
	}
	r := runner(t)
	r.Slots = slots
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if out := r.Run(ctx, small(10)); out.Err != context.Canceled {
		t.Fatalf("err %v, want context.Canceled", out.Err)
	}
}

// TestRunRecoversPanics: a panic during a simulation on one of a sweep's
// goroutines is that point's error, not the end of the process.
func TestRunRecoversPanics(t *testing.T) {
	r := runner(t)
	r.Workers = 4
	r.Admit = func(scenario.Scenario, *scenario.Resolved) error { panic("simulator fault") }
	res, err := r.Sweep(context.Background(), SweepSpec{Scenario: small(10), Axes: []Axis{{Path: "engine.max_num_seqs", Values: []any{8, 16, 32, 64}}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range res.Points {
		if p.Error != "simulation panicked: simulator fault" {
			t.Errorf("point %v: error %q", p.Values, p.Error)
		}
	}
	out := r.Run(context.Background(), small(10))
	var pe *PanicError
	if !errors.As(out.Err, &pe) || len(pe.Stack) == 0 {
		t.Errorf("Run: %v, want a *PanicError with its stack", out.Err)
	}
}
