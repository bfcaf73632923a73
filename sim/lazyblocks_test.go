package sim

import (
	"math/rand/v2"
	"testing"

	"github.com/headroom-sim/headroom/sim/workload"
)

// Registering a request's private blocks only when it gives them up
// unfinished (request.lazy, kvCache.registerPrivate) must change nothing:
// the same reports, prefix-cache counters and preemptions as registering
// every block when it fills, on random engines (preemption by recompute and
// swap, V0 and V1, shared prefixes, multi-turn sessions), disaggregated
// pools, speculative decoding and traces whose records share blocks.
func TestLateRegistrationChangesNothing(t *testing.T) {
	gens := map[string]configGen{
		"engine": randomConfig, "disagg": randomDisaggConfig, "speculative": specRandomConfig,
		"trace": randomTraceConfig,
	}
	forSeeds(t, 16, 5, gens, func(t *testing.T, _ uint64, cfg Config) {
		late, rl := runWith(t, cfg, nil)
		eager, re := runWith(t, cfg, func(s *Simulator) { s.d.eagerBlocks = true })
		if kl, ke := cacheCountsOf(late), cacheCountsOf(eager); kl != ke {
			t.Fatalf("prefix cache: late %+v, eager %+v", kl, ke)
		}
		sameReports(t, rl, re)
	})
}

// cacheCounts sums the replicas' prefix-cache counters.
type cacheCounts struct{ hit, query, preemptions int64 }

func cacheCountsOf(s *Simulator) cacheCounts {
	var k cacheCounts
	for _, rp := range s.ranks {
		k.hit += rp.kv.hitTokens
		k.query += rp.kv.queryTokens
		k.preemptions += int64(rp.preemptions)
	}
	return k
}

// randomTraceConfig is randomConfig driven by a trace whose records share
// leading blocks (Mooncake-style hash ids) and end in text of their own.
func randomTraceConfig(t *testing.T, seed uint64) Config {
	cfg := randomConfig(t, seed)
	r := rand.New(rand.NewPCG(seed, 7))
	trace := make([]workload.TraceRecord, 80+r.IntN(200))
	at := 0.0
	for i := range trace {
		at += r.ExpFloat64() / 20
		in := 1 + r.IntN(1200)
		var ids []int64
		for k := 0; k < r.IntN(in/16+1); k++ {
			ids = append(ids, int64(k*7+r.IntN(3)))
		}
		trace[i] = workload.TraceRecord{ArrivalS: at, InputTokens: in, OutputTokens: 1 + r.IntN(300), HashIDs: ids}
	}
	cfg.Workload = Workload{Trace: trace, TraceHashTokens: 16}
	return cfg
}
