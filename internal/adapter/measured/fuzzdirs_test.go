package measured

import (
	"math"
	"testing"
	"testing/fstest"
)

// FuzzManifests: a server's manifests.yaml (read beside inference-perf
// results) never panics the reader, and what it reads is in range.
func FuzzManifests(f *testing.F) {
	f.Add(mustRead(f, projectData+"/inference-perf/vllm+v0_engine/manifests.yaml"))
	f.Add([]byte("kind: Deployment\nspec:\n  template:\n    spec:\n      containers:\n      - image: vllm/vllm-openai:v0.11.0\n        args: [\"--speculative_config\", '{\"method\": \"eagle3\", \"num_speculative_tokens\": 4}', \"--quantization bitsandbytes\"]\n"))
	f.Add([]byte("kind: Deployment\nspec:\n  template:\n    spec:\n      containers:\n      - command: [vllm, serve, $(M)]\n        env: [{name: M, value: org/model}]\n        args: [--tensor-parallel-size, '2', --no-enable-prefix-caching]\n"))
	f.Fuzz(func(t *testing.T, doc []byte) {
		run := &Run{}
		if err := readManifests(doc, "manifests.yaml", run); err != nil {
			return
		}
		e := run.Engine
		if run.TP < 0 || run.TP > 1<<24 || e.MaxNumSeqs < 0 || e.MaxModelLen < 0 || (e.Speculative != nil && (e.Speculative.NumSpeculativeTokens < 1 || e.Speculative.NumSpeculativeTokens > 64)) {
			t.Fatalf("run %+v", run)
		}
		Describe(run)
	})
}

// FuzzBlisTraceDir: a trace v3 folder (header, requests, chunks, server
// config) never panics the reader; what it reads keeps Import's promises.
func FuzzBlisTraceDir(f *testing.F) {
	yml := mustRead(f, "testdata/blis-trace/run/trace.yaml")
	trace := mustRead(f, "testdata/blis-trace/run/trace.csv")
	itl := mustRead(f, "testdata/blis-trace/run/trace.itl.csv")
	cfg := mustRead(f, "testdata/blis-trace/server_config.json")
	f.Add(yml, trace, itl, cfg)
	f.Add([]byte("trace_version: 3\ntime_unit: ms\n"), []byte("request_id,send_time_us,first_chunk_time_us,last_chunk_time_us,output_tokens,arrival_time_us\n1,5,6,9,3,0\n"),
		[]byte("request_id,chunk_index,timestamp_us\n1,0,6\n1,1,9\n1,7,1e300\n"), []byte(`{"max_seq_len": -1}`))
	f.Fuzz(func(t *testing.T, y, tr, chunks, sc []byte) {
		fsys := fstest.MapFS{"r/run/trace.yaml": {Data: y}, "r/run/trace.csv": {Data: tr}, "r/run/trace.itl.csv": {Data: chunks}, "r/server_config.json": {Data: sc}}
		run, err := LoadDir(fsys, "r/run")
		if err != nil {
			return
		}
		for i, q := range run.Requests {
			if math.IsNaN(q.SendS) || q.SendS < 0 || q.DelayS < 0 || (q.Error == "" && (math.IsNaN(q.TTFTS) || q.TTFTS < 0 || q.E2ES < q.TTFTS)) {
				t.Fatalf("request %d: %+v", i, q)
			}
			for _, c := range q.ChunkTimesS {
				if math.IsNaN(c) || c < q.TTFTS {
					t.Fatalf("request %d: chunk at %v before its TTFT %v", i, c, q.TTFTS)
				}
			}
		}
		Describe(run)
	})
}
