package sim

import (
	"context"
	"fmt"
	"math/rand/v2"
	"reflect"
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
	n := 16
	if testing.Short() {
		n = 5
	}
	cases := map[string]func(*testing.T, uint64) Config{
		"engine": randomConfig, "disagg": randomDisaggConfig, "speculative": specRandomConfig,
		"trace": randomTraceConfig,
	}
	for name, gen := range cases {
		for seed := uint64(1); seed <= uint64(n); seed++ {
			t.Run(fmt.Sprint(name, "/", seed), func(t *testing.T) {
				cfg := gen(t, seed)
				lazy, kl := runRegistration(t, cfg, false)
				eager, ke := runRegistration(t, cfg, true)
				if kl != ke {
					t.Fatalf("prefix cache: late %+v, eager %+v", kl, ke)
				}
				if !reflect.DeepEqual(lazy, eager) {
					t.Fatalf("reports differ:\nlate  %+v\neager %+v", lazy, eager)
				}
			})
		}
	}
}

// cacheCounts sums the replicas' prefix-cache counters.
type cacheCounts struct{ hit, query, preemptions int64 }

func runRegistration(t *testing.T, cfg Config, eager bool) (*Report, cacheCounts) {
	t.Helper()
	s, err := newSimulator(&cfg)
	if err != nil {
		t.Fatal(err)
	}
	s.d.eagerBlocks = eager
	rep, err := s.run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var k cacheCounts
	for _, rp := range s.replicas {
		k.hit += rp.kv.hitTokens
		k.query += rp.kv.queryTokens
		k.preemptions += int64(rp.preemptions)
	}
	return rep, k
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
