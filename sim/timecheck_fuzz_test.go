package sim

import (
	"context"
	"errors"
	"testing"

	"github.com/headroom-sim/headroom/hardware"
	"github.com/headroom-sim/headroom/sim/workload"
)

// FuzzTimes: whatever numbers a workload's times hold, a run either is
// refused with a field error, ends with ErrTooLong, or reports latencies
// that are real: none negative, none past the clock, every request
// accounted for.
func FuzzTimes(f *testing.F) {
	f.Add(uint8(0), 10.0, 0.0, 0.0, 0.0, uint8(0), uint8(1), uint8(20), 0.0, 0.0)
	f.Add(uint8(3), 0.0, 0.0, 1e13, 0.0, uint8(0), uint8(1), uint8(20), 0.0, 0.0)  // the closed loop
	f.Add(uint8(0), 10.0, 0.0, 0.0, 1e13, uint8(3), uint8(1), uint8(20), 0.0, 0.0) // multi-turn think time
	f.Add(uint8(0), 1e-15, 0.0, 0.0, 0.0, uint8(0), uint8(1), uint8(20), 0.0, 0.0)
	f.Add(uint8(2), 10.0, 1e-300, 0.0, 0.0, uint8(0), uint8(1), uint8(20), 0.0, 0.0)
	f.Add(uint8(0), 2e-7, 0.0, 0.0, 0.0, uint8(0), uint8(1), uint8(3), 0.0, 0.0)
	f.Add(uint8(0), 1.0, 0.0, 0.0, 0.0, uint8(0), uint8(1), uint8(0), 1e10, 0.0) // a stage of 1e10 s
	f.Add(uint8(1), 1e6, 0.0, 0.0, 0.0, uint8(0), uint8(1), uint8(50), 0.0, 1e6)
	f.Add(uint8(0), 10.0, 0.0, 0.0, 0.0, uint8(0), uint8(1), uint8(5), 0.0, 1e13) // an RTT of 1e13 ms
	f.Fuzz(func(t *testing.T, typ uint8, rate, cv, think, turnThink float64, turns, conc, requests uint8, stageS, rttMS float64) {
		cfg := openConfig(t)
		w := &cfg.Workload
		w.Requests = int(requests % 40)
		w.Arrival = workload.ArrivalSpec{Type: []string{workload.ArrivalPoisson, workload.ArrivalConstant, workload.ArrivalGamma, workload.ArrivalClosedLoop}[typ%4], RateRPS: rate, CV: cv}
		if w.Arrival.Type == workload.ArrivalClosedLoop {
			w.Arrival = workload.ArrivalSpec{Type: workload.ArrivalClosedLoop, Concurrency: int(conc%8) + 1, ThinkTimeMS: think}
		}
		if turns > 1 {
			w.MultiTurn = &workload.MultiTurnSpec{Turns: int(turns % 5), ThinkTimeMS: turnThink}
		}
		if w.Requests == 0 {
			w.Stages = []workload.StageSpec{{DurationS: stageS, RateRPS: rate}}
			w.Arrival.RateRPS, w.Arrival.Concurrency = 0, 0
			if w.Arrival.Type == workload.ArrivalClosedLoop {
				w.Arrival.Type = ""
			}
		}
		cfg.NetworkRTTMS = rttMS
		cfg.MaxEvents = 200_000
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
		if rep.Simulation.SimulatedS > MaxSimulatedSeconds || rep.DurationS < 0 {
			t.Fatalf("simulated %v s, duration %v s", rep.Simulation.SimulatedS, rep.DurationS)
		}
		for name, s := range map[string]float64{"ttft min": rep.TTFTMS.P50, "ttft max": rep.TTFTMS.Max, "e2e p50": rep.E2EMS.P50, "queue p50": rep.QueueMS.P50, "itl max": rep.ITLMS.Max} {
			if s < 0 || s > MaxSimulatedSeconds*1e3 {
				t.Fatalf("%s = %v ms", name, s)
			}
		}
		if rc := rep.Requests; rc.Total != rc.Completed+rc.Rejected+rc.Unfinished || rc.Unfinished != 0 {
			t.Fatalf("requests %+v", rc)
		}
	})
}
