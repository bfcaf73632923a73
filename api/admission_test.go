package api

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/headroom-sim/headroom/internal/study/scenario"
	"github.com/headroom-sim/headroom/sim"
)

// gateEngine holds each simulation until released (or its context ends).
type gateEngine struct {
	Engine
	started chan struct{}
	release chan struct{}
}

func (e *gateEngine) Simulate(ctx context.Context, res *scenario.Resolved, progress func(float64)) (*sim.Report, error) {
	e.started <- struct{}{}
	select {
	case <-e.release:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return e.Engine.Simulate(ctx, res, progress)
}

// gatedServer is a server whose simulations wait on a gateEngine.
func gatedServer(t *testing.T, mutate func(*Config)) (*Server, *gateEngine) {
	t.Helper()
	base := newTestServer(t, nil)
	g := &gateEngine{Engine: base.engine, started: make(chan struct{}, 100), release: make(chan struct{})}
	cfg := testConfig()
	mutate(&cfg)
	s, err := New(cfg, Options{Engine: g})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, g
}

const tinyScenario = `{"model":"llama-3.1-8b","gpu":"h100-sxm","workload":{"requests":20}}`

// TestSyncAdmissionSheds: beyond simulate.max_concurrent synchronous
// simulations in flight the next is refused at once with 429 and
// Retry-After (128 concurrent calls used to all run), the admitted ones
// share the CPU budget, and /healthz answers meanwhile.
func TestSyncAdmissionSheds(t *testing.T) {
	s, g := gatedServer(t, func(c *Config) { c.Simulate.MaxConcurrent = 2; c.Limits.Simulations = 1 })
	h := s.Handler()
	var wg sync.WaitGroup
	codes := make([]int, 2)
	for i := range 2 {
		wg.Go(func() { codes[i] = do(t, h, "POST", "/v1/simulate", tinyScenario).status })
	}
	<-g.started // one runs, the other waits for the only slot
	waitFor(t, "the second call to wait for a slot", func() bool { _, w := s.cpu.stats(); return w == 1 })

	r := do(t, h, "POST", "/v1/simulate", tinyScenario)
	p := r.problem(t)
	ra, _ := strconv.Atoi(r.header.Get("Retry-After"))
	if p.Status != http.StatusTooManyRequests || p.Type != "urn:headroom:problem:busy" || ra < 1 {
		t.Fatalf("third call: %+v, Retry-After %q; want 429 busy with Retry-After", p, r.header.Get("Retry-After"))
	}
	if !strings.Contains(p.Detail, "simulate.max_concurrent") {
		t.Errorf("detail %q does not name simulate.max_concurrent", p.Detail)
	}
	start := time.Now()
	if r := do(t, h, "GET", "/healthz", ""); r.status != http.StatusOK {
		t.Fatalf("/healthz under load: HTTP %d", r.status)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("/healthz took %s under load", d)
	}
	m := string(do(t, h, "GET", "/metrics", "").body)
	for _, line := range []string{"headroom_sync_simulations_in_flight 2", "headroom_simulations_running 1", "headroom_simulations_waiting 1"} {
		if !strings.Contains(m, "\n"+line+"\n") {
			t.Errorf("/metrics lacks %q", line)
		}
	}
	close(g.release)
	wg.Wait()
	if codes[0] != http.StatusOK || codes[1] != http.StatusOK {
		t.Fatalf("admitted calls answered %v", codes)
	}
	if used, waiting := s.cpu.stats(); used != 0 || waiting != 0 || s.gate.inFlightNow() != 0 {
		t.Fatalf("after the calls: %d slots used, %d waiting, %d in flight", used, waiting, s.gate.inFlightNow())
	}
}

// TestSyncSlotWaitIsBusyNotOverLimit: a synchronous call that cannot get a
// slot within its wall-time limit (a job holds the only one) is 429 busy,
// not a 422 "ran too long".
func TestSyncSlotWaitIsBusyNotOverLimit(t *testing.T) {
	s, g := gatedServer(t, func(c *Config) { c.Limits.Simulations = 1; c.Simulate.SyncTimeout = 200 * time.Millisecond })
	s.jobs.Start()
	defer s.jobs.Shutdown(context.Background())
	defer close(g.release)
	h := s.Handler()
	submit(t, h, "simulate", tinyScenario)
	<-g.started
	r := do(t, h, "POST", "/v1/simulate", tinyScenario)
	if p := r.problem(t); p.Status != http.StatusTooManyRequests || !strings.Contains(p.Detail, "limits.simulations") || r.header.Get("Retry-After") == "" {
		t.Fatalf("%+v, want 429 naming limits.simulations", p)
	}
}

// TestJobsShareTheBudget: simulate jobs and a sweep job's simulations all
// take slots of the one budget: with one slot held, two workers run
// nothing; released, everything finishes and no slot stays taken.
func TestJobsShareTheBudget(t *testing.T) {
	s := newTestServer(t, func(c *Config) { c.Limits.Simulations = 1; c.Jobs.Workers = 2 })
	s.jobs.Start()
	defer s.jobs.Shutdown(context.Background())
	h := s.Handler()
	if err := s.cpu.acquire(context.Background(), classSync, 1); err != nil {
		t.Fatal(err)
	}
	a := submit(t, h, "simulate", tinyScenario)
	b := submit(t, h, "sweep", `{"scenario":`+tinyScenario+`,"axes":[{"path":"engine.max_num_seqs","values":[8,16,32]}]}`)
	waitFor(t, "both jobs to wait for the slot", func() bool { _, w := s.cpu.stats(); return w == 2 })
	for _, id := range []string{a.ID, b.ID} {
		if v, _ := s.jobs.Get(id); v.State != JobRunning || v.Progress != 0 {
			t.Fatalf("job %s is %s at %.2f while the budget is taken", v.Kind, v.State, v.Progress)
		}
	}
	s.cpu.release(1)
	for _, id := range []string{a.ID, b.ID} {
		if v := waitFinal(t, s.jobs, id); v.State != JobSucceeded {
			t.Fatalf("job %s: %s %+v", v.Kind, v.State, v.Error)
		}
	}
	if used, waiting := s.cpu.stats(); used != 0 || waiting != 0 {
		t.Fatalf("%d slots used, %d waiting after the jobs", used, waiting)
	}
}
