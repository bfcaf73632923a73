package sim

import (
	"math"
	"sort"
	"testing"

	"github.com/headroom-sim/headroom/sim/steptime"
)

// frontendHarness is an API server on its own: requests admitted through
// it reach the engine at their r.arrival (the events it pushes are left
// in the queue).
func frontendHarness(coef steptime.FrontendCoeffs, scale float64) (*Simulator, *instance) {
	s := &Simulator{cfg: &Config{Seed: 1}}
	in := &instance{front: frontend{coef: coef, scale: scale, seed: 1}}
	s.insts = []*instance{in}
	return s, in
}

// admitAt admits a request of n prompt tokens that reached the API server
// at t and returns it.
func admitAt(s *Simulator, in *instance, serial int64, t Time, n int) *request {
	r := &request{serial: serial, input: n, arrival: -1}
	s.admit(in, t, r, toEngine)
	return r
}

// drain runs the tokenizer deadlines pushed so far, in time order.
func drain(s *Simulator) {
	for s.q.len() > 0 {
		e := s.q.pop()
		if e.kind == evTokenize {
			s.tokenizerDeadline(s.insts[e.target], e.client, e.t)
		}
	}
}

// The API server's event loop and tokenizer thread by hand: requests that
// arrive together are parsed one after another, then tokenised one after
// another; an output message is processed when the loop is free, each
// request's event after the one before it.
func TestFrontendQueues(t *testing.T) {
	const us = Time(1000)
	s, in := frontendHarness(steptime.FrontendCoeffs{RequestUS: 1000, PerPromptTokenUS: 1, PerStepUS: 100, PerOutputTokenUS: 30}, 1)
	f := &in.front
	// Parsing 1 ms each; tokenising 1 µs per token, after the parse.
	if r := admitAt(s, in, 0, 0, 100); r.arrival != 1100*us {
		t.Errorf("first request reaches the engine at %d ns, want 1.1 ms", r.arrival)
	}
	if r := admitAt(s, in, 1, 0, 100); r.arrival != 2100*us {
		t.Errorf("second request reaches the engine at %d ns, want 2.1 ms (parsed after the first)", r.arrival)
	}
	// A long prompt holds the tokenizer: the next short one waits for it
	// though its own parse is done.
	if r := admitAt(s, in, 2, 0, 5000); r.arrival != 8000*us {
		t.Errorf("long prompt at %d ns, want 8 ms", r.arrival)
	}
	if r := admitAt(s, in, 3, 0, 10); r.arrival != 8010*us {
		t.Errorf("short prompt behind it at %d ns, want 8.01 ms", r.arrival)
	}
	if in.toEngine.len() != 4 {
		t.Errorf("%d requests on their way to the engine, want 4", in.toEngine.len())
	}
	// The loop is busy parsing until 4 ms: an output message at 3 ms
	// begins then; its three events go out 100 µs + 30 µs each later.
	begin, at := f.outputs(3000*us, 3)
	if begin != 4000*us || at(0) != 4130*us || at(2) != 4190*us {
		t.Errorf("outputs begin %d, events %d…%d; want 4 ms, 4.13 ms…4.19 ms", begin, at(0), at(2))
	}
	if f.loopFree != 4190*us {
		t.Errorf("loop free at %d, want 4.19 ms", f.loopFree)
	}
	if f.busyNS != int64(4*1000*us+190*us) || f.tokenizeNS != int64(5210*us) {
		t.Errorf("busy %d ns, tokenising %d ns; want 4.19 ms and 5.21 ms", f.busyNS, f.tokenizeNS)
	}
	// The overhead scale stretches every cost.
	s2, in2 := frontendHarness(f.coef, 2)
	if r := admitAt(s2, in2, 0, 0, 100); r.arrival != 2200*us {
		t.Errorf("scaled admission at %d ns, want 2.2 ms", r.arrival)
	}
}

