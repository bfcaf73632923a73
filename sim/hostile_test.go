package sim

import (
	"context"
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/headroom-sim/headroom/hardware"
	"github.com/headroom-sim/headroom/sim/workload"
)

// Issue 23: sizes a hostile or careless request sets are refused by name
// before anything is allocated, and what a run allocates grows with what
// it uses, not with the sizes it is given.

// TestHostileSizesRefusedByName: every size that used to take the process
// down (one client record per user, a KV cache allocated whole, a
// transfer time past int64) is a *hardware.FieldError naming its field.
func TestHostileSizesRefusedByName(t *testing.T) {
	tests := []struct {
		name  string
		cfg   func(t *testing.T) Config
		field string
	}{
		{"4.6e18 closed-loop users", func(t *testing.T) Config {
			c := openConfig(t)
			c.Workload.Arrival = workload.ArrivalSpec{Type: workload.ArrivalClosedLoop, Concurrency: 1 << 62}
			return c
		}, "workload.arrival.concurrency"},
		{"4e9 users (the CLI's --concurrency 4000000000)", func(t *testing.T) Config {
			c := openConfig(t)
			c.Workload.Arrival = workload.ArrivalSpec{Type: workload.ArrivalClosedLoop, Concurrency: 4_000_000_000}
			return c
		}, "workload.arrival.concurrency"},
		{"a stage of 1e9 users", func(t *testing.T) Config {
			c := openConfig(t)
			c.Workload.Requests = 0
			c.Workload.Stages = []workload.StageSpec{{DurationS: 10, RateRPS: 1}, {DurationS: 10, Concurrency: 1_000_000_000}}
			return c
		}, "workload.stages[1].concurrency"},
		{"2e9 blocks of 2 MiB (past the GPU)", func(t *testing.T) Config {
			c := openConfig(t)
			c.Engine.NumGPUBlocksOverride, c.NumGPUBlocks, c.BlockBytes = 2_000_000_000, 2_000_000_000, 2<<20
			return c
		}, "engine.num_gpu_blocks_override"},
		{"5.4e9 blocks of a tiny model (past int32)", func(t *testing.T) Config {
			c := openConfig(t)
			c.NumGPUBlocks, c.BlockBytes = 5_386_075_574, 32
			return c
		}, "engine.block_size"},
		{"a prefill pool past int32", func(t *testing.T) Config {
			c := handPD(t, []handReq{{in: 10, out: 2}}, 100, 100, false)
			c.Disagg.Prefill.NumGPUBlocks = math.MaxInt32 + 1
			return c
		}, "disaggregation.prefill.engine.block_size"},
		{"4096 replicas of 4096 ranks", func(t *testing.T) Config {
			c := openConfig(t)
			c.Replicas, c.DP = 4096, 4096
			return c
		}, "replicas"},
		{"a KV link of 1e-12 GB/s", func(t *testing.T) Config {
			c := handPD(t, []handReq{{in: 10, out: 2}}, 100, 100, false)
			c.Disagg.Link.BandwidthGBps = 1e-12
			return c
		}, "disaggregation.kv_transfer.bandwidth_gbps"},
		{"a KV link of 1e-300 GB/s", func(t *testing.T) Config {
			c := handPD(t, []handReq{{in: 10, out: 2}}, 100, 100, false)
			c.Disagg.Link.BandwidthGBps = 1e-300
			return c
		}, "disaggregation.kv_transfer.bandwidth_gbps"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Run(context.Background(), tt.cfg(t))
			var fe *hardware.FieldError
			if !errors.As(err, &fe) || fe.Field != tt.field {
				t.Fatalf("Run = %v, want a field error naming %s", err, tt.field)
			}
		})
	}
}

// TestUsersPastTheRequestsCostNothing: a closed loop of a million users
// and 20 requests keeps 20 client records and reports what 20 users do.
func TestUsersPastTheRequestsCostNothing(t *testing.T) {
	run := func(users int) (*Simulator, *Report) {
		c := openConfig(t)
		c.Workload.Requests = 20
		c.Workload.Arrival = workload.ArrivalSpec{Type: workload.ArrivalClosedLoop, Concurrency: users}
		return runWith(t, c, nil)
	}
	s, many := run(MaxUsers)
	if n := len(s.d.clients); n != 20 {
		t.Errorf("%d users for 20 requests kept %d client records, want 20", MaxUsers, n)
	}
	_, few := run(20)
	if !reflect.DeepEqual(many, few) {
		t.Errorf("a million users report differently from 20:\n%+v\n%+v", many, few)
	}
}

// TestKVCacheGrowsAsUsed: a cache of two billion blocks (within int32,
// block size unknown) costs what its requests fill, not 48 GB up front.
func TestKVCacheGrowsAsUsed(t *testing.T) {
	c := openConfig(t)
	c.Workload.Requests = 20
	c.NumGPUBlocks = 2_000_000_000
	s, rep := runWith(t, c, nil)
	if rep.Requests.Completed != 20 {
		t.Fatalf("completed %d of 20", rep.Requests.Completed)
	}
	if n := cap(s.ranks[0].kv.blocks); n > 1<<16 {
		t.Errorf("the cache holds room for %d block records after 20 short requests", n)
	}
}

