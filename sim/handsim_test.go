package sim

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/headroom-sim/headroom/catalogs"
	"github.com/headroom-sim/headroom/sim/engine"
	"github.com/headroom-sim/headroom/sim/steptime"
	"github.com/headroom-sim/headroom/sim/workload"
)

// A harness for runs small enough to work out on paper: Llama-3.1-8B's
// shapes on an H100 (full attention, so prefix caching is block-exact),
// requests given one by one as a trace (exact arrivals, lengths and
// prefix blocks), and a fixed step time instead of the step-time model,
// so that every schedule and every timestamp follows from the rules of
// the scheduler alone.

// tick is the fixed step time: 1/64 s, exact in float64 and in ns.
const tick Time = 15_625_000

// handReq is one request: its arrival (in ticks), prompt and output
// lengths, and optional prompt block ids (16 tokens each; requests that
// share leading ids share those blocks' content).
type handReq struct {
	at      int // ticks
	in, out int
	blocks  []int64
}

// handSetup is the engine and cluster around the requests.
type handSetup struct {
	engine     func(*engine.Config) // edits the base engine (see handConfig)
	blocks     int                  // KV blocks per replica (default 1000)
	replicas   int
	router     string
	blockBytes float64
	rttMS      float64
}

// handConfig builds the run: block size 16, max_model_len 256, a token
// budget of 64, max_num_seqs 4, V1 with chunked prefill, no prefix
// caching, recompute preemption, unless setup.engine changes them.
func handConfig(t *testing.T, reqs []handReq, setup handSetup) Config {
	t.Helper()
	cat, err := catalogs.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	m, _ := cat.Model("llama-3.1-8b")
	g, _ := cat.GPU("h100-sxm")
	e := engine.Defaults()
	e.BlockSize, e.MaxModelLen, e.MaxNumBatchedTokens, e.MaxNumSeqs = 16, 256, 64, 4
	e.EnablePrefixCaching = false
	// Synchronous scheduling and a free API server: every step starts
	// when the last ends and every request reaches the engine as it
	// arrives (async_test.go and frontend_test.go check those two).
	e.AsyncScheduling = false
	if setup.engine != nil {
		setup.engine(&e)
	}
	if e, err = e.Resolve(m, g); err != nil {
		t.Fatal(err)
	}
	trace := make([]workload.TraceRecord, len(reqs))
	for i, r := range reqs {
		trace[i] = workload.TraceRecord{ArrivalS: float64(r.at) / 64, InputTokens: r.in, OutputTokens: r.out, HashIDs: r.blocks}
	}
	cfg := Config{
		Model: m, GPU: g, Precision: m.DefaultPrecision(), TP: 1, Replicas: max(setup.replicas, 1),
		Router: RouterRoundRobin, Engine: e, NumGPUBlocks: setup.blocks, BlockBytes: setup.blockBytes,
		Profile: freeFrontend(steptime.DefaultProfile(g)), NetworkRTTMS: setup.rttMS,
		Workload: Workload{Trace: trace, TraceHashTokens: 16},
		Report:   ReportOptions{StallThresholdMS: 300},
	}
	if cfg.NumGPUBlocks == 0 {
		cfg.NumGPUBlocks = 1000
	}
	if setup.router != "" {
		cfg.Router = setup.router
	}
	return cfg
}

// handStep is one scheduled step as the hooks saw it.
type handStep struct {
	at      Time
	replica int32
	// batch lists the step's entries as "serial:tokens" (prefill),
	// "serial:d" (one decode token) or "serial:d+k" (a decode token and k
	// drafts to verify), in scheduling order.
	batch string
}

// handEnd is how a request ended.
type handEnd struct {
	at, firstToken Time
	ok             bool
	replica        int32
	hitTokens      int
	preemptions    int32
}

type handLog struct {
	steps  []handStep
	ends   map[int64]handEnd
	issued []int64
}

// batchString writes a replica's scheduled step as handStep.batch does
// ("serial:d+k" for a decode verifying k drafts).
func batchString(rp *rank) string {
	parts := make([]string, len(rp.sched))
	for i, sc := range rp.sched {
		switch {
		case sc.prefill:
			parts[i] = fmt.Sprintf("%d:%d", sc.r.serial, sc.n)
		case sc.r.verify > 0:
			parts[i] = fmt.Sprintf("%d:d+%d", sc.r.serial, sc.r.verify)
		default:
			parts[i] = fmt.Sprintf("%d:d", sc.r.serial)
		}
	}
	return strings.Join(parts, " ")
}

// newHandSim builds the simulator with the fixed step time and the hooks
// that fill the log.
func newHandSim(t *testing.T, cfg Config) (*Simulator, *handLog) {
	t.Helper()
	s, err := newSimulator(&cfg)
	if err != nil {
		t.Fatal(err)
	}
	log := &handLog{ends: map[int64]handEnd{}}
	s.stepTime = func(*rank) float64 { return float64(tick) / 1e9 }
	s.onStep = func(rp *rank, now Time) {
		log.steps = append(log.steps, handStep{at: now, replica: rp.id, batch: batchString(rp)})
	}
	s.onEnd = func(r *request, now Time, ok bool) {
		if _, dup := log.ends[r.serial]; dup {
			t.Errorf("request %d ended twice", r.serial)
		}
		log.ends[r.serial] = handEnd{at: now, firstToken: r.firstToken, ok: ok, replica: r.place, hitTokens: int(r.hitTokens), preemptions: r.preemptions}
	}
	s.onIssue = func(r *request) { log.issued = append(log.issued, r.serial) }
	return s, log
}

// handRun runs cfg to the end.
func handRun(t *testing.T, cfg Config) (*Simulator, *handLog, *Report) {
	t.Helper()
	s, log := newHandSim(t, cfg)
	if err := s.loop(context.Background()); err != nil {
		t.Fatal(err)
	}
	return s, log, s.report()
}

// ticks writes t in ticks, exactly ("18.25").
func ticks(t Time) string {
	return strconv.FormatFloat(float64(t)/float64(tick), 'f', -1, 64)
}

// checkSteps compares the steps with the expected ones, written
// "tick: batch" (replica 0) or "tick r1: batch".
func checkSteps(t *testing.T, got []handStep, want []string) {
	t.Helper()
	var lines []string
	for _, st := range got {
		r := ""
		if st.replica != 0 {
			r = fmt.Sprintf(" r%d", st.replica)
		}
		lines = append(lines, fmt.Sprintf("%s%s: %s", ticks(st.at), r, st.batch))
	}
	if !slices.Equal(lines, want) {
		t.Errorf("steps:\n  %s\nwant:\n  %s", strings.Join(lines, "\n  "), strings.Join(want, "\n  "))
	}
}

// checkEnd checks when request serial had its first token and ended, in
// ticks.
func checkEnd(t *testing.T, log *handLog, serial int64, firstTick, endTick float64) {
	t.Helper()
	e, ok := log.ends[serial]
	switch {
	case !ok:
		t.Errorf("request %d never ended", serial)
	case !e.ok:
		t.Errorf("request %d was rejected", serial)
	case float64(e.firstToken) != firstTick*float64(tick) || float64(e.at) != endTick*float64(tick):
		t.Errorf("request %d: first token at %s ticks, done at %s; want %g and %g",
			serial, ticks(e.firstToken), ticks(e.at), firstTick, endTick)
	}
}

// freeFrontend is p without API-server costs.
func freeFrontend(p steptime.Profile) steptime.Profile {
	p.Frontend = steptime.FrontendCoeffs{}
	return p
}
