package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/headroom-sim/headroom/hardware"
	"github.com/headroom-sim/headroom/internal/study/plan"
	"github.com/headroom-sim/headroom/sim"
)

// hostileScenarios are valid numbers that break time: the probes of the
// "never a 500" review. Each must be refused as the scenario's fault (400
// naming the field, or 422 naming the workload), never answered 500.
var hostileScenarios = []struct {
	name, body string
}{
	{"rate 1e-9", `{"model":"llama-3.1-8b","gpu":"h100-sxm","workload":{"requests":10,"arrival":{"type":"poisson","rate_rps":1e-9}}}`},
	{"stage 1e10 s", `{"model":"llama-3.1-8b","gpu":"h100-sxm","workload":{"stages":[{"duration_s":1e10,"rate_rps":1e-9}]}}`},
	{"constant 1e-9", `{"model":"llama-3.1-8b","gpu":"h100-sxm","workload":{"requests":3,"arrival":{"type":"constant","rate_rps":1e-9}}}`},
}

// refusedAsInput checks a problem is the input's fault and names a field
// of the workload.
func refusedAsInput(t *testing.T, p Problem) {
	t.Helper()
	if p.Status != http.StatusBadRequest && p.Status != http.StatusUnprocessableEntity {
		t.Fatalf("status %d (%s), want 400 or 422", p.Status, p.Detail)
	}
	if len(p.Errors) == 0 || !strings.Contains(p.Errors[0].Field, "workload") {
		t.Fatalf("the problem does not name the workload field: %+v", p)
	}
}

// jobRefusedAsInput submits the job body and checks it is refused as the
// input's fault: at submission, or as the failure of the job.
func jobRefusedAsInput(t *testing.T, s *Server, body string) {
	t.Helper()
	r := do(t, s.Handler(), "POST", "/v1/jobs", body)
	if r.status != http.StatusAccepted {
		refusedAsInput(t, r.problem(t))
		return
	}
	var v JobView
	r.json(t, &v)
	v = waitFinal(t, s.jobs, v.ID)
	if v.State != JobFailed || v.Error == nil {
		t.Fatalf("job %s, want failed", v.State)
	}
	refusedAsInput(t, *v.Error)
}

func TestHostileScenarioSyncIsNot500(t *testing.T) {
	s := newTestServer(t, nil)
	for _, c := range hostileScenarios {
		t.Run(c.name, func(t *testing.T) {
			r := do(t, s.Handler(), "POST", "/v1/simulate", c.body)
			refusedAsInput(t, r.problem(t))
		})
	}
}

func TestHostileScenarioJobIsNot500(t *testing.T) {
	s := newTestServer(t, nil)
	s.jobs.Start()
	defer s.jobs.Shutdown(t.Context())
	for _, c := range hostileScenarios {
		t.Run(c.name, func(t *testing.T) {
			jobRefusedAsInput(t, s, `{"kind":"simulate","params":`+c.body+`}`)
		})
	}
}

func TestHostileCompareJobIsNot500(t *testing.T) {
	s := newTestServer(t, nil)
	s.jobs.Start()
	defer s.jobs.Shutdown(t.Context())
	jobRefusedAsInput(t, s, `{"kind":"compare","params":{"a":`+hostileScenarios[0].body+`,"b":{"model":"llama-3.1-8b","gpu":"a100-80gb"}}}`)
}

// TestSimulationErrorKinds: what sim.Run returns keeps its kind: a field
// or a limit is the input's (400, 422), the end of the caller's context is
// 503, and a fault of the simulator (sim.ErrInternal, "a simulator bug")
// or an error no rule knows is the server's, 500 and logged, never a 422
// that blames the client.
func TestSimulationErrorKinds(t *testing.T) {
	for _, c := range []struct {
		name     string
		err      error
		status   int
		internal bool
	}{
		{"unknown error", errors.New("sim: the trace has no requests"), 500, true},
		{"simulator fault", fmt.Errorf("%w: 10 requests issued but 9 completed, 0 rejected and 0 unfinished (a simulator bug)", sim.ErrInternal), 500, true},
		{"a panic in a planner run", &plan.PanicError{Value: "index out of range"}, 500, true},
		{"field", &hardware.FieldError{Field: "workload.requests", Reason: "must be >= 1"}, 400, false},
		{"time span", fmt.Errorf("%w: past 10000000 s", sim.ErrTooLong), 422, false},
		{"time span naming its field", fmt.Errorf("%w: %w", sim.ErrTooLong, &hardware.FieldError{Field: "workload.arrival.rate_rps", Reason: "the next arrival falls after"}), 422, false},
		{"event limit", sim.ErrEventLimit, 422, false},
		{"cancelled", context.Canceled, 503, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			p, internal := problemFor(c.err)
			if internal != c.internal || p.Status != c.status {
				t.Fatalf("status %d (internal %v), want %d (internal %v)", p.Status, internal, c.status, c.internal)
			}
			if c.status == 422 && c.name == "time span naming its field" && (len(p.Errors) == 0 || p.Errors[0].Field != "workload.arrival.rate_rps") {
				t.Errorf("fields %+v, want workload.arrival.rate_rps", p.Errors)
			}
		})
	}
}
