package sim

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/headroom-sim/headroom/hardware"
	"github.com/headroom-sim/headroom/sim/workload"
)

// sec is s seconds in ticks (1/64 s).
func sec(s float64) int { return int(s * 64) }

// stepLoad is 1 req/s (at 0.5, 1.5, … 3.5 s), 8 req/s from 4 s to 8 s,
// and 1 req/s again from 8.5 to 13.5 s; every request 16 prompt tokens
// and 4 output tokens (four steps of one tick).
func stepLoad() []handReq {
	var reqs []handReq
	for k := range 4 {
		reqs = append(reqs, handReq{at: sec(0.5 + float64(k)), in: 16, out: 4})
	}
	for k := range 32 {
		reqs = append(reqs, handReq{at: sec(4) + 8*k + 4, in: 16, out: 4})
	}
	for k := range 6 {
		reqs = append(reqs, handReq{at: sec(8.5 + float64(k)), in: 16, out: 4})
	}
	return reqs
}

// TestAutoscaleStepInLoad works a step in load out by hand. The policy
// reads the request rate every second, aiming at 2 req/s per replica:
//   - the evaluations at 1–4 s see 1 req/s: ceil(1/2) = 1 replica, as
//     there is;
//   - at 5 s the last second held 8 arrivals: ceil(8/2) = 4, so 3
//     replicas start; with a 2.5 s scale-up delay they serve from 7.5 s;
//   - at 9 s the rate is 1 req/s again, but the 2 s stabilization window
//     still holds the wish of 8 s for 4; at 10 s it holds only wishes for
//     1, so the three idle replicas (the highest slots first) stop at once.
//
// The run ends when the last request (sent at 13.5 s) ends four ticks
// later, at 13.5625 s. Replica-seconds: slot 0 serves the whole 13.5625 s,
// slots 1–3 start for 2.5 s each and serve 2.5 s each.
func TestAutoscaleStepInLoad(t *testing.T) {
	cfg := handConfig(t, stepLoad(), handSetup{})
	cfg.Autoscale = &Autoscale{MinReplicas: 1, MaxReplicas: 4, Metric: ScaleOnRequestRate, Target: 2,
		IntervalS: 1, ScaleUpDelayS: 2.5, ScaleDownStabilizationS: 2, Tolerance: 0.1}
	_, log, rep := handRun(t, cfg)
	a := rep.Autoscale
	if a == nil {
		t.Fatal("no autoscale report")
	}
	want := []ReplicaCount{{TS: 0, Serving: 1}, {TS: 5, Serving: 1, Starting: 3}, {TS: 7.5, Serving: 4}, {TS: 10, Serving: 1}}
	if !slices.Equal(a.Timeline, want) {
		t.Errorf("timeline %+v\nwant     %+v", a.Timeline, want)
	}
	wantSec := ReplicaSeconds{Starting: 7.5, Serving: 13.5625 + 7.5, Total: 13.5625 + 15}
	if a.ReplicaSeconds != wantSec || a.EndS != 13.5625 {
		t.Errorf("replica-seconds %+v to %g s, want %+v to 13.5625 s", a.ReplicaSeconds, a.EndS, wantSec)
	}
	if a.ScaleUps != 3 || a.ScaleDowns != 3 || a.PeakReplicas != 4 {
		t.Errorf("%d up, %d down, peak %d; want 3, 3, 4", a.ScaleUps, a.ScaleDowns, a.PeakReplicas)
	}
	wantDec := []ScaleDecision{{TS: 5, Value: 8, Serving: 1, From: 1, To: 4}, {TS: 10, Value: 1, Serving: 4, From: 4, To: 1}}
	if !slices.Equal(a.Decisions, wantDec) {
		t.Errorf("decisions %+v, want %+v", a.Decisions, wantDec)
	}
	// No request reaches a replica before it is ready, nor after it stopped.
	for serial, e := range log.ends {
		at := float64(stepLoad()[serial].at) / 64
		if e.replica != 0 && (at < 7.5 || at >= 10) {
			t.Errorf("request %d sent at %g s went to replica %d", serial, at, e.replica)
		}
	}
	if rep.Requests.Completed != len(stepLoad()) {
		t.Errorf("%d of %d completed", rep.Requests.Completed, len(stepLoad()))
	}
}

