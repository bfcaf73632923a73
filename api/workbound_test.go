package api

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/headroom-sim/headroom/internal/study/scenario"
	"github.com/headroom-sim/headroom/sim"
)

func TestEstimatedTokens(t *testing.T) {
	s := newTestServer(t, nil)
	for _, c := range []struct {
		name, body string
		want       float64
	}{
		{"fixed", `{"model":"llama-3.1-8b","gpu":"h100-sxm","workload":{"requests":10,"input_tokens":{"type":"fixed","value":100},"output_tokens":{"type":"fixed","value":50}}}`, 10 * 150},
		{"uniform", `{"model":"llama-3.1-8b","gpu":"h100-sxm","workload":{"requests":4,"input_tokens":{"type":"uniform","min":100,"max":300},"output_tokens":{"type":"fixed","value":10}}}`, 4 * 210},
		{"shared prefix", `{"model":"llama-3.1-8b","gpu":"h100-sxm","workload":{"requests":10,"input_tokens":{"type":"fixed","value":100},"output_tokens":{"type":"fixed","value":50},"shared_prefix":{"groups":2,"prefix_tokens":20}}}`, 10 * 170},
		// Three turns: the later ones carry 1 and 2 earlier turns, 1 on average.
		{"multi-turn", `{"model":"llama-3.1-8b","gpu":"h100-sxm","workload":{"requests":9,"input_tokens":{"type":"fixed","value":100},"output_tokens":{"type":"fixed","value":50},"multi_turn":{"turns":3,"think_time_ms":10}}}`, 9 * 300},
		{"stages", `{"model":"llama-3.1-8b","gpu":"h100-sxm","workload":{"stages":[{"duration_s":10,"rate_rps":2},{"duration_s":5,"rate_rps":4}],"input_tokens":{"type":"fixed","value":10},"output_tokens":{"type":"fixed","value":10}}}`, 40 * 20},
	} {
		t.Run(c.name, func(t *testing.T) {
			sc, err := decodeScenario([]byte(c.body), "test")
			if err != nil {
				t.Fatal(err)
			}
			res, err := s.engine.Prepare(sc, RunEnv{})
			if err != nil {
				t.Fatal(err)
			}
			if got, _, _ := estimatedTokens(&sc, res); got != c.want {
				t.Fatalf("%g tokens, want %g", got, c.want)
			}
		})
	}
}

// hugePrompts is the probe of 16M-token prompts, every one rejected.
const hugePrompts = `{"model":"llama-3.1-8b","gpu":"h100-sxm","workload":{"requests":20000,"arrival":{"type":"poisson","rate_rps":1000},"input_tokens":{"type":"fixed","value":16000000}}}`

// TestWorkIsBoundedByTokens: a run's cost is bounded by its estimated
// tokens, not its request count alone: refused before it runs (422 naming
// the workload and the limit), synchronously, as a job, and per sweep point.
func TestWorkIsBoundedByTokens(t *testing.T) {
	s := newTestServer(t, func(c *Config) { c.Jobs.MaxTokens = 1e9 })
	s.jobs.Start()
	defer s.jobs.Shutdown(context.Background())
	h := s.Handler()

	p := do(t, h, "POST", "/v1/simulate", hugePrompts).problem(t)
	if p.Status != http.StatusUnprocessableEntity || len(p.Errors) == 0 || p.Errors[0].Field != "workload" || !strings.Contains(p.Detail, "simulate.sync_max_tokens") {
		t.Fatalf("sync: %+v", p)
	}
	job := strings.Replace(hugePrompts, `"requests":20000`, `"requests":1000000`, 1)
	p = do(t, h, "POST", "/v1/jobs", `{"kind":"simulate","params":`+job+`}`).problem(t)
	if p.Status != http.StatusUnprocessableEntity || !strings.Contains(p.Detail, "jobs.max_tokens") {
		t.Fatalf("job: %+v", p)
	}
	p = do(t, h, "POST", "/v1/jobs", `{"kind":"compare","params":{"a":`+job+`,"b":{"model":"llama-3.1-8b","gpu":"a100-80gb"}}}`).problem(t)
	if p.Status != http.StatusUnprocessableEntity || len(p.Errors) == 0 || p.Errors[0].Field != "a.workload" {
		t.Fatalf("compare job: %+v", p)
	}
	v := waitFinal(t, s.jobs, submit(t, h, "sweep", `{"scenario":{"model":"llama-3.1-8b","gpu":"h100-sxm","workload":{"requests":200}},"axes":[{"path":"workload.input_tokens.value","values":[100,16000000]}]}`).ID)
	r := do(t, h, "GET", "/v1/jobs/"+v.ID, "")
	if v.State != JobSucceeded || !strings.Contains(string(r.body), "jobs.max_tokens") {
		t.Fatalf("sweep: %s %s", v.State, r.body)
	}
	if m := string(do(t, h, "GET", "/metrics", "").body); strings.Contains(m, `headroom_simulated_requests_total{mode="sync"}`) {
		t.Error("the refused synchronous call simulated")
	}
}

// stuckEngine ignores its context until released, as a simulation does
// between two looks at it.
type stuckEngine struct {
	Engine
	started, release chan struct{}
}

func (e *stuckEngine) Simulate(ctx context.Context, res *scenario.Resolved, progress func(float64)) (*sim.Report, error) {
	e.started <- struct{}{}
	<-e.release
	return nil, ctx.Err()
}

// TestSyncAnswersAtItsTimeLimit: a synchronous call answers when its time
// limit passes even if the simulation has not looked at its context yet
// (it used to run 36 s against a 30 s limit), and the simulation keeps its
// CPU slot until it actually stops.
func TestSyncAnswersAtItsTimeLimit(t *testing.T) {
	base := newTestServer(t, nil)
	e := &stuckEngine{Engine: base.engine, started: make(chan struct{}, 1), release: make(chan struct{})}
	cfg := testConfig()
	cfg.Simulate.SyncTimeout = 50 * time.Millisecond
	s, err := New(cfg, Options{Engine: e})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	r := do(t, s.Handler(), "POST", "/v1/simulate", tinyScenario) // returns while the engine is stuck
	if p := r.problem(t); p.Status != http.StatusUnprocessableEntity || !strings.Contains(p.Detail, "synchronous time limit") {
		t.Fatalf("%+v, want 422 past the time limit", p)
	}
	if used, _ := s.cpu.stats(); used != 1 {
		t.Fatalf("%d slots used while the simulation still runs, want 1", used)
	}
	close(e.release)
	waitFor(t, "the stuck simulation to free its slot", func() bool { used, _ := s.cpu.stats(); return used == 0 })
}

// TestSyncPanicIsA500: a simulation that panics, now off the handler's
// goroutine, is still a logged 500, frees its slot, and leaves the server
// serving.
func TestSyncPanicIsA500(t *testing.T) {
	base := newTestServer(t, nil)
	s, err := New(testConfig(), Options{Engine: panicEngine{base.engine}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if p := do(t, s.Handler(), "POST", "/v1/simulate", tinyScenario).problem(t); p.Status != http.StatusInternalServerError {
		t.Fatalf("%+v, want 500", p)
	}
	if used, _ := s.cpu.stats(); used != 0 {
		t.Fatalf("%d slots held after the panic", used)
	}
	if r := do(t, s.Handler(), "GET", "/healthz", ""); r.status != http.StatusOK {
		t.Fatalf("/healthz after the panic: HTTP %d", r.status)
	}
}

type panicEngine struct{ Engine }

func (panicEngine) Simulate(context.Context, *scenario.Resolved, func(float64)) (*sim.Report, error) {
	panic("simulator fault")
}
