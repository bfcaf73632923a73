package api

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeClock is a settable clock for TTL tests.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *fakeClock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func newManager(workers, queue int, clock *fakeClock) *JobManager {
	opt := JobOptions{Workers: workers, QueueSize: queue, ResultTTL: time.Minute, MaxFinished: 3, Timeout: time.Minute}
	if clock != nil {
		opt.Now = clock.now
	}
	return NewJobManager(opt)
}

// waitState polls until job id reaches state.
func waitState(t *testing.T, m *JobManager, id string, want JobState) JobView {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		v, err := m.Get(id)
		if err != nil {
			t.Fatal(err)
		}
		if v.State == want {
			return v
		}
		if time.Now().After(deadline) {
			t.Fatalf("job %s is %s, want %s", id, v.State, want)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// blocker is a runner that reports progress and waits for release or ctx.
type blocker struct {
	started chan struct{}
	release chan struct{}
}

func newBlocker() *blocker {
	return &blocker{started: make(chan struct{}, 100), release: make(chan struct{})}
}

func (b *blocker) run(ctx context.Context, params json.RawMessage, progress func(float64)) (any, error) {
	progress(0.5)
	b.started <- struct{}{}
	select {
	case <-b.release:
		return map[string]string{"echo": string(params)}, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func TestJobLifecycle(t *testing.T) {
	m := newManager(1, 2, nil)
	b := newBlocker()
	m.Register("block", b.run, nil)
	m.Start()
	defer m.Shutdown(context.Background())

	v, err := m.Submit("block", json.RawMessage(`1`))
	if err != nil || v.State != JobQueued {
		t.Fatalf("submit: %+v, %v", v, err)
	}
	<-b.started
	if got := waitState(t, m, v.ID, JobRunning); got.Progress != 0.5 || got.StartedAt == nil {
		t.Errorf("running job: %+v", got)
	}
	close(b.release)
	got := waitState(t, m, v.ID, JobSucceeded)
	if got.Progress != 1 || got.FinishedAt == nil || got.Error != nil {
		t.Errorf("finished job: %+v", got)
	}
	if string(got.Result) != `{"echo":"1"}` || got.ResultBytes != int64(len(got.Result)) {
		t.Errorf("result %s (%d bytes)", got.Result, got.ResultBytes)
	}
	if l := m.List(); len(l) != 1 || l[0].Result != nil {
		t.Errorf("list %+v (want one job, no result)", l)
	}
}

func TestJobFailuresAndPanics(t *testing.T) {
	m := newManager(1, 4, nil)
	m.Register("fail", func(context.Context, json.RawMessage, func(float64)) (any, error) {
		return nil, ErrOverLimit
	}, nil)
	m.Register("panic", func(context.Context, json.RawMessage, func(float64)) (any, error) {
		panic("boom")
	}, nil)
	m.Register("checked", nil, func(json.RawMessage) error { return &ValidationError{Fields: []FieldProblem{{"x", "bad"}}} })
	m.Start()
	defer m.Shutdown(context.Background())

	v, _ := m.Submit("fail", nil)
	if got := waitState(t, m, v.ID, JobFailed); got.Error == nil || got.Error.Status != http.StatusUnprocessableEntity {
		t.Errorf("failed job error %+v", got.Error)
	}
	v, _ = m.Submit("panic", nil)
	if got := waitState(t, m, v.ID, JobFailed); got.Error == nil || got.Error.Status != http.StatusInternalServerError {
		t.Errorf("panicked job error %+v", got.Error)
	}
	var ve *ValidationError
	if _, err := m.Submit("checked", nil); !errors.As(err, &ve) {
		t.Errorf("checked submit: %v", err)
	}
	if _, err := m.Submit("nope", nil); !errors.As(err, &ve) || ve.Fields[0].Field != "kind" {
		t.Errorf("unknown kind: %v", err)
	}
}

func TestJobQueueFullAndCancel(t *testing.T) {
	m := newManager(1, 1, nil)
	b := newBlocker()
	m.Register("block", b.run, nil)
	m.Start()
	defer m.Shutdown(context.Background())

	running, _ := m.Submit("block", nil)
	<-b.started
	queued, err := m.Submit("block", nil)
	if err != nil {
		t.Fatal(err)
	}
	var qf *QueueFullError
	if _, err := m.Submit("block", nil); !errors.As(err, &qf) || qf.RetryAfterS < 1 {
		t.Fatalf("third submit: %v, want a full queue", err)
	}
	if v, deleted, err := m.Cancel(queued.ID); err != nil || v.State != JobCancelled || deleted {
		t.Fatalf("cancel queued: %+v %v", v, err)
	}
	if _, _, err := m.Cancel(running.ID); err != nil {
		t.Fatal(err)
	}
	got := waitState(t, m, running.ID, JobCancelled)
	if got.Error == nil || got.Error.Status != http.StatusServiceUnavailable {
		t.Errorf("cancelled job error %+v", got.Error)
	}
	// The cancelled queued job is skipped; the queue has room again.
	if _, err := m.Submit("block", nil); err != nil {
		t.Errorf("submit after cancel: %v", err)
	}
}

func TestJobRetention(t *testing.T) {
	clock := &fakeClock{t: time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)}
	m := newManager(1, 8, clock)
	m.Register("ok", func(context.Context, json.RawMessage, func(float64)) (any, error) { return 1, nil }, nil)
	m.Start()
	defer m.Shutdown(context.Background())
	var ids []string
	for range 5 {
		v, err := m.Submit("ok", nil)
		if err != nil {
			t.Fatal(err)
		}
		waitState(t, m, v.ID, JobSucceeded)
		ids = append(ids, v.ID)
		clock.add(time.Second)
	}
	// MaxFinished 3: the two oldest are gone.
	if l := m.List(); len(l) != 3 || l[0].ID != ids[2] {
		t.Fatalf("kept %d jobs, want the 3 newest", len(l))
	}
	if _, err := m.Get(ids[0]); !errors.Is(err, ErrNotFound) {
		t.Errorf("oldest job: %v, want not found", err)
	}
	clock.add(2 * time.Minute) // past the TTL
	if l := m.List(); len(l) != 0 {
		t.Errorf("kept %d jobs past their TTL", len(l))
	}
}

func TestJobShutdown(t *testing.T) {
	m := newManager(1, 4, nil)
	b := newBlocker()
	m.Register("block", b.run, nil)
	m.Start()
	running, _ := m.Submit("block", nil)
	<-b.started
	queued, _ := m.Submit("block", nil)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	m.Shutdown(ctx) // the grace period ends: the running job is cancelled
	for _, id := range []string{running.ID, queued.ID} {
		if v, _ := m.Get(id); v.State != JobCancelled {
			t.Errorf("job %s is %s after shutdown", id, v.State)
		}
	}
	if _, err := m.Submit("block", nil); !errors.Is(err, ErrShuttingDown) {
		t.Errorf("submit after shutdown: %v", err)
	}
}

// TestJobsHTTP runs a simulate job through the endpoints.
func TestJobsHTTP(t *testing.T) {
	s := newTestServer(t, nil)
	s.jobs.Start()
	defer s.jobs.Shutdown(context.Background())
	h := s.Handler()
	r := do(t, h, "POST", "/v1/jobs", `{"kind":"simulate","params":{"model":"llama-3.1-8b","gpu":"h100-sxm","workload":{"requests":300}}}`)
	if r.status != http.StatusAccepted {
		t.Fatalf("HTTP %d: %s", r.status, r.body)
	}
	var v JobView
	r.json(t, &v)
	if loc := r.header.Get("Location"); loc != "/v1/jobs/"+v.ID {
		t.Errorf("Location %q", loc)
	}
	waitState(t, s.jobs, v.ID, JobSucceeded)
	r = do(t, h, "GET", "/v1/jobs/"+v.ID, "")
	var got struct {
		State  JobState `json:"state"`
		Result struct {
			Requests struct {
				Total int `json:"total"`
			} `json:"requests"`
		} `json:"result"`
	}
	r.json(t, &got)
	if got.State != JobSucceeded || got.Result.Requests.Total != 300 {
		t.Errorf("job answer: %s", r.body)
	}
	if s.jobs.ResultBytes() == 0 {
		t.Error("a kept result is not counted")
	}
	r = do(t, h, "DELETE", "/v1/jobs/"+v.ID, "")
	if r.status != http.StatusOK {
		t.Errorf("DELETE of a finished job: HTTP %d", r.status)
	}
	r = do(t, h, "GET", "/v1/jobs", "")
	var l JobList
	r.json(t, &l)
	if len(l.Jobs) != 0 {
		t.Errorf("list after DELETE of the finished job: %s", r.body)
	}
	if r := do(t, h, "GET", "/v1/jobs/"+v.ID, ""); r.status != http.StatusNotFound {
		t.Errorf("GET after DELETE: HTTP %d, want 404", r.status)
	}
	if n := s.jobs.ResultBytes(); n != 0 {
		t.Errorf("%d result bytes kept after DELETE", n)
	}
	m := do(t, h, "GET", "/metrics", "")
	for _, want := range []string{`headroom_jobs{state="succeeded"} 0`, `headroom_simulated_requests_total{mode="job"} 300`,
		`headroom_http_requests_total{method="POST",route="/v1/jobs",status="202"} 1`, `headroom_http_request_duration_seconds_bucket{method="GET",route="/v1/jobs/:id"`} {
		if !strings.Contains(string(m.body), want) {
			t.Errorf("metrics lack %s", want)
		}
	}
}

// TestJobsQueueFullHTTP answers 429 with Retry-After.
func TestJobsQueueFullHTTP(t *testing.T) {
	s := newTestServer(t, func(c *Config) { c.Jobs.QueueSize = 1 })
	// Workers not started: the queue fills.
	h := s.Handler()
	body := `{"kind":"simulate","params":{"model":"llama-3.1-8b","gpu":"h100-sxm"}}`
	if r := do(t, h, "POST", "/v1/jobs", body); r.status != http.StatusAccepted {
		t.Fatalf("HTTP %d: %s", r.status, r.body)
	}
	r := do(t, h, "POST", "/v1/jobs", body)
	if r.status != http.StatusTooManyRequests || r.header.Get("Retry-After") == "" {
		t.Fatalf("HTTP %d, Retry-After %q: %s", r.status, r.header.Get("Retry-After"), r.body)
	}
	r.problem(t)
}

// TestCancelIsIdempotent (issue 23, smaller items): DELETEs of a queued job
// agree however many cross: each answers it cancelled, and it stays
// listed; a job gone says a restart forgets jobs.
func TestCancelIsIdempotent(t *testing.T) {
	m := newManager(1, 4, nil)
	m.Register("k", func(ctx context.Context, _ json.RawMessage, _ func(float64)) (any, error) { return "done", nil }, nil)
	v, err := m.Submit("k", json.RawMessage(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	views := make([]JobView, 8)
	deleted := make([]bool, 8)
	for i := range views {
		wg.Go(func() {
			var err error
			views[i], deleted[i], err = m.Cancel(v.ID)
			if err != nil {
				t.Errorf("Cancel %d: %v", i, err)
			}
		})
	}
	wg.Wait()
	for i := range views {
		if views[i].State != JobCancelled || deleted[i] {
			t.Errorf("Cancel %d: state %s, deleted %v; want cancelled, kept", i, views[i].State, deleted[i])
		}
	}
	if got, err := m.Get(v.ID); err != nil || got.State != JobCancelled {
		t.Errorf("after the DELETEs: %v, %v", got.State, err)
	}
	_, err = m.Get("NOPE")
	if !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), "restart") {
		t.Errorf("an unknown job: %v, want a 404 saying jobs do not outlive a restart", err)
	}
}
