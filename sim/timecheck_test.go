package sim

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/headroom-sim/headroom/hardware"
	"github.com/headroom-sim/headroom/sim/workload"
)

func TestToClock(t *testing.T) {
	tests := []struct {
		x, scale float64
		want     Time
		ok       bool
	}{
		{0, 1e9, 0, true},
		{1.5, 1e9, 1_500_000_000, true},
		{0.25, 1e6, 250_000, true},
		{MaxSimulatedSeconds, 1e9, horizon, true},
		{MaxSimulatedSeconds + 1e-3, 1e9, beyond, true},
		{1e13, 1e6, beyond, true}, // 1e13 ms: would wrap to a negative int64
		{1e300, 1e9, beyond, true},
		{math.MaxFloat64, 1e9, beyond, true},
		{-1e-9, 1e9, 0, false},
		{math.NaN(), 1e9, 0, false},
		{math.Inf(1), 1e9, 0, false},
	}
	for _, tt := range tests {
		got, ok := toClock(tt.x, tt.scale)
		if ok != tt.ok || (ok && got != tt.want) {
			t.Errorf("toClock(%g, %g) = %d, %v; want %d, %v", tt.x, tt.scale, got, ok, tt.want, tt.ok)
		}
	}
}

// openConfig is a small open-loop run: 100 Poisson requests at 10 req/s,
// 128 prompt and 16 output tokens.
func openConfig(t *testing.T) Config {
	t.Helper()
	cfg := handConfig(t, []handReq{{in: 1, out: 1}}, handSetup{})
	in, _ := workload.NewLengthSampler(workload.LengthSpec{Type: workload.LengthFixed, Value: 128}, "in", nil)
	out, _ := workload.NewLengthSampler(workload.LengthSpec{Type: workload.LengthFixed, Value: 16}, "out", nil)
	cfg.Workload = Workload{Requests: 100, Arrival: workload.ArrivalSpec{Type: workload.ArrivalPoisson, RateRPS: 10}, Input: in, Output: out}
	return cfg
}

