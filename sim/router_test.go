package sim

import (
	"slices"
	"testing"

	"github.com/headroom-sim/headroom/sim/engine"
)

// TestRouters: the same four requests on two replicas under each router.
// Request 0 (160 prompt tokens, 30 output) and 1 (16, 1 output) arrive at
// tick 0, requests 2 and 3 (16, 10 output) together at tick 5, when
// request 0 still runs on its replica and 1 is done.
//
//   - round_robin ignores load: 0 1 0 1.
//   - least_outstanding counts queued and running requests: at tick 0
//     request 1 avoids replica 0, which queues request 0; at tick 5
//     request 2 takes the idle replica 1, and request 3 finds one request
//     on each and takes the first: 0 1 1 0.
//   - least_kv compares KV usage first: at tick 5 replica 0 holds request
//     0's 11 blocks, replica 1 none (request 2 is queued there but holds no
//     block until the replica schedules it, after every arrival of the
//     instant): 0 1 1 1. At tick 0 both are empty and the request count
//     breaks the tie, as for least_outstanding.
func TestRouters(t *testing.T) {
	reqs := []handReq{{at: 0, in: 160, out: 30}, {at: 0, in: 16, out: 1}, {at: 5, in: 16, out: 10}, {at: 5, in: 16, out: 10}}
	for _, c := range []struct {
		router string
		want   []int32
	}{
		{RouterRoundRobin, []int32{0, 1, 0, 1}},
		{RouterLeastOutstanding, []int32{0, 1, 1, 0}},
		{RouterLeastKV, []int32{0, 1, 1, 1}},
	} {
		t.Run(c.router, func(t *testing.T) {
			cfg := handConfig(t, reqs, handSetup{replicas: 2, router: c.router, engine: func(e *engine.Config) { e.MaxNumBatchedTokens = 256 }})
			_, log, _ := handRun(t, cfg)
			got := make([]int32, len(reqs))
			for i := range reqs {
				got[i] = log.ends[int64(i)].replica
			}
			if !slices.Equal(got, c.want) {
				t.Errorf("replicas %v, want %v", got, c.want)
			}
		})
	}
}
