package sim

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/headroom-sim/headroom/catalogs"
	"github.com/headroom-sim/headroom/sim/engine"
	"github.com/headroom-sim/headroom/sim/steptime"
)

// randomDisaggConfig is randomConfig split into pools: the decode pool is
// randomConfig's cluster, the prefill pool a random other one (its own GPU,
// blocks, block size and engine flags), over a random link, read after
// the prefill or pushed layer by layer.
func randomDisaggConfig(t *testing.T, seed uint64) Config {
	t.Helper()
	cfg := randomConfig(t, seed)
	r := rand.New(rand.NewPCG(seed, 7))
	cat, err := catalogs.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	g, _ := cat.GPU([]string{"h100-sxm", "h200", "a100-80gb"}[r.IntN(3)])
	e := engine.Defaults()
	e.MaxNumSeqs = 2 + r.IntN(32)
	e.MaxNumBatchedTokens = max(e.MaxNumSeqs, []int{64, 512, 4096}[r.IntN(3)])
	e.MaxModelLen = 4096
	e.EnablePrefixCaching = r.IntN(2) == 0
	e.BlockSize = []int{16, 32}[r.IntN(2)]
	e.AsyncScheduling = r.IntN(2) == 0
	if r.IntN(4) == 0 {
		e.PreemptionMode = engine.PreemptSwap
	}
	e.EnableChunkedPrefill = r.IntN(4) != 0
	if !e.EnableChunkedPrefill {
		e.MaxNumBatchedTokens = e.MaxModelLen
	}
	if e, err = e.Resolve(cfg.Model, g); err != nil {
		t.Fatal(err)
	}
	p := Pool{GPU: g, TP: 1, Replicas: 1 + r.IntN(3), Router: []string{RouterRoundRobin, RouterLeastOutstanding, RouterLeastKV}[r.IntN(3)],
		Engine: e, NumGPUBlocks: 200 + r.IntN(2000), BlockBytes: float64(1<<20) * float64(e.BlockSize) / 16, Profile: steptime.DefaultProfile(g)}
	if cfg.BlockUnits != nil {
		m, bs := cfg.Model, e.BlockSize
		p.BlockUnits = func(n int) int { return blocksForTokens(m, bs, n) }
	}
	cfg.Disagg = &Disaggregation{Prefill: p, Layerwise: r.IntN(2) == 0,
		Link: KVLink{Name: "random", BandwidthGBps: []float64{0.5, 34, 360}[r.IntN(3)], LatencyUS: float64(r.IntN(50))}}
	return cfg
}