// TestValidateRefusesTimesOffTheClock: every time a run would compute
// that the int64 nanosecond clock cannot hold is an error naming the
// field, before anything runs.
func TestValidateRefusesTimesOffTheClock(t *testing.T) {
	closed := func(c *Config) {
		c.Workload.Arrival = workload.ArrivalSpec{Type: workload.ArrivalClosedLoop, Concurrency: 1}
	}
	trace := func(arrival float64, in int) func(*Config) {
		return func(c *Config) {
			c.Workload = Workload{Trace: []workload.TraceRecord{{ArrivalS: 0, InputTokens: 10, OutputTokens: 2}, {ArrivalS: arrival, InputTokens: in, OutputTokens: 2}}}
		}
	}
	stages := func(st ...workload.StageSpec) func(*Config) {
		return func(c *Config) { c.Workload.Requests, c.Workload.Stages = 0, st }
	}
	tests := []struct {
		name  string
		edit  func(*Config)
		field string // "" = valid
	}{
		{"the base run", func(*Config) {}, ""},
		{"closed-loop think time 1e13 ms", func(c *Config) { closed(c); c.Workload.Arrival.ThinkTimeMS = 1e13 }, "workload.arrival.think_time_ms"},
		{"multi-turn think time 1e13 ms", func(c *Config) {
			c.Workload.MultiTurn = &workload.MultiTurnSpec{Turns: 2, ThinkTimeMS: 1e13}
		}, "workload.multi_turn.think_time_ms"},
		{"multi-turn think time 1e13 ms, one request", func(c *Config) {
			c.Workload.Requests, c.Workload.MultiTurn = 1, &workload.MultiTurnSpec{Turns: 2, ThinkTimeMS: 1e13}
		}, "workload.multi_turn.think_time_ms"},
		{"multi-turn think time NaN", func(c *Config) {
			c.Workload.MultiTurn = &workload.MultiTurnSpec{Turns: 2, ThinkTimeMS: math.NaN()}
		}, "workload.multi_turn.think_time_ms"},
		{"think time NaN", func(c *Config) { closed(c); c.Workload.Arrival.ThinkTimeMS = math.NaN() }, "workload.arrival.think_time_ms"},
		{"20 requests one client 1e6 s apart", func(c *Config) {
			closed(c)
			c.Workload.Requests, c.Workload.Arrival.ThinkTimeMS = 20, 1e9
		}, "workload.arrival.think_time_ms"},
		{"10 requests one client 1e6 s apart", func(c *Config) {
			closed(c)
			c.Workload.Requests, c.Workload.Arrival.ThinkTimeMS = 10, 1e9
		}, ""},
		{"20 turns 1e6 s apart", func(c *Config) {
			c.Workload.MultiTurn = &workload.MultiTurnSpec{Turns: 20, ThinkTimeMS: 1e9}
		}, "workload.multi_turn.think_time_ms"},
		{"rate 1e-15", func(c *Config) { c.Workload.Arrival.RateRPS = 1e-15 }, "workload.arrival.rate_rps"},
		{"rate 1e-300", func(c *Config) { c.Workload.Arrival.RateRPS = 1e-300 }, "workload.arrival.rate_rps"},
		{"rate 1e7", func(c *Config) { c.Workload.Arrival.RateRPS = 1e7 }, "workload.arrival.rate_rps"},
		{"rate 1e6", func(c *Config) { c.Workload.Arrival.RateRPS = 1e6 }, ""},
		{"2000 requests at 1e-4 req/s", func(c *Config) { c.Workload.Requests, c.Workload.Arrival.RateRPS = 2000, 1e-4 }, "workload.arrival.rate_rps"},
		{"1000 requests at 1e-4 req/s", func(c *Config) { c.Workload.Requests, c.Workload.Arrival.RateRPS = 1000, 1e-4 }, ""},
		{"gamma cv 1e-300", func(c *Config) {
			c.Workload.Arrival = workload.ArrivalSpec{Type: workload.ArrivalGamma, RateRPS: 10, CV: 1e-300}
		}, "workload.arrival.cv"},
		{"gamma cv 1e-7", func(c *Config) {
			c.Workload.Arrival = workload.ArrivalSpec{Type: workload.ArrivalGamma, RateRPS: 10, CV: 1e-7}
		}, "workload.arrival.cv"},
		{"gamma cv 1e7", func(c *Config) {
			c.Workload.Arrival = workload.ArrivalSpec{Type: workload.ArrivalGamma, RateRPS: 10, CV: 1e7}
		}, "workload.arrival.cv"},
		{"gamma cv 1e-6 and 1e6", func(c *Config) {
			c.Workload.Arrival = workload.ArrivalSpec{Type: workload.ArrivalGamma, RateRPS: 10, CV: 1e-6}
			if err := c.Validate(); err != nil {
				t.Errorf("cv 1e-6: %v", err)
			}
			c.Workload.Arrival.CV = 1e6
		}, ""},
		{"gamma cv 1e300", func(c *Config) {
			c.Workload.Arrival = workload.ArrivalSpec{Type: workload.ArrivalGamma, RateRPS: 10, CV: 1e300}
		}, "workload.arrival.cv"},
		{"trace arrival 9.3e9 s", trace(9.3e9, 10), "workload.trace"},
		{"trace arrival NaN", trace(math.NaN(), 10), "workload.trace"},
		{"trace arrival 9.9e6 s", trace(9.9e6, 10), ""},
		{"trace prompt of 0 tokens", trace(1, 0), "workload.trace"},
		{"stage of 1e10 s", stages(workload.StageSpec{DurationS: 1e10, RateRPS: 1}), "workload.stages[0].duration_s"},
		{"stages adding up past the per-second counters", stages(workload.StageSpec{DurationS: 6e5, RateRPS: 1}, workload.StageSpec{DurationS: 6e5, Concurrency: 1}), "workload.stages[1].duration_s"},
		{"stages adding up to the per-second counters", stages(workload.StageSpec{DurationS: 5e5, RateRPS: 1e-3}, workload.StageSpec{DurationS: 5e5, RateRPS: 1e-3}), ""},
		{"stage rate 1e7", stages(workload.StageSpec{DurationS: 10, RateRPS: 1e7}), "workload.stages[0].rate_rps"},
		{"stage rate 1e-9 (no arrival in the stage)", stages(workload.StageSpec{DurationS: 10, RateRPS: 1e-9}), ""},
		{"stage with gamma cv 0", func(c *Config) {
			stages(workload.StageSpec{DurationS: 10, RateRPS: 1})(c)
			c.Workload.Arrival = workload.ArrivalSpec{Type: workload.ArrivalGamma}
		}, "workload.arrival.cv"},
		{"network rtt 1e13 ms", func(c *Config) { c.NetworkRTTMS = 1e13 }, "network_rtt_ms"},
		{"network rtt NaN", func(c *Config) { c.NetworkRTTMS = math.NaN() }, "network_rtt_ms"},
		{"stall threshold 1e13 ms", func(c *Config) { c.Report.StallThresholdMS = 1e13 }, "report.stall_threshold_ms"},
		{"max_num_seqs 0", func(c *Config) { c.Engine.MaxNumSeqs = 0 }, "engine.max_num_seqs"},
		{"max_num_batched_tokens 0", func(c *Config) { c.Engine.MaxNumBatchedTokens = 0 }, "engine.max_num_batched_tokens"},
		{"block_size 0", func(c *Config) { c.Engine.BlockSize = 0 }, "engine.block_size"},
		{"scheduler unset", func(c *Config) { c.Engine.Scheduler = "" }, "engine.scheduler"},
		{"swap space NaN", func(c *Config) { c.Engine.SwapSpaceGiB = math.NaN() }, "engine.swap_space_gib"},
		{"swap space +Inf", func(c *Config) { c.Engine.SwapSpaceGiB = math.Inf(1) }, "engine.swap_space_gib"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := openConfig(t)
			tt.edit(&cfg)
			err := cfg.Validate()
			var fe *hardware.FieldError
			switch {
			case tt.field == "" && err != nil:
				t.Fatalf("unexpected error: %v", err)
			case tt.field == "":
			case !errors.As(err, &fe):
				t.Fatalf("error %v, want a *hardware.FieldError for %s", err, tt.field)
			case fe.Field != tt.field:
				t.Fatalf("error names %s (%v), want %s", fe.Field, err, tt.field)
			}
			// Run refuses the same configurations.
			if _, rerr := Run(context.Background(), cfg); (rerr != nil) != (tt.field != "") {
				t.Errorf("Run: %v", rerr)
			}
		})
	}
	cfg := openConfig(t)
	cfg.BlockBytes = math.NaN()
	if err := cfg.Validate(); err == nil {
		t.Error("NaN block bytes accepted")
	}
}

