package sim

import (
	"errors"
	"fmt"
	"math"

	"github.com/headroom-sim/headroom/hardware"
	"github.com/headroom-sim/headroom/sim/workload"
)

// The simulator's clock is an int64 count of nanoseconds. Every time a run
// computes (stage lengths, gaps, think times, trace arrivals, the network
// round trip, step and swap times) is checked against it here: a value the
// clock cannot hold is an input error naming its field, never a wrapped
// integer.

// horizon is the last instant a run may reach (MaxSimulatedSeconds).
const horizon Time = MaxSimulatedSeconds * nsPerSecond

// beyond stands for "after the horizon": a finite duration too long for
// the run is converted to it, so the event it schedules sorts after every
// reachable one and, if it is ever due, ends the run with ErrTooLong
// naming the field. Sums of two such times stay far inside int64.
const beyond Time = horizon + 1

// MaxRateRPS bounds open-loop arrival rates: the mean gap must be at least
// 1 µs, so that truncating gaps to whole nanoseconds moves the rate by at
// most 0.1%.
const MaxRateRPS = 1e6

// toTime is the simulator's one conversion of a float to the clock
// (TestOneFloatToTimeConversion holds every other file to it): x units of
// nsPerUnit nanoseconds each (1e9 for seconds, 1e6 for milliseconds, 1 for
// nanoseconds), truncated to whole nanoseconds, or with roundUp rounded up
// to at least 1 ns (a step or a transfer is an event after its start). ok
// is false for NaN, negative and infinite x; a finite x past the horizon
// gives beyond, never a wrapped integer.
func toTime(x, nsPerUnit float64, roundUp bool) (t Time, ok bool) {
	if math.IsNaN(x) || x < 0 || math.IsInf(x, 1) {
		return 0, false
	}
	if roundUp {
		ns := math.Ceil(x * nsPerUnit)
		if !(ns <= float64(horizon)) {
			return beyond, true
		}
		return max(Time(ns), 1), true
	}
	if !(x <= float64(horizon)/nsPerUnit) {
		return beyond, true
	}
	return min(Time(x*nsPerUnit), horizon), true
}

// toClock is toTime truncating: input times (gaps, think times, stage
// lengths, trace arrivals, latencies).
func toClock(x, nsPerUnit float64) (t Time, ok bool) { return toTime(x, nsPerUnit, false) }

// durationReason says why x (in units of nsPerUnit ns) is not a duration
// the clock can hold ("" when it is).
func durationReason(x, nsPerUnit float64, unit string) string {
	t, ok := toClock(x, nsPerUnit)
	switch {
	case !ok:
		return fmt.Sprintf("must be a finite number >= 0, got %g", x)
	case t == beyond:
		return fmt.Sprintf("%g %s is past the %d s (about 116 days) the simulator's nanosecond clock covers", x, unit, MaxSimulatedSeconds)
	}
	return ""
}

func fieldErr(field, reason string) error { return &hardware.FieldError{Field: field, Reason: reason} }

// validateTimes checks the times of the run outside its workload.
func (c *Config) validateTimes() error {
	if r := durationReason(c.NetworkRTTMS, nsPerMS, "ms"); r != "" {
		return fieldErr("network_rtt_ms", r)
	}
	if r := durationReason(c.Report.StallThresholdMS, nsPerMS, "ms"); r != "" {
		return fieldErr("report.stall_threshold_ms", r)
	}
	if !(c.BlockBytes >= 0) || math.IsInf(c.BlockBytes, 1) {
		return fieldErr("block_bytes", fmt.Sprintf("%g is not a finite number >= 0 (a KV block's bytes on one GPU)", c.BlockBytes))
	}
	if err := c.Workload.ValidateSizes(); err != nil {
		return err
	}
	return c.Workload.ValidateTimes()
}

