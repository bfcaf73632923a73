package api

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/headroom-sim/headroom/internal/study/scenario"
	"github.com/headroom-sim/headroom/sim"
)

// TestSlowBodyHoldsNoAdmission (issue 23, item 8): a client trickling its
// body holds no synchronous admission: with one admitted at a time,
// another simulate is answered while it trickles, and the trickler gets
// 408 at body_read_timeout.
func TestSlowBodyHoldsNoAdmission(t *testing.T) {
	s := newTestServer(t, func(c *Config) { c.Simulate.MaxConcurrent = 1; c.BodyReadTimeout = 700 * time.Millisecond })
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()
	conn, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "POST /v1/simulate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 200\r\n\r\n{")
	time.Sleep(100 * time.Millisecond) // the trickler's request is in
	resp, err := http.Post(srv.URL+"/v1/simulate", "application/json", strings.NewReader(`{"model":"llama-3.1-8b","gpu":"h100-sxm","workload":{"requests":5}}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("a simulate beside a trickling body: HTTP %d, want 200", resp.StatusCode)
	}
	conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	slow, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("the trickler got no answer: %v", err)
	}
	slow.Body.Close()
	if slow.StatusCode != http.StatusRequestTimeout {
		t.Errorf("the trickler: HTTP %d, want 408", slow.StatusCode)
	}
}

// TestLongIDsRefusedBeforeMatching (issue 23, item 9): a 900 KB id is a
// 400 naming it, at once, before any "did you mean" matching.
func TestLongIDsRefusedBeforeMatching(t *testing.T) {
	h := newTestServer(t, nil).Handler()
	long := strings.Repeat("a", 900_000)
	start := time.Now()
	for _, path := range []string{"/v1/models/", "/v1/gpus/", "/v1/jobs/", "/v1/calibrations/"} {
		r := do(t, h, "GET", path+long, "")
		if r.status != http.StatusBadRequest {
			t.Fatalf("GET %s<900 KB>: HTTP %d", path, r.status)
		}
		r.wantProblem(t, "invalid-request", "id")
	}
	// In a scenario, the catalog refuses it unmatched: 404, no suggestion.
	r := do(t, h, "POST", "/v1/simulate", `{"model":"`+long+`","gpu":"h100-sxm"}`)
	if p := r.problem(t); p.Status != http.StatusNotFound || strings.Contains(p.Detail, "did you mean") || len(p.Detail) > 1000 {
		t.Errorf("a 900 KB model id in a scenario: HTTP %d, %d-byte detail", p.Status, len(p.Detail))
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("five lookups of a 900 KB id took %s", d)
	}
}

// faultyEngine is an Engine whose simulator fails as a simulator bug
// would.
type faultyEngine struct{ Engine }

func (faultyEngine) Simulate(context.Context, *scenario.Resolved, func(float64)) (*sim.Report, error) {
	return nil, fmt.Errorf("%w: 10 requests issued but 9 completed, 0 rejected and 0 unfinished (a simulator bug)", sim.ErrInternal)
}

// TestSimulatorFaultIs500AndLogged (issue 19, item 4): a fault of the
// simulator is the server's: 500, its detail hidden, the error logged.
func TestSimulatorFaultIs500AndLogged(t *testing.T) {
	s := newTestServer(t, nil)
	var log bytes.Buffer
	srv, err := New(s.cfg, Options{Engine: faultyEngine{s.engine}, Logger: slog.New(slog.NewTextHandler(&log, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	r := do(t, srv.Handler(), "POST", "/v1/simulate", `{"model":"llama-3.1-8b","gpu":"h100-sxm","workload":{"requests":5}}`)
	p := r.wantProblem(t, "internal", "")
	if p.Status != http.StatusInternalServerError || strings.Contains(p.Detail, "simulator bug") {
		t.Errorf("problem %+v", p)
	}
	if !strings.Contains(log.String(), "a simulator bug") || !strings.Contains(log.String(), "level=ERROR") {
		t.Errorf("the fault is not logged: %q", log.String())
	}
}