// TestAutoscaleDrainKeepsRequests: two replicas serve, the policy wants
// one (the rate is far below 100 req/s per replica, no stabilization).
// At the first evaluation (1 s) both hold one long request; the tie goes
// to the higher slot, which drains: it takes no new request (the one sent
// at 2 s goes to slot 0) and stops when its request ends, 201 ticks in
// (it arrived at tick 1: a prefill step, then 199 decode steps for its
// 200 tokens). Nothing is lost, and the drain is billed to its end.
func TestAutoscaleDrainKeepsRequests(t *testing.T) {
	reqs := []handReq{{at: 0, in: 16, out: 200}, {at: 1, in: 16, out: 200}, {at: sec(2), in: 16, out: 8}}
	cfg := handConfig(t, reqs, handSetup{replicas: 2})
	cfg.Autoscale = &Autoscale{MinReplicas: 1, MaxReplicas: 2, Metric: ScaleOnRequestRate, Target: 100, IntervalS: 1, Tolerance: 0.1}
	_, log, rep := handRun(t, cfg)
	if rep.Requests.Completed != 3 {
		t.Fatalf("%d of 3 completed", rep.Requests.Completed)
	}
	if got := []int32{log.ends[0].replica, log.ends[1].replica, log.ends[2].replica}; !slices.Equal(got, []int32{0, 1, 0}) {
		t.Errorf("requests went to replicas %v, want [0 1 0]", got)
	}
	stop := float64(log.ends[1].at) / 1e9
	if stop != 201.0/64 {
		t.Fatalf("request 1 ended at %g s, want 201 ticks (%g s)", stop, 201.0/64)
	}
	a := rep.Autoscale
	want := []ReplicaCount{{TS: 0, Serving: 2}, {TS: 1, Serving: 1, Draining: 1}, {TS: stop, Serving: 1}}
	if !slices.Equal(a.Timeline, want) {
		t.Errorf("timeline %+v, want %+v", a.Timeline, want)
	}
	if want := (ReplicaSeconds{Serving: 1 + stop, Draining: stop - 1, Total: 2 * stop}); a.ReplicaSeconds != want {
		t.Errorf("replica-seconds %+v, want %+v", a.ReplicaSeconds, want)
	}
}

// TestAutoscaleCancelsStartingFirst: a burst makes the policy start
// replicas with a long delay; when the rate falls before they are ready,
// they are cancelled (billed only while starting) and never serve.
func TestAutoscaleCancelsStartingFirst(t *testing.T) {
	var reqs []handReq
	for k := range 16 {
		reqs = append(reqs, handReq{at: 4 * k, in: 16, out: 2}) // 16 req/s in the first second
	}
	for k := range 4 {
		reqs = append(reqs, handReq{at: sec(1.5 + float64(k)), in: 16, out: 2})
	}
	cfg := handConfig(t, reqs, handSetup{})
	cfg.Autoscale = &Autoscale{MinReplicas: 1, MaxReplicas: 3, Metric: ScaleOnRequestRate, Target: 8, IntervalS: 1, ScaleUpDelayS: 10, Tolerance: 0.1}
	_, log, rep := handRun(t, cfg)
	for serial, e := range log.ends {
		if e.replica != 0 {
			t.Errorf("request %d served by replica %d, which never became ready", serial, e.replica)
		}
	}
	a := rep.Autoscale
	// 1 s: 16 req/s wants 2, one starts; 2 s: 1 req/s wants 1: cancelled.
	want := []ReplicaCount{{TS: 0, Serving: 1}, {TS: 1, Serving: 1, Starting: 1}, {TS: 2, Serving: 1}}
	if !slices.Equal(a.Timeline, want) || a.ReplicaSeconds.Starting != 1 || a.ReplicaSeconds.Draining != 0 {
		t.Errorf("timeline %+v, replica-seconds %+v", a.Timeline, a.ReplicaSeconds)
	}
}

