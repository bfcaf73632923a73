package plan

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"runtime/debug"
	"sync"

	"github.com/headroom-sim/headroom/internal/study/scenario"
	"github.com/headroom-sim/headroom/internal/study/workers"
	"github.com/headroom-sim/headroom/sim"
)

// Slots is a budget of simulations shared beyond one Runner: a server
// gives all its Runners (and its other simulations) one, so that parallel
// jobs together run no more simulations than it has cores.
// *semaphore.Weighted (golang.org/x/sync) is one.
type Slots interface {
	// Acquire takes n slots, waiting until they are free or ctx ends.
	Acquire(ctx context.Context, n int64) error
	// Release returns n slots.
	Release(n int64)
}

// Runner resolves and simulates scenarios.
type Runner struct {
	Env scenario.Env
	// Workers bounds the simulations this Runner runs at once (0 =
	// GOMAXPROCS).
	Workers int
	// Slots, when set, is a shared budget each simulation takes one slot of
	// while it runs, on top of Workers (nil: Workers alone bounds them, as
	// the CLI wants).
	Slots Slots
	// MaxEvents bounds each simulation (0 = the simulator's default).
	MaxEvents int64
	// Admit, when set, is asked before each simulation, with the scenario
	// as it will run: an error (a server's bound on the work, say) is the
	// simulation's outcome instead.
	Admit func(s scenario.Scenario, res *scenario.Resolved) error

	once   sync.Once
	cached scenario.Env
}

// env is Env with its opener memoised.
func (r *Runner) env() scenario.Env {
	r.once.Do(func() {
		r.cached = r.Env
		if open := r.Env.Open; open != nil {
			files := map[string][]byte{}
			var mu sync.Mutex
			r.cached.Open = func(name string) (io.ReadCloser, error) {
				mu.Lock()
				defer mu.Unlock()
				if b, ok := files[name]; ok {
					return io.NopCloser(bytes.NewReader(b)), nil
				}
				rc, err := open(name)
				if err != nil {
					return nil, err
				}
				defer rc.Close()
				b, err := io.ReadAll(rc)
				if err != nil {
					return nil, err
				}
				files[name] = b
				return io.NopCloser(bytes.NewReader(b)), nil
			}
		}
	})
	return r.cached
}

// Outcome is one simulated scenario.
type Outcome struct {
	Report   *sim.Report
	Resolved *scenario.Resolved
	Err      error
}

// PanicError is a simulation that panicked: Run turns the panic into the
// outcome's error, since it may run on a goroutine of RunAll or Plan that
// no caller could recover. Stack is for the log, not for users.
type PanicError struct {
	Value any
	Stack []byte
}

func (e *PanicError) Error() string { return fmt.Sprintf("simulation panicked: %v", e.Value) }

// Run simulates one scenario. Files the scenario references (a trace, an
// empirical length file) are read once per Runner, however many
// simulations use them.
func (r *Runner) Run(ctx context.Context, s scenario.Scenario) Outcome {
	return r.run(ctx, s, nil)
}

// run is Run with simulator options made from the resolved scenario.
func (r *Runner) run(ctx context.Context, s scenario.Scenario, opts func(*scenario.Resolved) []sim.Option) (out Outcome) {
	defer func() {
		if p := recover(); p != nil {
			out = Outcome{Err: &PanicError{Value: p, Stack: debug.Stack()}}
		}
	}()
	res, err := s.Resolve(r.env())
	if err != nil {
		return Outcome{Err: err}
	}
	res.Config.MaxEvents = r.MaxEvents
	if r.Admit != nil {
		if err := r.Admit(s, res); err != nil {
			return Outcome{Resolved: res, Err: err}
		}
	}
	if r.Slots != nil {
		if err := r.Slots.Acquire(ctx, 1); err != nil {
			return Outcome{Resolved: res, Err: err}
		}
		defer r.Slots.Release(1)
	}
	var o []sim.Option
	if opts != nil {
		o = opts(res)
	}
	rep, err := sim.Run(ctx, res.Config, o...)
	return Outcome{Report: rep, Resolved: res, Err: err}
}

// RunAll simulates scenarios in parallel; outcome i belongs to scenario i.
// done, if set, is called after each one (from several goroutines).
func (r *Runner) RunAll(ctx context.Context, ss []scenario.Scenario, done func()) []Outcome {
	out := make([]Outcome, len(ss))
	workers.For(len(ss), r.Workers, func(i int) {
		if err := ctx.Err(); err != nil {
			out[i] = Outcome{Err: err} // not run: ctx ended first
			return
		}
		out[i] = r.Run(ctx, ss[i])
		if done != nil {
			done()
		}
	})
	return out
}

// Progress turns completed-of-total counts into a 0–1 callback. Steps may
// come from several goroutines: the callback is called under a lock, so its
// calls never overlap and their values never decrease.
type Progress struct {
	mu    sync.Mutex
	done  int
	total int
	last  float64
	f     func(float64)
}

// NewProgress reports to f (which may be nil) as steps complete.
func NewProgress(total int, f func(float64)) *Progress { return &Progress{total: max(total, 1), f: f} }

// Step records one completed step.
func (p *Progress) Step() {
	if p == nil || p.f == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.done++
	// Grow may have raised the total since the last step: never go back.
	v := max(min(float64(p.done)/float64(p.total), 1), p.last)
	p.last = v
	p.f(v)
}

// Grow adds steps to the total (searches learn theirs as they go).
func (p *Progress) Grow(n int) {
	if p == nil {
		return
	}
	p.mu.Lock()
	p.total += n
	p.mu.Unlock()
}