// ValidateTimes checks every time the workload implies against the
// simulator's clock: stage lengths and their sum, arrival rates (mean gaps
// from 1 µs up to MaxSimulatedSeconds, and the requests' expected span),
// gamma shapes, think times, and trace arrivals. Errors are
// *hardware.FieldError named as the scenario's fields ("workload.…").
// Run calls it; scenario resolution calls it to refuse such input early.
func (w *Workload) ValidateTimes() error {
	if w.Requests < 0 {
		return fieldErr("workload.requests", fmt.Sprintf("must be >= 0, got %d", w.Requests))
	}
	if w.MaxConcurrency < 0 {
		return fieldErr("workload.max_concurrency", fmt.Sprintf("must be >= 0, got %d", w.MaxConcurrency))
	}
	if w.Trace != nil {
		return validateTrace(w.Trace)
	}
	a := w.Arrival
	if r := durationReason(a.ThinkTimeMS, nsPerMS, "ms"); r != "" {
		return fieldErr("workload.arrival.think_time_ms", r)
	}
	if mt := w.MultiTurn; mt != nil {
		if r := durationReason(mt.ThinkTimeMS, nsPerMS, "ms"); r != "" {
			return fieldErr("workload.multi_turn.think_time_ms", r)
		}
		if turns := min(mt.Turns, w.Requests); w.Requests > 0 && turns > 1 {
			if r := spanReason(float64(turns-1)*mt.ThinkTimeMS/1e3, fmt.Sprintf("%d turns of one conversation, %g ms apart,", turns, mt.ThinkTimeMS)); r != "" {
				return fieldErr("workload.multi_turn.think_time_ms", r)
			}
		}
	}
	if len(w.Stages) > 0 {
		return w.validateStages()
	}
	if a.Type == workload.ArrivalClosedLoop {
		if a.Concurrency < 1 {
			return fieldErr("workload.arrival.concurrency", "must be >= 1")
		}
		if rounds := (w.Requests + a.Concurrency - 1) / a.Concurrency; w.MultiTurn == nil && rounds > 1 {
			if r := spanReason(float64(rounds-1)*a.ThinkTimeMS/1e3, fmt.Sprintf("%d requests per client, %g ms apart,", rounds, a.ThinkTimeMS)); r != "" {
				return fieldErr("workload.arrival.think_time_ms", r)
			}
		}
		return nil
	}
	if err := checkRate(a.Type, a.RateRPS, a.CV, "workload.arrival.rate_rps", false); err != nil {
		return err
	}
	if w.Requests > 1 {
		what := fmt.Sprintf("%d requests at %g req/s", w.Requests, a.RateRPS)
		if r := spanReason(float64(w.Requests-1)/a.RateRPS, what); r != "" {
			return fieldErr("workload.arrival.rate_rps", r)
		}
	}
	return nil
}

// spanReason refuses a run that must last longer than the clock covers.
func spanReason(seconds float64, what string) string {
	if seconds > MaxSimulatedSeconds {
		return fmt.Sprintf("%s take at least %.3g s, past the %d s (about 116 days) the simulator covers", what, seconds, MaxSimulatedSeconds)
	}
	return ""
}

// checkRate checks an open-loop arrival process; rateField names its
// rate. The gamma cv is workload.arrival.cv. longGapOK allows a mean gap
// past the horizon (a stage with such a rate ends before its first
// arrival).
func checkRate(typ string, rate, cv float64, rateField string, longGapOK bool) error {
	if _, err := workload.NewInterarrival(typ, rate, cv); err != nil {
		var fe *hardware.FieldError
		if !errors.As(err, &fe) {
			return err
		}
		switch fe.Field {
		case "rate_rps":
			return fieldErr(rateField, fe.Reason)
		default:
			return fieldErr("workload.arrival."+fe.Field, fe.Reason)
		}
	}
	switch {
	case rate > MaxRateRPS:
		return fieldErr(rateField, fmt.Sprintf("%g req/s is above %g: gaps under 1 µs cannot be kept on the nanosecond clock", rate, MaxRateRPS))
	case 1/rate > MaxSimulatedSeconds && !longGapOK:
		return fieldErr(rateField, fmt.Sprintf("%g req/s means a gap of %.3g s between requests, past the %d s (about 116 days) the simulator covers", rate, 1/rate, MaxSimulatedSeconds))
	}
	return nil
}