// TestAutoscaleInFlightAndKV: the two other metrics scale up under a
// queue and come back down when it is gone.
func TestAutoscaleInFlightAndKV(t *testing.T) {
	var reqs []handReq
	for k := range 24 {
		reqs = append(reqs, handReq{at: k, in: 64, out: 100})
	}
	for k := range 6 { // a light tail keeps the policy running after the queue is gone
		reqs = append(reqs, handReq{at: sec(8 + float64(k)), in: 16, out: 2})
	}
	for _, c := range []struct {
		metric string
		target float64
	}{{ScaleOnInFlight, 4}, {ScaleOnKVUsage, 0.01}} {
		t.Run(c.metric, func(t *testing.T) {
			cfg := handConfig(t, reqs, handSetup{})
			cfg.Autoscale = &Autoscale{MinReplicas: 1, MaxReplicas: 4, Metric: c.metric, Target: c.target, IntervalS: 0.5, ScaleUpDelayS: 0.25, Tolerance: 0.1}
			_, _, rep := handRun(t, cfg)
			a := rep.Autoscale
			if a.PeakReplicas < 2 || a.ScaleUps == 0 || a.ScaleDowns == 0 {
				t.Errorf("peak %d, %d up, %d down: %+v", a.PeakReplicas, a.ScaleUps, a.ScaleDowns, a.Timeline)
			}
			if last := a.Timeline[len(a.Timeline)-1]; last.Serving != 1 || last.Starting+last.Draining != 0 {
				t.Errorf("ends with %+v, want one replica serving", last)
			}
			if rep.Requests.Completed != len(reqs) {
				t.Errorf("%d of %d completed", rep.Requests.Completed, len(reqs))
			}
		})
	}
}

// TestAutoscaleValidate names the field at fault.
func TestAutoscaleValidate(t *testing.T) {
	ok := Autoscale{MinReplicas: 1, MaxReplicas: 4, Metric: ScaleOnRequestRate, Target: 2, IntervalS: 15, ScaleUpDelayS: 60, ScaleDownStabilizationS: 300, Tolerance: 0.1}
	for _, c := range []struct {
		field string
		edit  func(a *Autoscale, replicas *int)
	}{
		{"autoscale.min_replicas", func(a *Autoscale, _ *int) { a.MinReplicas = 0 }},
		{"autoscale.max_replicas", func(a *Autoscale, _ *int) { a.MaxReplicas = 0 }},
		{"replicas", func(_ *Autoscale, r *int) { *r = 5 }},
		{"autoscale.metric", func(a *Autoscale, _ *int) { a.Metric = "cpu" }},
		{"autoscale.target", func(a *Autoscale, _ *int) { a.Target = math.NaN() }},
		{"autoscale.target", func(a *Autoscale, _ *int) { a.Metric, a.Target = ScaleOnKVUsage, 1.5 }},
		{"autoscale.tolerance", func(a *Autoscale, _ *int) { a.Tolerance = 1 }},
		{"autoscale.interval_s", func(a *Autoscale, _ *int) { a.IntervalS = 0 }},
		{"autoscale.scale_up_delay_s", func(a *Autoscale, _ *int) { a.ScaleUpDelayS = 1e300 }},
		{"autoscale.scale_down_stabilization_s", func(a *Autoscale, _ *int) { a.ScaleDownStabilizationS = -1 }},
	} {
		a, replicas := ok, 1
		c.edit(&a, &replicas)
		err := a.validate(replicas)
		var fe *hardware.FieldError
		if !errors.As(err, &fe) || fe.Field != c.field {
			t.Errorf("%s: got %v", c.field, err)
		}
	}
	if err := ok.validate(1); err != nil {
		t.Errorf("valid autoscaler refused: %v", err)
	}
}

