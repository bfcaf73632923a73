package api

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime/debug"
	"sync"
	"time"
)

// Admission of synchronous simulations (POST /v1/simulate, synchronous
// POST /v1/calibrations): at most simulate.max_concurrent in flight, the
// next one refused at once with 429 and Retry-After, before its body is
// read; an admitted one waits for a slot of the CPU budget (ahead of the
// jobs' simulations) within its wall-time limit.

// syncGate counts the synchronous simulations in flight and how long they
// take, for Retry-After.
type syncGate struct {
	mu       sync.Mutex
	inFlight int
	max      int
	slots    int
	meanS    float64 // moving average of admitted calls' wall time
}

// admit lets one call in, or answers *BusyError. done ends it.
func (g *syncGate) admit() (done func(), err error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.inFlight >= g.max {
		return nil, &BusyError{RetryAfterS: g.retryAfterLocked(),
			Reason: fmt.Sprintf("%d synchronous simulations are in flight, the most simulate.max_concurrent admits", g.inFlight)}
	}
	g.inFlight++
	start := time.Now()
	var once sync.Once
	return func() {
		once.Do(func() {
			g.mu.Lock()
			defer g.mu.Unlock()
			g.inFlight--
			d := time.Since(start).Seconds()
			if g.meanS == 0 {
				g.meanS = d
			} else {
				g.meanS = 0.8*g.meanS + 0.2*d
			}
		})
	}, nil
}

// retryAfterLocked estimates when a call would be admitted: the mean call
// time times the calls in flight per slot, 1 s to 5 min.
func (g *syncGate) retryAfterLocked() int {
	mean := g.meanS
	if mean == 0 {
		mean = 1
	}
	s := mean * float64(g.inFlight) / float64(max(g.slots, 1))
	return int(min(max(math.Ceil(s), 1), 300))
}

// inFlightNow is the calls in flight.
func (g *syncGate) inFlightNow() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.inFlight
}

// syncSlot takes a slot of the CPU budget for a synchronous call whose
// context carries its wall-time limit: a limit reached while waiting is
// *BusyError (the server was too busy to start it), the client leaving is
// ctx's error. release must be called once the simulation ends.
func (s *Server) syncSlot(ctx context.Context, parent context.Context) (release func(), err error) {
	if err := s.cpu.acquire(ctx, classSync, 1); err != nil {
		if errors.Is(err, context.DeadlineExceeded) && parent.Err() == nil {
			s.gate.mu.Lock()
			ra := s.gate.retryAfterLocked()
			s.gate.mu.Unlock()
			return nil, &BusyError{RetryAfterS: ra, Reason: "no simulation slot (limits.simulations) freed within the synchronous time limit"}
		}
		return nil, err
	}
	return func() { s.cpu.release(1) }, nil
}

// jobSlot takes a slot for a job's simulation (after the synchronous
// calls); release must be called once it ends.
func (s *Server) jobSlot(ctx context.Context) (release func(), err error) {
	if err := s.cpu.acquire(ctx, classJob, 1); err != nil {
		return nil, err
	}
	return func() { s.cpu.release(1) }, nil
}

// runSync runs f, which holds a slot that release returns, and answers
// when f does or when ctx ends, whichever comes first: a synchronous call
// keeps its wall-time limit even when the simulation looks at its context
// late (the simulator checks it every few thousand events). f then goes on
// until it notices, and only then frees its slot: the CPU budget stays
// exact.
func runSync[T any](ctx context.Context, release func(), f func() (T, error)) (T, error) {
	type outcome struct {
		v   T
		err error
	}
	out := make(chan outcome, 1)
	go func() {
		var o outcome
		defer func() {
			if p := recover(); p != nil {
				// The handler's recovery cannot see this goroutine: answer a
				// 500 with the panic and its stack for the log.
				o = outcome{err: fmt.Errorf("panic: %v\n%s", p, debug.Stack())}
			}
			release() // before the answer: a caller that hears it finds the slot free
			out <- o
		}()
		o.v, o.err = f()
	}()
	select {
	case o := <-out:
		return o.v, o.err
	case <-ctx.Done():
		var zero T
		return zero, ctx.Err()
	}
}