func (w *Workload) validateStages() error {
	typ := w.Arrival.Type
	if typ == "" || typ == workload.ArrivalClosedLoop {
		typ = workload.ArrivalPoisson
	}
	total := 0.0
	for i, st := range w.Stages {
		f := fmt.Sprintf("workload.stages[%d]", i)
		if !(st.DurationS > 0) {
			return fieldErr(f+".duration_s", fmt.Sprintf("must be a finite number > 0, got %g", st.DurationS))
		}
		if r := durationReason(st.DurationS, float64(nsPerSecond), "s"); r != "" {
			return fieldErr(f+".duration_s", r)
		}
		total += st.DurationS
		if total > maxSeriesSeconds {
			return fieldErr(f+".duration_s", fmt.Sprintf("the stages up to this one last %g s, past the %d s (about 11.6 days) over which stage throughput is counted", total, maxSeriesSeconds))
		}
		if st.RateRPS != 0 {
			if err := checkRate(typ, st.RateRPS, w.Arrival.CV, f+".rate_rps", true); err != nil {
				return err
			}
		}
	}
	return nil
}

// validateTrace checks the trace's records: arrivals on the clock, token
// counts the engine can take.
func validateTrace(recs []workload.TraceRecord) error {
	if len(recs) == 0 {
		return fieldErr("workload.trace", "has no requests")
	}
	for i := range recs {
		rec := &recs[i]
		if r := durationReason(rec.ArrivalS, float64(nsPerSecond), "s"); r != "" {
			return fieldErr("workload.trace", fmt.Sprintf("request %d (in arrival order) arrives at %g s: %s", i+1, rec.ArrivalS, r))
		}
		if rec.InputTokens < 1 || rec.OutputTokens < 1 {
			return fieldErr("workload.trace", fmt.Sprintf("request %d (in arrival order) has %d input and %d output tokens; both must be >= 1", i+1, rec.InputTokens, rec.OutputTokens))
		}
	}
	return nil
}

// stepClock converts a step's duration in seconds (compute and swap
// transfers) to the clock, rounded up to at least 1 ns.
func stepClock(dt float64) (Time, error) {
	t, ok := toTime(dt, 1e9, true)
	if !ok {
		return 0, fmt.Errorf("%w: the step-time model gave %g s for a step (check the step-time profile)", ErrInternal, dt)
	}
	return t, nil
}

// idleAfterHorizon reports whether e, due after the horizon, would do
// nothing: an arrival of a stage that is over, or a client's wake-up when
// no request may follow. Every event still queued is as late, so the run
// may end there.
func (s *Simulator) idleAfterHorizon(e *event) bool {
	d := s.d
	switch e.kind {
	case evArrival:
		if d.w.Trace != nil {
			return d.traceIdx >= d.limit
		}
		return e.client != d.arrivalGen || !d.open
	case evWake:
		if e.sess != nil && e.sess.turnsLeft > 0 {
			return e.client >= 0 && !d.clients[e.client].active
		}
		return e.client < 0 || !d.clients[e.client].active || !d.room(1)
	}
	return false
}

// pastHorizon is the error for event e, due after the horizon: ErrTooLong,
// with the field that produced the time when one did.
func (s *Simulator) pastHorizon(e *event) error {
	field, what := "", "an event"
	switch e.kind {
	case evArrival:
		what = "the next arrival"
		switch {
		case s.cfg.Workload.Trace != nil:
			field = "workload.trace"
		case len(s.cfg.Workload.Stages) > 0:
			field = fmt.Sprintf("workload.stages[%d].rate_rps", s.d.curStage)
		default:
			field = "workload.arrival.rate_rps"
		}
	case evWake:
		what, field = "a client's next request", "workload.arrival.think_time_ms"
		if e.sess != nil && e.sess.turnsLeft > 0 {
			what, field = "the next turn of a conversation", "workload.multi_turn.think_time_ms"
		}
	case evDeliver:
		what, field = "a request's delivery", "network_rtt_ms"
	case evStepEnd:
		what = "the end of an engine step"
	case evStage:
		what = "the end of the stages"
	}
	reason := fmt.Sprintf("%s falls after the %d s (about 116 days) the simulator covers", what, MaxSimulatedSeconds)
	if field == "" {
		return fmt.Errorf("%w: %s", ErrTooLong, reason)
	}
	return fmt.Errorf("%w: %w", ErrTooLong, fieldErr(field, reason))
}

// fail records the first error of the run; the event loop returns it.
func (s *Simulator) fail(err error) {
	if s.err == nil {
		s.err = err
	}
}