// TestAutoscaleInvariants runs random workloads autoscaled: every request
// ends once, replicas never serve more than the maximum, the states'
// seconds add up to the total, the timeline integrates to them, and the
// same seed gives the same report.
func TestAutoscaleInvariants(t *testing.T) {
	n := 30
	if testing.Short() {
		n = 8
	}
	for seed := uint64(1); seed <= uint64(n); seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			cfg := randomConfig(t, seed)
			cfg.Workload.Requests = 0
			cfg.Workload.Arrival = workload.ArrivalSpec{Type: workload.ArrivalPoisson}
			cfg.Workload.MultiTurn = nil
			cfg.Workload.Stages = []workload.StageSpec{{DurationS: 4, RateRPS: 2}, {DurationS: 3, RateRPS: 30}, {DurationS: 2}, {DurationS: 4, RateRPS: 3}}
			metric := []string{ScaleOnRequestRate, ScaleOnInFlight, ScaleOnKVUsage}[seed%3]
			target := map[string]float64{ScaleOnRequestRate: 4, ScaleOnInFlight: 3, ScaleOnKVUsage: 0.2}[metric]
			cfg.Replicas = 1
			cfg.Autoscale = &Autoscale{MinReplicas: 1, MaxReplicas: 1 + int(seed%4), Metric: metric, Target: target,
				IntervalS: 0.5, ScaleUpDelayS: float64(seed%3) * 0.7, ScaleDownStabilizationS: float64(seed % 2), Tolerance: 0.1}
			s, err := newSimulator(&cfg)
			if err != nil {
				t.Fatal(err)
			}
			ended := map[int64]bool{}
			var issued []int64
			s.onIssue = func(r *request) { issued = append(issued, r.serial) }
			s.onEnd = func(r *request, _ Time, ok bool) {
				if _, dup := ended[r.serial]; dup {
					t.Fatalf("request %d ended twice", r.serial)
				}
				ended[r.serial] = ok
			}
			s.onStep = func(rp *rank, now Time) {
				if st := s.as.state[rp.inst.id]; st != slotServing && st != slotDraining {
					t.Fatalf("t=%d: replica slot %d in state %d runs a step", now, rp.inst.id, st)
				}
			}
			if err := s.loop(context.Background()); err != nil {
				t.Fatal(err)
			}
			rep := s.report()
			checkConservation(t, s, issued, ended, rep)
			a := rep.Autoscale
			rs := a.ReplicaSeconds
			if d := rs.Starting + rs.Serving + rs.Draining - rs.Total; math.Abs(d) > 1e-5 {
				t.Errorf("states %+v do not add up to the total", rs)
			}
			var integ float64
			for i, p := range a.Timeline {
				until := a.EndS
				if i+1 < len(a.Timeline) {
					until = a.Timeline[i+1].TS
				}
				if held := p.Serving + p.Starting; held > cfg.Autoscale.MaxReplicas || p.Serving < 1 {
					t.Errorf("at %g s %d serving + %d starting (max %d)", p.TS, p.Serving, p.Starting, cfg.Autoscale.MaxReplicas)
				}
				integ += float64(p.Serving+p.Starting+p.Draining) * (until - p.TS)
			}
			if math.Abs(integ-rs.Total) > 1e-5 {
				t.Errorf("the timeline integrates to %g replica-seconds, the report says %g", integ, rs.Total)
			}
			if rs.Total < rs.Serving || rs.Serving < a.EndS {
				t.Errorf("replica-seconds %+v over %g s", rs, a.EndS)
			}
			again, err := Run(context.Background(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			if again.Autoscale.ReplicaSeconds != rs || !slices.Equal(again.Autoscale.Timeline, a.Timeline) {
				t.Error("the same seed gave another autoscale report")
			}
		})
	}
}

