package sim

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/headroom-sim/headroom/catalogs"
	"github.com/headroom-sim/headroom/models"
	"github.com/headroom-sim/headroom/sim/engine"
	"github.com/headroom-sim/headroom/sim/steptime"
	"github.com/headroom-sim/headroom/sim/workload"
)

// randomConfig draws a small but hostile configuration: few KV blocks
// (preemptions), random engine flags, workload shapes and replicas.
func randomConfig(t *testing.T, seed uint64) Config {
	t.Helper()
	r := rand.New(rand.NewPCG(seed, 99))
	cat, err := catalogs.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	modelIDs := []string{"llama-3.1-8b", "qwen3-30b-a3b", "mistral-7b", "gemma-2-9b", "llama-2-7b"}
	m, _ := cat.Model(modelIDs[r.IntN(len(modelIDs))])
	g, _ := cat.GPU([]string{"h100-sxm", "a100-80gb", "l40s"}[r.IntN(3)])
	e := engine.Defaults()
	e.MaxNumSeqs = 4 + r.IntN(64)
	e.MaxNumBatchedTokens = max(e.MaxNumSeqs, []int{64, 256, 2048, 8192}[r.IntN(4)])
	e.MaxModelLen = 4096
	e.EnableChunkedPrefill = r.IntN(4) != 0
	if !e.EnableChunkedPrefill {
		e.MaxNumBatchedTokens = e.MaxModelLen
	}
	e.EnablePrefixCaching = r.IntN(2) == 0
	if r.IntN(4) == 0 {
		e.Scheduler = engine.SchedulerV0
	}
	if r.IntN(4) == 0 {
		e.PreemptionMode = engine.PreemptSwap
	}
	if r.IntN(3) == 0 {
		e.LongPrefillTokenThreshold = 128 + r.IntN(512)
	}
	e, err = e.Resolve(m, g)
	if err != nil {
		t.Fatal(err)
	}
	w := Workload{Requests: 50 + r.IntN(250)}
	in, _ := workload.NewLengthSampler(workload.LengthSpec{Type: "uniform", Min: 1, Max: 1500}, "in", nil)
	out, _ := workload.NewLengthSampler(workload.LengthSpec{Type: "lognormal", Mean: 120, Stddev: 150, Max: 1500}, "out", nil)
	w.Input, w.Output = in, out
	switch r.IntN(4) {
	case 0:
		w.Arrival = workload.ArrivalSpec{Type: "closed_loop", Concurrency: 1 + r.IntN(40), ThinkTimeMS: float64(r.IntN(200))}
	case 1:
		w.Arrival = workload.ArrivalSpec{Type: "gamma", RateRPS: 1 + 30*r.Float64(), CV: 0.5 + 3*r.Float64()}
	case 2:
		w.Requests = 0
		w.Stages = []workload.StageSpec{{DurationS: 5, RateRPS: 5}, {DurationS: 5, Concurrency: 8}, {DurationS: 3, RateRPS: 20}}
	default:
		w.Arrival = workload.ArrivalSpec{Type: "poisson", RateRPS: 1 + 40*r.Float64()}
	}
	if r.IntN(3) == 0 {
		w.SharedPrefix = &workload.SharedPrefixSpec{Groups: 1 + r.IntN(4), PrefixTokens: 16 + r.IntN(600)}
	}
	if r.IntN(3) == 0 {
		w.MultiTurn = &workload.MultiTurnSpec{Turns: 2 + r.IntN(3), ThinkTimeMS: float64(r.IntN(500))}
	}
	if r.IntN(3) == 0 {
		w.MaxConcurrency = 1 + r.IntN(16)
	}
	blocks := 300 + r.IntN(3000)
	bs := e.BlockSize
	cfg := Config{
		Model: m, GPU: g, Precision: m.DefaultPrecision(), TP: 1, Replicas: 1 + r.IntN(3),
		Router:       []string{RouterRoundRobin, RouterLeastOutstanding, RouterLeastKV}[r.IntN(3)],
		Engine:       e,
		NumGPUBlocks: blocks, BlockBytes: 1 << 20,
		Profile:      steptime.DefaultProfile(g),
		NetworkRTTMS: float64(r.IntN(3) * 20),
		Workload:     w, Seed: seed,
		Report: ReportOptions{StallThresholdMS: 300, Timeseries: r.IntN(2) == 0},
		SLA:    &SLA{TTFTMS: map[string]float64{"p99": 2000}, TPOTMS: map[string]float64{"p50": 100}},
	}
	if m.NumSlidingLayers() > 0 {
		mm := m
		cfg.BlockUnits = func(n int) int { return blocksForTokens(mm, bs, n) }
	}
	return cfg
}

// blocksForTokens mirrors memory.BlocksForTokens for sliding-window models
// (the memory package imports nothing of sim, but sim's tests may not
// import packages that import sim).
func blocksForTokens(m *models.Model, bs, n int) int {
	full := (n + bs - 1) / bs
	w := (m.SlidingWindow-1+bs-1)/bs + 1
	if m.NumFullLayers() == 0 {
		return min(full, w)
	}
	return full + min(full, w)
}