// TestRunPastTheHorizonNamesTheField: times that pass every check but
// add up past the clock end the run with ErrTooLong naming the field.
func TestRunPastTheHorizonNamesTheField(t *testing.T) {
	// One client, two-turn conversations 4e6 s apart and 4e6 s between
	// conversations: the third request is due at 8e6 s, the fourth at
	// 1.2e7 s, past the 1e7 s the clock covers.
	cfg := openConfig(t)
	cfg.Workload.Requests = 6
	cfg.Workload.Arrival = workload.ArrivalSpec{Type: workload.ArrivalClosedLoop, Concurrency: 1, ThinkTimeMS: 4e9}
	cfg.Workload.MultiTurn = &workload.MultiTurnSpec{Turns: 2, ThinkTimeMS: 4e9}
	_, err := Run(context.Background(), cfg)
	var fe *hardware.FieldError
	if !errors.Is(err, ErrTooLong) || !errors.As(err, &fe) || fe.Field != "workload.multi_turn.think_time_ms" {
		t.Fatalf("err %v, want ErrTooLong naming workload.multi_turn.think_time_ms", err)
	}

	// Three Poisson requests 5e6 s apart on average: some seeds' gaps add
	// up past 1e7 s, the others' do not.
	crossed, fit := 0, 0
	for seed := uint64(1); seed <= 12; seed++ {
		cfg := openConfig(t)
		cfg.Seed = seed
		cfg.Workload.Requests, cfg.Workload.Arrival.RateRPS = 3, 2e-7
		rep, err := Run(context.Background(), cfg)
		switch {
		case err == nil && rep.Simulation.SimulatedS <= MaxSimulatedSeconds && rep.Requests.Completed == 3:
			fit++
		case errors.Is(err, ErrTooLong) && errors.As(err, &fe) && fe.Field == "workload.arrival.rate_rps":
			crossed++
		default:
			t.Fatalf("seed %d: err %v", seed, err)
		}
	}
	if crossed == 0 || fit == 0 {
		t.Errorf("%d runs crossed the horizon, %d fit: the case is not exercised", crossed, fit)
	}
}

// TestStageEndsBeforeItsNextArrival: an arrival drawn past its stage's end
// is not scheduled, so it neither ends the run past the horizon nor
// stretches the simulated time.
func TestStageEndsBeforeItsNextArrival(t *testing.T) {
	cfg := openConfig(t)
	cfg.Workload.Requests = 0
	cfg.Workload.Stages = []workload.StageSpec{{DurationS: 10, RateRPS: 1e-6}, {DurationS: 2, RateRPS: 5}}
	cfg.Report.Timeseries = true
	rep, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	// Stage 0's first gap is about 1e6 s, so it has no request, and the
	// run ends a few seconds after stage 1 (12 s).
	if rep.Simulation.SimulatedS > 14 || len(rep.Timeseries) > 14 || rep.Stages[0].Requests.Total != 0 || rep.Stages[1].Requests.Total == 0 {
		t.Errorf("simulated %g s, %d time points, stage 0 has %d requests", rep.Simulation.SimulatedS, len(rep.Timeseries), rep.Stages[0].Requests.Total)
	}
}

func TestStepTimesOffTheClock(t *testing.T) {
	for _, c := range []struct {
		name string
		dt   float64
		want string
	}{
		{"NaN", math.NaN(), "step-time model gave NaN"},
		{"negative", -1, "step-time model gave -1"},
		{"past the horizon", 2e7, "end of an engine step"},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, _ := newHandSim(t, handConfig(t, []handReq{{in: 16, out: 2}}, handSetup{}))
			s.stepTime = func(*rank) float64 { return c.dt }
			err := s.loop(context.Background())
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err %v, want it to say %q", err, c.want)
			}
		})
	}
}