// TestIdleStage: a stage with neither a rate nor a concurrency sends
// nothing (a rate profile's empty window), and the next stage resumes.
func TestIdleStage(t *testing.T) {
	cfg := randomConfig(t, 3)
	cfg.Workload = Workload{Input: cfg.Workload.Input, Output: cfg.Workload.Output, Arrival: workload.ArrivalSpec{Type: workload.ArrivalPoisson},
		Stages: []workload.StageSpec{{DurationS: 1, RateRPS: 20}, {DurationS: 5}, {DurationS: 1, RateRPS: 20}}}
	var sent []float64
	rep, err := Run(context.Background(), cfg, WithRequestSink(func(r RequestSample) { sent = append(sent, r.SentS) }))
	if err != nil {
		t.Fatal(err)
	}
	before, after := 0, 0
	for _, s := range sent {
		switch {
		case s > 1 && s < 6:
			t.Fatalf("a request sent at %g s, in the idle stage", s)
		case s <= 1:
			before++
		default:
			after++
		}
	}
	if before == 0 || after == 0 || rep.Stages[1].Requests.Total != 0 {
		t.Errorf("%d requests before the idle stage, %d after; the idle stage counts %d", before, after, rep.Stages[1].Requests.Total)
	}
}

// FuzzAutoscale: whatever the policy's numbers, a run is refused with a
// field error or ends with every request accounted for, never more
// replicas held than the maximum, and replica-seconds that add up.
func FuzzAutoscale(f *testing.F) {
	f.Add(uint8(0), 2.0, 1.0, 5.0, 0.0, 0.1, uint8(1), uint8(4), 10.0)
	f.Add(uint8(1), 1e-300, 1e-3, 0.0, 1e7, 0.0, uint8(2), uint8(2), 200.0)
	f.Add(uint8(2), 0.5, 0.25, 1e13, 3.0, 0.99, uint8(1), uint8(9), 0.5)
	f.Add(uint8(3), math.Inf(1), math.NaN(), -1.0, -1.0, 1.0, uint8(0), uint8(0), 1.0)
	f.Fuzz(func(t *testing.T, metric uint8, target, interval, delay, stab, tol float64, lo, hi uint8, rate float64) {
		cfg := openConfig(t)
		cfg.Workload.Requests = 0
		cfg.Workload.Stages = []workload.StageSpec{{DurationS: 3, RateRPS: rate}, {DurationS: 2}, {DurationS: 2, RateRPS: 2 * rate}}
		cfg.Workload.Arrival.RateRPS = 0
		cfg.Replicas = int(lo%4) + 1
		cfg.Autoscale = &Autoscale{MinReplicas: int(lo % 4), MaxReplicas: int(hi % 8), Target: target,
			Metric:    []string{ScaleOnRequestRate, ScaleOnInFlight, ScaleOnKVUsage, "bogus"}[metric%4],
			IntervalS: interval, ScaleUpDelayS: delay, ScaleDownStabilizationS: stab, Tolerance: tol}
		cfg.MaxEvents = 300_000
		if err := cfg.Validate(); err != nil {
			var fe *hardware.FieldError
			if !errors.As(err, &fe) {
				t.Fatalf("Validate: %v is not a field error", err)
			}
			return
		}
		rep, err := Run(context.Background(), cfg)
		if err != nil {
			if !errors.Is(err, ErrTooLong) && !errors.Is(err, ErrEventLimit) {
				t.Fatalf("Run: %v", err)
			}
			return
		}
		if rc := rep.Requests; rc.Total != rc.Completed+rc.Rejected+rc.Unfinished {
			t.Fatalf("requests %+v", rc)
		}
		a := rep.Autoscale
		rs := a.ReplicaSeconds
		if math.Abs(rs.Starting+rs.Serving+rs.Draining-rs.Total) > 1e-5 || rs.Serving < 0 || rs.Starting < 0 || rs.Draining < 0 {
			t.Fatalf("replica-seconds %+v", rs)
		}
		for _, p := range a.Timeline {
			if p.Serving+p.Starting > cfg.Autoscale.MaxReplicas || p.Serving < 1 {
				t.Fatalf("timeline point %+v with max %d", p, cfg.Autoscale.MaxReplicas)
			}
		}
	})
}
