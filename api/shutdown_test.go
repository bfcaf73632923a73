package api

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// syncBuffer is a log sink safe for concurrent writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}
func (b *syncBuffer) String() string { b.mu.Lock(); defer b.mu.Unlock(); return b.b.String() }

// serveReal runs s on a real listener; stop ends ctx, served reports Serve's
// return.
func serveReal(t *testing.T, s *Server) (url string, stop func(), served chan error) {
	t.Helper()
	ln := httptest.NewUnstartedServer(nil).Listener
	ctx, cancel := context.WithCancel(context.Background())
	served = make(chan error, 1)
	go func() { served <- s.Serve(ctx, ln) }()
	return "http://" + ln.Addr().String(), cancel, served
}

func getStatus(t *testing.T, url string) (int, []byte) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// TestShutdownDrains: on shutdown the listener stays open for the drain,
// /readyz answers 503 (and /healthz 200) meanwhile, new jobs are refused,
// the queued job is cancelled, logged and listed as cancelled, and the
// running one finishes.
func TestShutdownDrains(t *testing.T) {
	var logs syncBuffer
	cfg := testConfig()
	cfg.Jobs.Workers = 1
	cfg.ShutdownDrain = 700 * time.Millisecond
	cfg.ShutdownGrace = 10 * time.Second
	base := newTestServer(t, nil)
	s, err := New(cfg, Options{Engine: base.engine, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	b := newBlocker()
	s.jobs.Register("block", b.run, nil)
	url, stop, served := serveReal(t, s)
	post := func(body string) (int, JobView) {
		resp, err := http.Post(url+"/v1/jobs", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var v JobView
		json.NewDecoder(resp.Body).Decode(&v)
		return resp.StatusCode, v
	}
	_, running := post(`{"kind":"block","params":{}}`)
	<-b.started
	code, queued := post(`{"kind":"block","params":{}}`)
	if code != http.StatusAccepted {
		t.Fatalf("second job: HTTP %d", code)
	}

	stop()
	time.Sleep(100 * time.Millisecond) // inside the drain
	if code, _ := getStatus(t, url+"/readyz"); code != http.StatusServiceUnavailable {
		t.Errorf("/readyz while draining: HTTP %d, want 503", code)
	}
	if code, _ := getStatus(t, url+"/healthz"); code != http.StatusOK {
		t.Errorf("/healthz while draining: HTTP %d, want 200", code)
	}
	if code, _ := post(`{"kind":"block","params":{}}`); code != http.StatusServiceUnavailable {
		t.Errorf("a new job while draining: HTTP %d, want 503", code)
	}
	code, body := getStatus(t, url+"/v1/jobs/"+queued.ID)
	var v JobView
	json.Unmarshal(body, &v)
	if code != http.StatusOK || v.State != JobCancelled || v.Error == nil || v.Error.Status != http.StatusServiceUnavailable {
		t.Errorf("the queued job while draining: HTTP %d %s", code, body)
	}
	if !strings.Contains(logs.String(), "queued job cancelled") || !strings.Contains(logs.String(), queued.ID) {
		t.Errorf("the dropped job is not logged:\n%s", logs.String())
	}
	close(b.release)
	if err := <-served; err != nil {
		t.Fatal(err)
	}
	if v, err := s.jobs.Get(running.ID); err != nil || v.State != JobSucceeded {
		t.Errorf("the running job: %+v %v, want succeeded", v, err)
	}
}

// TestShutdownAbort: closing Options.Abort ends a long drain and grace at
// once.
func TestShutdownAbort(t *testing.T) {
	cfg := testConfig()
	cfg.ShutdownDrain = time.Hour
	cfg.ShutdownGrace = time.Hour
	abort := make(chan struct{})
	base := newTestServer(t, nil)
	s, err := New(cfg, Options{Engine: base.engine, Abort: abort})
	if err != nil {
		t.Fatal(err)
	}
	_, stop, served := serveReal(t, s)
	stop()
	time.Sleep(50 * time.Millisecond)
	close(abort)
	select {
	case <-served:
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return after Abort")
	}
}