// TestToTimeRoundsUpOnTheClock: the rounding-up conversion (steps and
// transfers) keeps at least 1 ns and never wraps.
func TestToTimeRoundsUpOnTheClock(t *testing.T) {
	for _, tt := range []struct {
		x, unit float64
		want    Time
		ok      bool
	}{
		{0, 1e9, 1, true},
		{1.2e-9, 1e9, 2, true},
		{1e18, 1, beyond, true}, // 1e-12 GB/s: a wrapped, negative time before
		{1e300, 1, beyond, true},
		{math.Inf(1), 1, 0, false},
		{math.NaN(), 1, 0, false},
		{-1, 1, 0, false},
	} {
		if got, ok := toTime(tt.x, tt.unit, true); got != tt.want || ok != tt.ok {
			t.Errorf("toTime(%g, %g, up) = %d, %v; want %d, %v", tt.x, tt.unit, got, ok, tt.want, tt.ok)
		}
	}
}

// TestSLANotMetWithoutCompletions: when every prompt is longer than
// max_model_len nothing completes, and the SLA is missed, saying so,
// however low the (empty) latencies read.
func TestSLANotMetWithoutCompletions(t *testing.T) {
	c := openConfig(t)
	c.Workload.Input, _ = workload.NewLengthSampler(workload.LengthSpec{Type: workload.LengthFixed, Value: 1000}, "in", nil)
	c.SLA = &SLA{TTFTMS: map[string]float64{"p99": 1000}, TPOTMS: map[string]float64{"p99": 100}}
	rep, err := Run(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Requests.Rejected != 100 || rep.SLA.Met {
		t.Fatalf("rejected %d, SLA met %v: want all rejected, SLA missed", rep.Requests.Rejected, rep.SLA.Met)
	}
	for _, ck := range rep.SLA.Checks {
		if ck.Met || !strings.Contains(ck.Reason, "no request completed") {
			t.Errorf("check %+v: want missed, the reason saying no request completed", ck)
		}
	}
}

// TestSLACountsUnservedRequests: rejected requests count as missing
// every bound: with half of them rejected the p50 falls on a rejection.
func TestSLACountsUnservedRequests(t *testing.T) {
	c := handConfig(t, nil, handSetup{})
	var reqs []handReq
	for i := range 10 {
		in := 10
		if i%2 == 1 {
			in = 300 // past max_model_len 256: rejected
		}
		reqs = append(reqs, handReq{at: 4 * i, in: in, out: 2})
	}
	c = handConfig(t, reqs, handSetup{})
	c.SLA = &SLA{TTFTMS: map[string]float64{"p50": 1e6, "p90": 1e6}, E2EMS: map[string]float64{"max": 1e6}}
	_, _, rep := handRun(t, c)
	if rep.Requests.Rejected != 5 || rep.Requests.Completed != 5 {
		t.Fatalf("requests %+v, want 5 completed and 5 rejected", rep.Requests)
	}
	if rep.SLA.Met {
		t.Fatalf("SLA met with half the requests rejected: %+v", rep.SLA)
	}
	for _, ck := range rep.SLA.Checks {
		if ck.Met || !strings.Contains(ck.Reason, "5 of 10 requests never completed") {
			t.Errorf("check %+v: want missed for the rejected requests", ck)
		}
	}
}

// TestUnservedQuantile: the quantile over the values and the unserved
// requests (past every bound), as numpy's interpolation over all of them.
func TestUnservedQuantile(t *testing.T) {
	vals := []float64{10, 20, 30}
	at := func(q float64) float64 { return quantileOf(vals, q) }
	for _, tt := range []struct {
		q    string
		n, u int64
		want float64
		ok   bool
	}{
		{"p50", 3, 0, 20, true},
		{"p50", 3, 1, 25, true},   // [10 20 30 ∞]: rank 1.5
		{"p90", 3, 1, 0, false},   // rank 2.7 falls between 30 and ∞
		{"p50", 3, 3, 0, false},   // rank 2.5
		{"p99", 100, 2, 0, false}, // rank 99.99 of 102: between the last value and a rejection
		{"mean", 3, 1, 0, false},
		{"max", 3, 1, 0, false},
		{"p50", 0, 1, 0, false},
	} {
		got, ok := unservedQuantile(tt.q, tt.n, tt.u, at)
		if ok != tt.ok || (ok && math.Abs(got-tt.want) > 1e-12) {
			t.Errorf("unservedQuantile(%s, %d, %d) = %g, %v; want %g, %v", tt.q, tt.n, tt.u, got, ok, tt.want, tt.ok)
		}
	}
}

// quantileOf is numpy's linear interpolation on sorted xs.
func quantileOf(xs []float64, q float64) float64 {
	pos := q * float64(len(xs)-1)
	lo := int(math.Floor(pos))
	hi := min(lo+1, len(xs)-1)
	return xs[lo] + (xs[hi]-xs[lo])*(pos-float64(lo))
}

// TestStageWithoutRequestsMissesItsSLA: a stage in which nothing arrives
// has nothing to hold its SLA to.
func TestStageWithoutRequestsMissesItsSLA(t *testing.T) {
	c := openConfig(t)
	c.Workload.Requests = 0
	c.Workload.Stages = []workload.StageSpec{{DurationS: 1e-9, RateRPS: 1e-3}}
	c.SLA = &SLA{TTFTMS: map[string]float64{"p99": 1000}}
	rep, err := Run(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Requests.Total != 0 || rep.SLA.Met || rep.Stages[0].SLA.Met {
		t.Fatalf("requests %+v, SLA %+v, stage SLA %+v: want no requests and the SLA missed", rep.Requests, rep.SLA, rep.Stages[0].SLA)
	}
	if r := rep.SLA.Checks[0].Reason; !strings.Contains(r, "no request was sent") {
		t.Errorf("reason %q", r)
	}
}
