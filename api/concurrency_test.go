package api

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/headroom-sim/headroom/internal/study/scenario"
	"github.com/headroom-sim/headroom/sim"
)

// TestParallelSimulateIsDeterministic runs many simulations at once and
// checks each answer is byte-identical to the same scenario run alone.
func TestParallelSimulateIsDeterministic(t *testing.T) {
	h := newTestServer(t, func(c *Config) { c.Simulate.MaxConcurrent = 64 }).Handler()
	scenarios := make([]string, 6)
	for i := range scenarios {
		scenarios[i] = fmt.Sprintf(`{"model":"llama-3.1-8b","gpu":"h100-sxm","replicas":%d,"router":"least_kv",
			"workload":{"requests":300,"seed":%d,"arrival":{"type":"gamma","rate_rps":%d,"cv":2},
			"input_tokens":{"type":"lognormal","mean":800,"stddev":400},"output_tokens":{"type":"uniform","min":16,"max":400}}}`,
			1+i%2, i+1, 10+5*i)
	}
	sequential := make([][]byte, len(scenarios))
	for i, sc := range scenarios {
		r := do(t, h, "POST", "/v1/simulate", sc)
		if r.status != http.StatusOK {
			t.Fatalf("scenario %d: HTTP %d: %s", i, r.status, r.body)
		}
		sequential[i] = r.body
	}
	const rounds = 4
	var wg sync.WaitGroup
	got := make([][]byte, rounds*len(scenarios))
	for k := range got {
		wg.Go(func() {
			r := do(t, h, "POST", "/v1/simulate", scenarios[k%len(scenarios)])
			got[k] = r.body
		})
	}
	wg.Wait()
	for k, b := range got {
		if i := k % len(scenarios); !bytes.Equal(b, sequential[i]) {
			t.Errorf("parallel run %d of scenario %d differs from its sequential run", k, i)
		}
	}
}

// cpuTime is the process's user + system CPU time.
func cpuTime(t *testing.T) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Skip("getrusage:", err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// TestCancelledJobStopsPromptly cancels a long simulation and checks that
// it ends cancelled at once and that the process stops burning CPU.
func TestCancelledJobStopsPromptly(t *testing.T) {
	s := newTestServer(t, func(c *Config) { c.Jobs.Workers = 1 })
	s.jobs.Start()
	defer s.jobs.Shutdown(context.Background())
	h := s.Handler()
	r := do(t, h, "POST", "/v1/jobs", `{"kind":"simulate","params":{"model":"llama-3.1-8b","gpu":"h100-sxm",
		"workload":{"requests":1000000,"arrival":{"type":"poisson","rate_rps":40}}}}`)
	if r.status != http.StatusAccepted {
		t.Fatalf("HTTP %d: %s", r.status, r.body)
	}
	var v JobView
	r.json(t, &v)
	// Let it make progress.
	deadline := time.Now().Add(20 * time.Second)
	for {
		got, _ := s.jobs.Get(v.ID)
		if got.State == JobRunning && got.Progress > 0.01 {
			break
		}
		if got.State.final() || time.Now().After(deadline) {
			t.Fatalf("job did not get going: %+v", got)
		}
		time.Sleep(5 * time.Millisecond)
	}
	start := time.Now()
	if r := do(t, h, "DELETE", "/v1/jobs/"+v.ID, ""); r.status != http.StatusOK {
		t.Fatalf("DELETE: HTTP %d", r.status)
	}
	got := waitState(t, s.jobs, v.ID, JobCancelled)
	stop := time.Since(start)
	if stop > 500*time.Millisecond {
		t.Errorf("the job took %s to stop after DELETE", stop)
	}
	if got.Progress >= 1 {
		t.Errorf("the job finished instead of stopping: %+v", got)
	}
	runtime.GC()
	before := cpuTime(t)
	time.Sleep(300 * time.Millisecond)
	if used := cpuTime(t) - before; used > 150*time.Millisecond {
		t.Errorf("the process used %s of CPU in the 300 ms after cancelling", used)
	}
}

// TestGracefulShutdown serves on a real listener, starts a slow request,
// and stops: the request that finishes within the grace period is
// answered, one that does not is cancelled with 503.
func TestGracefulShutdown(t *testing.T) {
	for _, tt := range []struct {
		name       string
		grace      time.Duration
		wantStatus int
	}{
		{"finishes within the grace period", 5 * time.Second, http.StatusOK},
		{"cancelled after the grace period", 100 * time.Millisecond, http.StatusServiceUnavailable},
	} {
		t.Run(tt.name, func(t *testing.T) {
			base := newTestServer(t, nil)
			slow := &slowEngine{Engine: base.engine, delay: time.Second, started: make(chan struct{}, 1)}
			s, err := New(func() Config { c := testConfig(); c.ShutdownGrace = tt.grace; return c }(), Options{Engine: slow})
			if err != nil {
				t.Fatal(err)
			}
			ts := httptest.NewUnstartedServer(nil)
			ln := ts.Listener
			ctx, stop := context.WithCancel(context.Background())
			served := make(chan error, 1)
			go func() { served <- s.Serve(ctx, ln) }()
			url := "http://" + ln.Addr().String()
			answered := make(chan int, 1)
			go func() {
				resp, err := http.Post(url+"/v1/simulate", "application/json",
					bytes.NewBufferString(`{"model":"llama-3.1-8b","gpu":"h100-sxm","workload":{"requests":20}}`))
				if err != nil {
					answered <- 0
					return
				}
				resp.Body.Close()
				answered <- resp.StatusCode
			}()
			<-slow.started
			stop()
			if err := <-served; err != nil {
				t.Errorf("Serve: %v", err)
			}
			if got := <-answered; got != tt.wantStatus {
				t.Errorf("in-flight request answered %d, want %d", got, tt.wantStatus)
			}
			if _, err := http.Get(url + "/healthz"); err == nil {
				t.Errorf("the server still accepts connections")
			}
		})
	}
}

// slowEngine delays each simulation, honouring its context.
type slowEngine struct {
	Engine
	delay   time.Duration
	started chan struct{}
}

func (e *slowEngine) Simulate(ctx context.Context, res *scenario.Resolved, progress func(float64)) (*sim.Report, error) {
	e.started <- struct{}{}
	select {
	case <-time.After(e.delay):
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return e.Engine.Simulate(ctx, res, progress)
}