func TestDisaggInvariantsOnRandomWorkloads(t *testing.T) {
	n := 40
	if testing.Short() {
		n = 10
	}
	for seed := uint64(1); seed <= uint64(n); seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			cfg := randomDisaggConfig(t, seed)
			s, err := newSimulator(&cfg)
			if err != nil {
				t.Fatal(err)
			}
			decodeRanks := int32(0)
			for _, in := range s.pd.decode.insts {
				decodeRanks += int32(len(in.ranks))
			}
			handoffs := map[int64]int{}
			ended := map[int64]int{}
			s.pd.onHandOff = func(r *request) {
				handoffs[r.serial]++
				if r.place < decodeRanks {
					t.Fatalf("request %d handed off from decode rank %d", r.serial, r.place)
				}
			}
			s.onStep = func(rp *rank, now Time) {
				kv := rp.kv
				if ref := kv.referenced(); ref+kv.numFree != kv.total {
					t.Fatalf("t=%d: rank %d: referenced %d + free %d != total %d", now, rp.id, ref, kv.numFree, kv.total)
				}
				if len(rp.running) > rp.eng.MaxNumSeqs {
					t.Fatalf("t=%d: rank %d runs %d, above max_num_seqs %d", now, rp.id, len(rp.running), rp.eng.MaxNumSeqs)
				}
				for _, sc := range rp.sched {
					if rp.inst.pd.prefill && !sc.prefill {
						t.Fatalf("t=%d: prefill rank %d decodes request %d", now, rp.id, sc.r.serial)
					}
				}
			}
			s.onEnd = func(r *request, now Time, ok bool) {
				ended[r.serial]++
				if !ok {
					return
				}
				if handoffs[r.serial] != 1 {
					t.Fatalf("request %d completed after %d prefill hand-offs", r.serial, handoffs[r.serial])
				}
				if r.place >= decodeRanks {
					t.Fatalf("request %d completed on prefill rank %d", r.serial, r.place)
				}
				ps := r.pd
				if !(r.sent <= r.arrival && r.arrival <= r.scheduled && r.scheduled <= ps.prefillEnd &&
					ps.prefillEnd <= ps.admitted && ps.prefillEnd <= ps.kvDone && max(ps.admitted, ps.kvDone) <= r.firstToken && r.firstToken <= r.lastToken) {
					t.Fatalf("request %d: milestones out of order: sent %d arrival %d scheduled %d prefill end %d admitted %d kv %d first %d end %d",
						r.serial, r.sent, r.arrival, r.scheduled, ps.prefillEnd, ps.admitted, ps.kvDone, r.firstToken, now)
				}
				if r.generated != r.output || ps.held != nil {
					t.Fatalf("request %d: %d of %d tokens, prefill blocks held: %v", r.serial, r.generated, r.output, ps.held != nil)
				}
			}
			if err := s.loop(context.Background()); err != nil {
				t.Fatal(err)
			}
			rep := s.report()
			if err := checkAccounting(rep.Requests); err != nil {
				t.Fatal(err)
			}
			if rep.Requests.Unfinished != 0 || len(ended) != s.d.created {
				t.Fatalf("%d ended of %d created, %d unfinished", len(ended), s.d.created, rep.Requests.Unfinished)
			}
			for serial, n := range ended {
				if n != 1 {
					t.Fatalf("request %d ended %d times", serial, n)
				}
			}
			for serial, n := range handoffs {
				if n != 1 {
					t.Fatalf("request %d handed off %d times", serial, n)
				}
			}
			// Blocks freed on both sides, nothing left anywhere.
			for _, rp := range s.ranks {
				rs := &s.pd.rank[rp.id]
				if rp.kv.numFree != rp.kv.total || rp.kv.referenced() != 0 || len(rp.running) != 0 || rp.waiting.len() != 0 ||
					rs.pending.len() != 0 || rs.awaiting != 0 || rp.swapUsed != 0 {
					t.Fatalf("rank %d ends with %d/%d free blocks, %d running, %d waiting, %d pending, %d awaiting KV, %d swapped",
						rp.id, rp.kv.numFree, rp.kv.total, len(rp.running), rp.waiting.len(), rs.pending.len(), rs.awaiting, rp.swapUsed)
				}
			}
			// TTFT's parts sum to it, request by request (so their means too).
			if c := rep.TTFTMS.Count; c > 0 {
				b := rep.Disaggregation.TTFTBreakdown
				sum := b.PrefillQueueMS.Mean + b.PrefillMS.Mean + b.KVAdmissionMS.Mean + b.KVTransferMS.Mean + b.FirstDecodeMS.Mean
				if math.Abs(sum-rep.TTFTMS.Mean) > 5e-4 || b.PrefillMS.Count != c {
					t.Fatalf("TTFT parts sum to %g ms over %d requests, TTFT mean %g over %d", sum, b.PrefillMS.Count, rep.TTFTMS.Mean, c)
				}
			}
		})
	}
}

func TestDisaggSameSeedSameReport(t *testing.T) {
	for seed := uint64(1); seed <= 6; seed++ {
		a, err := Run(context.Background(), randomDisaggConfig(t, seed))
		if err != nil {
			t.Fatal(err)
		}
		b, err := Run(context.Background(), randomDisaggConfig(t, seed))
		if err != nil {
			t.Fatal(err)
		}
		ja, _ := json.Marshal(a)
		jb, _ := json.Marshal(b)
		if !bytes.Equal(ja, jb) {
			t.Fatalf("seed %d: two runs differ", seed)
		}
		if a.Disaggregation == nil {
			t.Fatalf("seed %d: no disaggregation section", seed)
		}
	}
}
