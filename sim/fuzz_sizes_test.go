package sim

import (
	"context"
	"errors"
	"math"
	"testing"
	"time"

	"github.com/headroom-sim/headroom/hardware"
	"github.com/headroom-sim/headroom/sim/engine"
	"github.com/headroom-sim/headroom/sim/workload"
)

// FuzzRunHostileSizes drives Run with hostile sizes (users, KV blocks and
// their bytes, block sizes, model dimensions, scheduler limits, lengths,
// a KV link's bandwidth) under a cap of 3 GiB of address space beyond what
// the test maps: every input is refused as the input's fault (a
// *hardware.FieldError, or a run past its event or time limits) or runs
// and accounts for every request; a crash (an allocation past the cap, a
// panic) fails, and so does a simulator fault.
func FuzzRunHostileSizes(f *testing.F) {
	// mode: 0 open loop, 1 closed loop, 2 a stage of users, 3 disaggregated.
	f.Add(uint8(1), int64(1)<<62, int64(1000), 0.0, false, uint8(2), int32(32), int32(4096), int32(32), uint16(20), uint32(128), uint32(16), int64(64), int64(2048), 1.0)                // 4.6e18 users
	f.Add(uint8(1), int64(1_000_000_000), int64(1000), 0.0, false, uint8(2), int32(32), int32(4096), int32(32), uint16(200), uint32(128), uint32(16), int64(64), int64(2048), 1.0)       // 1e9 users
	f.Add(uint8(2), int64(1)<<40, int64(1000), 0.0, false, uint8(2), int32(32), int32(4096), int32(32), uint16(0), uint32(128), uint32(16), int64(64), int64(2048), 1.0)                 // a stage of 1e12 users
	f.Add(uint8(0), int64(1), int64(2_000_000_000), float64(2<<20), true, uint8(2), int32(32), int32(4096), int32(32), uint16(20), uint32(128), uint32(16), int64(64), int64(2048), 1.0) // 2e9 blocks of 2 MiB
	f.Add(uint8(0), int64(1), int64(5_386_075_574), 32.0, false, uint8(0), int32(1), int32(8), int32(1), uint16(20), uint32(16), uint32(4), int64(64), int64(2048), 1.0)                 // the tiny model on a B200
	f.Add(uint8(0), int64(1), int64(149_000_000), 64.0, false, uint8(2), int32(1), int32(8), int32(1), uint16(20), uint32(64), uint32(8), int64(64), int64(2048), 1.0)                   // 149M blocks, 20 requests
	f.Add(uint8(0), int64(1), int64(1000), 0.0, false, uint8(2), int32(1_000_000_000), int32(4096), int32(32), uint16(5), uint32(128), uint32(16), int64(64), int64(2048), 1.0)          // 1e9 layers
	f.Add(uint8(0), int64(1), int64(1000), 0.0, false, uint8(3), int32(32), int32(4096), int32(32), uint16(5), uint32(128), uint32(16), int64(1)<<40, int64(1)<<50, 1.0)                 // huge scheduler limits
	f.Add(uint8(0), int64(1), int64(1000), 0.0, false, uint8(2), int32(32), int32(4096), int32(32), uint16(5), uint32(4_000_000_000), uint32(16), int64(64), int64(2048), 1.0)           // 4e9-token prompts
	f.Add(uint8(3), int64(1), int64(1000), 1e6, false, uint8(2), int32(32), int32(4096), int32(32), uint16(5), uint32(128), uint32(16), int64(64), int64(2048), 1e-12)                   // a link of 1e-12 GB/s
	f.Add(uint8(3), int64(1), int64(1000), 1e6, false, uint8(2), int32(32), int32(4096), int32(32), uint16(5), uint32(128), uint32(16), int64(64), int64(2048), 1e-300)                  // 1e-300 GB/s
	f.Fuzz(func(t *testing.T, mode uint8, users, blocks int64, blockBytes float64, override bool, bs uint8,
		layers, hidden, heads int32, requests uint16, in, out uint32, seqs, batched int64, gbps float64) {
		restore := capMemory(t, 3<<30)
		defer restore()
		cfg := hostileConfig(t, mode, users, blocks, blockBytes, override, bs, layers, hidden, heads, requests, in, out, seqs, batched, gbps)
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		rep, err := Run(ctx, cfg)
		var fe *hardware.FieldError
		switch {
		case err == nil:
			if rc := rep.Requests; rc.Total != rc.Completed+rc.Rejected+rc.Unfinished {
				t.Fatalf("requests %+v do not add up", rc)
			}
		case errors.Is(err, ErrInternal):
			t.Fatalf("a simulator fault: %v", err)
		case errors.As(err, &fe), errors.Is(err, ErrEventLimit), errors.Is(err, ErrTooLong), errors.Is(err, context.DeadlineExceeded):
		default:
			t.Fatalf("an error that is neither the input's nor a limit: %v", err)
		}
	})
}

// hostileConfig is the small open-loop run of openConfig with the fuzzed
// sizes put in.
func hostileConfig(t *testing.T, mode uint8, users, blocks int64, blockBytes float64, override bool, bs uint8,
	layers, hidden, heads int32, requests uint16, in, out uint32, seqs, batched int64, gbps float64) Config {
	c := openConfig(t)
	if mode%4 == 3 {
		c = handPD(t, []handReq{{in: 10, out: 2}}, 1000, 1000, false)
		c.Disagg.Link.BandwidthGBps = gbps
		c.Disagg.Prefill.NumGPUBlocks = int(min(max(blocks, 0), math.MaxInt))
	}
	m := *c.Model
	m.NumLayers, m.HiddenSize, m.NumHeads = int(layers), int(hidden), int(heads)
	m.NumKVHeads = max(min(m.NumKVHeads, m.NumHeads), 1)
	if m.NumHeads > 0 && m.NumHeads%m.NumKVHeads != 0 {
		m.NumKVHeads = 1
	}
	c.Model = &m
	c.NumGPUBlocks, c.BlockBytes = int(blocks), blockBytes
	if override {
		c.Engine.NumGPUBlocksOverride = int(blocks)
	}
	if sizes := engine.BlockSizes; int(bs) < 2*len(sizes) {
		c.Engine.BlockSize = sizes[int(bs)%len(sizes)]
	} else {
		c.Engine.BlockSize = int(bs)
	}
	c.Engine.MaxNumSeqs, c.Engine.MaxNumBatchedTokens = int(seqs), int(batched)
	c.MaxEvents = 500_000
	w := &c.Workload
	if w.Trace == nil {
		w.Requests = int(requests % 64)
		w.Input, _ = workload.NewLengthSampler(workload.LengthSpec{Type: workload.LengthFixed, Value: int(min(max(in, 1), workload.MaxTokens))}, "in", nil)
		w.Output, _ = workload.NewLengthSampler(workload.LengthSpec{Type: workload.LengthFixed, Value: int(min(max(out, 1), workload.MaxTokens))}, "out", nil)
	}
	switch mode % 4 {
	case 1:
		w.Arrival = workload.ArrivalSpec{Type: workload.ArrivalClosedLoop, Concurrency: int(min(max(users, 0), math.MaxInt))}
	case 2:
		w.Requests = 0
		w.Stages = []workload.StageSpec{{DurationS: 2, Concurrency: int(min(max(users, 0), math.MaxInt))}}
	}
	return c
}
