package sim_test

import (
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/headroom-sim/headroom/internal/testkit/golden"
)

// underPressure is a run that exercises the KV-cache mechanisms the
// Poisson golden does not: a cache of 400 blocks (6,400 tokens) for up to
// 64 sequences forces preemptions (by swap, into 1 GiB of CPU memory),
// and four shared 512-token system prompts and two-turn conversations
// give prefix-cache hits.
const underPressure = `
model: llama-3.1-8b
gpu: h100-sxm
engine:
  num_gpu_blocks_override: 400
  max_num_seqs: 64
  max_model_len: 4096
  preemption_mode: swap
  swap_space_gib: 1
workload:
  requests: 200
  seed: 7
  arrival: {type: poisson, rate_rps: 20}
  input_tokens: {type: uniform, min: 100, max: 600}
  output_tokens: {type: uniform, min: 50, max: 400}
  shared_prefix: {groups: 4, prefix_tokens: 512}
  multi_turn: {turns: 2, think_time_ms: 300}
`

// TestPressureGolden pins the report of underPressure (rerun with -update
// and review the diff when the simulator's behaviour changes).
func TestPressureGolden(t *testing.T) {
	rep := simulate(t, underPressure)
	checkReportInvariants(t, rep)
	if rep.Preemptions == 0 || rep.PrefixCacheHitRatio == 0 || rep.Requests.Completed != 200 {
		t.Fatalf("preemptions %d, prefix-cache hit ratio %v, requests %+v: the run no longer exercises what it is for",
			rep.Preemptions, rep.PrefixCacheHitRatio, rep.Requests)
	}
	got, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	golden.Check(t, filepath.Join("testdata", "golden", "pressure-200.json"), append(got, '\n'), *update)
}
