package sim

import (
	"testing"

	"github.com/headroom-sim/headroom/sim/steptime"
)

// The API server's event loop and tokenizer thread by hand: requests that
// arrive together are parsed one after another, then tokenised one after
// another; an output message is processed when the loop is free, each
// request's event after the one before it.
func TestFrontendQueues(t *testing.T) {
	const us = Time(1000)
	f := frontend{coef: steptime.FrontendCoeffs{RequestUS: 1000, PerPromptTokenUS: 1, PerStepUS: 100, PerOutputTokenUS: 30}, scale: 1}
	// Parsing 1 ms each; tokenising 1 µs per token, after the parse.
	if got := f.admit(0, 100); got != 1100*us {
		t.Errorf("first request reaches the engine at %d ns, want 1.1 ms", got)
	}
	if got := f.admit(0, 100); got != 2100*us {
		t.Errorf("second request reaches the engine at %d ns, want 2.1 ms (parsed after the first)", got)
	}
	// A long prompt holds the tokenizer: the next short one waits for it
	// though its own parse is done.
	if got := f.admit(0, 5000); got != 8000*us {
		t.Errorf("long prompt at %d ns, want 8 ms", got)
	}
	if got := f.admit(0, 10); got != 8010*us {
		t.Errorf("short prompt behind it at %d ns, want 8.01 ms", got)
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
	g := frontend{coef: f.coef, scale: 2}
	if got := g.admit(0, 100); got != 2200*us {
		t.Errorf("scaled admission at %d ns, want 2.2 ms", got)
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