func TestInvariantsOnRandomWorkloads(t *testing.T) {
	n := 60
	if testing.Short() {
		n = 15
	}
	for seed := uint64(1); seed <= uint64(n); seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			checkInvariants(t, randomConfig(t, seed), nil)
		})
	}
}

// checkInvariants runs cfg and checks at every step and at the end that
// blocks, budget, seats and requests are conserved; step, if set, checks
// more at every step.
func checkInvariants(t *testing.T, cfg Config, step func(rp *rank, now Time)) {
	t.Helper()
	s, err := newSimulator(&cfg)
	if err != nil {
		t.Fatal(err)
	}
	ended := map[int64]int{}
	endedOK := map[int64]bool{}
	var issued []int64
	s.onIssue = func(r *request) { issued = append(issued, r.serial) }
	s.onStep = func(rp *rank, now Time) {
		kv := rp.kv
		if ref := kv.referenced(); ref+kv.numFree != kv.total {
			t.Fatalf("t=%d: referenced %d + free %d != total %d", now, ref, kv.numFree, kv.total)
		}
		tokens := 0
		for _, sc := range rp.sched {
			tokens += sc.n + int(sc.r.verify) // drafts verified count against the budget
		}
		if tokens > cfg.Engine.MaxNumBatchedTokens && cfg.Engine.EnableChunkedPrefill {
			t.Fatalf("t=%d: step of %d tokens exceeds the budget %d", now, tokens, cfg.Engine.MaxNumBatchedTokens)
		}
		if len(rp.running) > cfg.Engine.MaxNumSeqs {
			t.Fatalf("t=%d: %d running exceeds max_num_seqs %d", now, len(rp.running), cfg.Engine.MaxNumSeqs)
		}
		for _, r := range rp.running {
			if units := kv.units(r.computed); len(r.blocks) < units {
				t.Fatalf("running request holds %d blocks for %d computed tokens (needs %d)", len(r.blocks), r.computed, units)
			}
		}
		if step != nil {
			step(rp, now)
		}
	}
	s.onEnd = func(r *request, now Time, ok bool) {
		ended[r.serial]++
		endedOK[r.serial] = ok
		if !ok {
			return
		}
		// The first and last token are the client's timestamps, after the
		// receive path; the engine finished the request at now.
		if !(r.sent <= r.arrival && r.arrival <= r.scheduled && r.scheduled <= r.firstToken && r.firstToken <= r.lastToken && now <= r.lastToken) {
			t.Fatalf("request %d: sent %d arrival %d scheduled %d first token %d engine finish %d last token %d out of order", r.serial, r.sent, r.arrival, r.scheduled, r.firstToken, now, r.lastToken)
		}
		if r.generated != r.output {
			t.Fatalf("request %d generated %d of %d tokens", r.serial, r.generated, r.output)
		}
	}
	if err := s.loop(context.Background()); err != nil {
		t.Fatal(err)
	}
	rep := s.report()
	checkConservation(t, s, issued, endedOK, rep)
	if got := len(ended); got != s.d.created {
		t.Fatalf("%d requests ended, %d were created", got, s.d.created)
	}
	for serial, n := range ended {
		if n != 1 {
			t.Fatalf("request %d ended %d times", serial, n)
		}
	}
	if rep.Requests.Completed+rep.Requests.Rejected != s.d.created {
		t.Fatalf("report counts %d + %d, created %d", rep.Requests.Completed, rep.Requests.Rejected, s.d.created)
	}
	for _, rp := range s.ranks {
		if rp.swapUsed != 0 {
			t.Fatalf("replica %d ends with %d blocks in swap space", rp.id, rp.swapUsed)
		}
		if rp.kv.numFree != rp.kv.total || len(rp.running) != 0 || rp.waiting.len() != 0 {
			t.Fatalf("replica %d ends with %d/%d free blocks, %d running, %d waiting", rp.id, rp.kv.numFree, rp.kv.total, len(rp.running), rp.waiting.len())
		}
	}
}

func TestSameSeedSameReport(t *testing.T) {
	for seed := uint64(1); seed <= 8; seed++ {
		cfg := randomConfig(t, seed)
		a, err := Run(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		cfg2 := randomConfig(t, seed)
		b, err := Run(context.Background(), cfg2)
		if err != nil {
			t.Fatal(err)
		}
		ja, _ := json.Marshal(a)
		jb, _ := json.Marshal(b)
		if !bytes.Equal(ja, jb) {
			t.Fatalf("seed %d: two runs differ", seed)
		}
	}
}

func TestCancelledContextStops(t *testing.T) {
	cfg := randomConfig(t, 3)
	cfg.Workload.Requests = 1_000_000
	cfg.Workload.Stages = nil
	cfg.Workload.Arrival = workload.ArrivalSpec{Type: "poisson", RateRPS: 50}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Run(ctx, cfg); err == nil {
		t.Fatal("a cancelled run returned no error")
	}
}

func TestEventLimit(t *testing.T) {
	cfg := randomConfig(t, 4)
	cfg.MaxEvents = 5000
	cfg.Workload.Requests = 100_000
	cfg.Workload.Stages = nil
	cfg.Workload.Arrival = workload.ArrivalSpec{Type: "poisson", RateRPS: 50}
	if _, err := Run(context.Background(), cfg); err == nil {
		t.Fatal("no error past the event limit")
	}
}