// vLLM's micro-batching tokenizer by hand (AsyncMicrobatchTokenizer: a 2
// ms window from the first prompt, at most 32 prompts, one encode call for
// the batch, its prompts encoded in parallel): a prompt alone waits out
// the window; prompts that reach the thread within it are encoded together
// (as long as the longest takes) and reach the engine together; a full
// batch closes at once; prompts that come while a batch is encoded wait
// for it and open the next window.
func TestTokenizerMicroBatches(t *testing.T) {
	const us = Time(1000)
	coef := steptime.FrontendCoeffs{RequestUS: 100, PerPromptTokenUS: 1, TokenizerWindowUS: 2000, TokenizerBatch: 3}
	s, in := frontendHarness(coef, 1)
	// Alone: parsed by 0.1 ms, window to 2.1 ms, 500 tokens to 2.6 ms.
	a := admitAt(s, in, 0, 0, 500)
	drain(s)
	if a.arrival != 2600*us {
		t.Errorf("lone prompt at %d ns, want 2.6 ms", a.arrival)
	}
	// Two within the window (parsed at 10.1 and 10.2 ms): one call from
	// the deadline 12.1 ms, as long as the 200-token prompt's.
	b := admitAt(s, in, 1, 10000*us, 100)
	c := admitAt(s, in, 2, 10000*us, 200)
	drain(s)
	if b.arrival != 12300*us || c.arrival != 12300*us {
		t.Errorf("batched prompts at %d and %d ns, want both 12.3 ms", b.arrival, c.arrival)
	}
	// Three fill the batch: it closes when the third is parsed (20.3 ms)
	// without waiting out the window; the fourth opens the next one,
	// whose window starts when the thread is free (20.4 ms).
	var rs []*request
	for i := range 4 {
		rs = append(rs, admitAt(s, in, int64(3+i), 20000*us, 100))
	}
	drain(s)
	for i, want := range []Time{20400, 20400, 20400, 22500} {
		if rs[i].arrival != want*us {
			t.Errorf("prompt %d of the burst at %d ns, want %d µs", i, rs[i].arrival, want)
		}
	}
	if in.toEngine.len() != 7 {
		t.Errorf("%d requests handed on, want 7", in.toEngine.len())
	}
	// Without a window each prompt is encoded as it comes.
	s0, in0 := frontendHarness(steptime.FrontendCoeffs{RequestUS: 100, PerPromptTokenUS: 1}, 1)
	if r := admitAt(s0, in0, 0, 0, 500); r.arrival != 600*us {
		t.Errorf("unbatched prompt at %d ns, want 0.6 ms", r.arrival)
	}
}

// A request's times on the path are drawn per request: deterministic in
// the seed and the request, independent of the order they are drawn in,
// lognormal with the profile's median and spread, and constant at sigma 0.
func TestPathTimesAreDrawnPerRequest(t *testing.T) {
	first, again := pathTime(1, 7, pathRequest, 1000, 0.5, 1), pathTime(1, 7, pathRequest, 1000, 0.5, 1)
	if first != again {
		t.Fatalf("the same request's draw differs between calls: %d ns, then %d ns", first, again)
	}
	if pathTime(1, 7, pathRequest, 1000, 0.5, 1) == pathTime(1, 7, pathClientSend, 1000, 0.5, 1) {
		t.Error("two stages of one request drew the same time")
	}
	if got := pathTime(1, 7, pathRequest, 1000, 0, 1); got != 1000*1000 {
		t.Errorf("sigma 0: %d ns, want exactly 1 ms", got)
	}
	const n = 20000
	logs := make([]float64, n)
	var sum, sq float64
	for i := range n {
		x := float64(pathTime(3, int64(i), pathRequest, 1000, 0.5, 1)) / 1e6
		logs[i] = math.Log(x)
		sum += logs[i]
		sq += logs[i] * logs[i]
	}
	sort.Float64s(logs)
	med, mean := math.Exp(logs[n/2]), sum/n
	sd := math.Sqrt(sq/n - mean*mean)
	if math.Abs(med-1) > 0.02 || math.Abs(sd-0.5) > 0.01 {
		t.Errorf("draws: median %.3f ms, log-spread %.3f; want 1 ms and 0.5", med, sd)
	}
	if hi := math.Exp(logs[n-1]); hi > math.Exp(pathZMax*0.5)*1.0001 {
		t.Errorf("largest draw %.1f ms is past the clamp", hi)
	}
}

// The front end in a whole run: two requests sent together reach the
// engine a quarter and half a tick apart (parse and tokenisation of a
// quarter tick each), so the second misses the first's prefill step and
// joins the next one.
func TestFrontendDelaysAdmission(t *testing.T) {
	cfg := handConfig(t, []handReq{{at: 0, in: 16, out: 2}, {at: 0, in: 16, out: 1}}, handSetup{})
	quarterUS := float64(tick) / 4 / 1e3
	cfg.Profile.Frontend = steptime.FrontendCoeffs{RequestUS: quarterUS, PerPromptTokenUS: quarterUS / 16}
	_, log, rep := handRun(t, cfg)
	checkSteps(t, log.steps, []string{"0.5: 0:16", "1.5: 0:d 1:16"})
	checkEnd(t, log, 0, 1.5, 2.5)
	checkEnd(t, log, 1, 2.5, 2.5)
	if rep.Requests.Completed != 2 {
		t.Errorf("%d completed, want 2", rep.Requests.Completed)
	}
}
