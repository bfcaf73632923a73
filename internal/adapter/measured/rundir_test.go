package measured

import (
	"bufio"
	"encoding/json"
	"hash/fnv"
	"io/fs"
	"os"
	"slices"
	"strings"
	"testing"
	"testing/fstest"
)

// sharedRunDir is the reference data as a file system, skipping the test
// when dir (a run directory under it) is absent.
func sharedRunDir(t *testing.T, dir string) fs.FS {
	t.Helper()
	if _, err := os.Stat(sharedData + "/" + dir); err != nil {
		t.Skipf("reference data not present: %s", dir)
	}
	return os.DirFS(sharedData)
}

func TestLoadLLMServingSimRTX4090(t *testing.T) {
	const dir = "llmservingsim/RTX4090_Llama-3.1-8B"
	fsys := sharedRunDir(t, dir)
	run, err := LoadLLMServingSim(fsys, dir)
	if err != nil {
		t.Fatal(err)
	}
	if run.Name != "RTX4090_Llama-3.1-8B" || run.Format != "llmservingsim" || run.Model != "meta-llama/Llama-3.1-8B" || run.EngineVersion != "0.19.0" {
		t.Errorf("name %q format %q model %q version %q", run.Name, run.Format, run.Model, run.EngineVersion)
	}
	if len(run.Requests) != 300 || run.LoggedBlocks != 2588 {
		t.Errorf("%d requests, %d logged blocks; want 300 and 2588", len(run.Requests), run.LoggedBlocks)
	}
	// meta.json's hardware section names the GPU.
	if run.GPU != "NVIDIA GeForce RTX 4090" || run.GPUMemoryBytes != 25250627584 || !strings.Contains(run.GPUNote, "meta.json") {
		t.Errorf("gpu %q (%d bytes, %q)", run.GPU, run.GPUMemoryBytes, run.GPUNote)
	}
	if run.TP != 1 || run.DP != 1 || run.ExpertParallel || !run.ServerSide {
		t.Errorf("tp %d dp %d ep %v server-side %v", run.TP, run.DP, run.ExpertParallel, run.ServerSide)
	}
	e := run.Engine
	if e.MaxNumSeqs != 256 || e.MaxNumBatchedTokens != 2048 || e.MaxModelLen != 32768 || e.BlockSize != 16 || e.GPUMemoryUtilization != 0.9 {
		t.Errorf("engine %+v", e)
	}
	if e.DType != "bfloat16" || e.KVCacheDType != "auto" {
		t.Errorf("dtypes %q %q", e.DType, e.KVCacheDType)
	}
	for name, p := range map[string]*bool{"enable_prefix_caching": e.EnablePrefixCaching, "enable_chunked_prefill": e.EnableChunkedPrefill, "async_scheduling": e.AsyncScheduling} {
		if p == nil || !*p {
			t.Errorf("%s %v, want true (meta.json)", name, p)
		}
	}
	// Send times start at 0; the engine's clock gives the latencies.
	first := run.Requests[0].SendS
	for i, q := range run.Requests {
		first = min(first, q.SendS)
		if !q.OK() || q.TTFTS <= 0 || q.E2ES < q.TTFTS || q.SendS < 0 {
			t.Fatalf("request %d: %+v", i, q)
		}
	}
	if first != 0 {
		t.Errorf("first send at %v, want 0", first)
	}
	// The workload's prompt token ids are hashed per 16-token block.
	if run.HashTokens != 16 {
		t.Errorf("hash tokens %d, want 16", run.HashTokens)
	}
	ids := workloadTokenIDs(t, fsys, "llmservingsim/workloads/sharegpt-llama-3.1-8b-300-sps10.jsonl")
	for i, q := range run.Requests {
		if q.HashIDs == nil || len(q.HashIDs) != q.InputTokens/16 {
			t.Fatalf("request %d: %d hash ids for %d input tokens", i, len(q.HashIDs), q.InputTokens)
		}
		for k, h := range q.HashIDs {
			if want := fnvBlock(ids[i][16*k : 16*k+16]); h != want {
				t.Fatalf("request %d block %d: hash %d, FNV-1a of its token ids %d", i, k, h, want)
			}
		}
	}
}

// fnvBlock is FNV-1a over the little-endian 8-byte token ids, halved to
// stay non-negative.
func fnvBlock(ids []int64) int64 {
	h := fnv.New64a()
	for _, id := range ids {
		var b [8]byte
		for k := range b {
			b[k] = byte(id >> (8 * k))
		}
		h.Write(b[:])
	}
	return int64(h.Sum64() >> 1)
}

func workloadTokenIDs(t *testing.T, fsys fs.FS, name string) [][]int64 {
	t.Helper()
	f, err := fsys.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out [][]int64
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		var w struct {
			IDs []int64 `json:"input_tok_ids"`
		}
		if err := json.Unmarshal(sc.Bytes(), &w); err != nil {
			t.Fatal(err)
		}
		out = append(out, w.IDs)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestLoadLLMServingSimQwenMoE(t *testing.T) {
	const dir = "llmservingsim/RTXPRO6000_Qwen3-30B-A3B-Instruct-2507"
	run, err := LoadLLMServingSim(sharedRunDir(t, dir), dir)
	if err != nil {
		t.Fatal(err)
	}
	if run.TP != 1 || run.DP != 2 || !run.ExpertParallel {
		t.Errorf("tp %d dp %d ep %v; want 1, 2, true", run.TP, run.DP, run.ExpertParallel)
	}
	// No hardware section in meta.json: config.json names the GPU.
	if run.GPU != "RTXPRO6000" || !strings.Contains(run.GPUNote, "config.json") {
		t.Errorf("gpu %q (%s)", run.GPU, run.GPUNote)
	}
	if len(run.Requests) != 300 || run.LoggedBlocks != 0 || run.Engine.MaxNumSeqs != 128 || run.Engine.MaxModelLen != 0 {
		t.Errorf("%d requests, %d blocks, engine %+v", len(run.Requests), run.LoggedBlocks, run.Engine)
	}
}

// llmsFS is a minimal LLMServingSim run directory.
func llmsFS(meta, requests string, extra fstest.MapFS) fstest.MapFS {
	fsys := fstest.MapFS{
		"runs/r/meta.json":      {Data: []byte(meta)},
		"runs/r/requests.jsonl": {Data: []byte(requests)},
	}
	for k, v := range extra {
		fsys[k] = v
	}
	return fsys
}

const llmsLine = `{"request_id": "a", "input_toks": 32, "output_toks": 4, "arrival_time": 100.5, "queued_ts": 10, "scheduled_ts": 10, "first_token_ts": 10.25, "last_token_ts": 11}` + "\n"

func TestLoadLLMServingSimFiles(t *testing.T) {
	ids := func(n int) string {
		s := make([]string, n)
		for i := range s {
			s[i] = "7"
		}
		// A line of LLMServingSim's workload JSONL, as simulate reads it.
		return `{"output_toks": 4, "arrival_time_ns": 0, "input_tok_ids": [` + strings.Join(s, ",") + `]}` + "\n"
	}
	t.Run("minimal", func(t *testing.T) {
		run, err := LoadLLMServingSim(llmsFS(`{"model": "m"}`, llmsLine+strings.Replace(llmsLine, "100.5", "101", 1), nil), "runs/r")
		if err != nil {
			t.Fatal(err)
		}
		q := run.Requests
		if len(q) != 2 || q[0].SendS != 0 || q[1].SendS != 0.5 || q[0].TTFTS != 0.25 || q[0].E2ES != 1 || run.TP != 1 || run.DP != 1 || run.GPU != "" {
			t.Errorf("run %+v", run)
		}
		if q[0].HashIDs != nil {
			t.Error("hash ids without a workload file")
		}
	})
	t.Run("config.json names the gpu", func(t *testing.T) {
		run, err := LoadLLMServingSim(llmsFS(`{"model": "m"}`, llmsLine, fstest.MapFS{
			"runs/r/config.json": {Data: []byte(`{"nodes": [{"instances": [{"hardware": "A6000"}]}]}`)},
		}), "runs/r")
		if err != nil || run.GPU != "A6000" {
			t.Errorf("gpu %q, %v", run.GPU, err)
		}
	})
	t.Run("workload token ids", func(t *testing.T) {
		meta := `{"model": "m", "dataset_path": "somewhere/w.jsonl"}`
		run, err := LoadLLMServingSim(llmsFS(meta, llmsLine+llmsLine, fstest.MapFS{
			// The first prompt has its 32 ids, the second a different count
			// (then its ids are not trusted).
			"runs/workloads/w.jsonl": {Data: []byte(ids(32) + ids(31))},
		}), "runs/r")
		if err != nil {
			t.Fatal(err)
		}
		if h := run.Requests[0].HashIDs; len(h) != 2 || h[0] != h[1] || h[0] != fnvBlock(slices.Repeat([]int64{7}, 16)) {
			t.Errorf("hash ids %v", h)
		}
		if run.Requests[1].HashIDs != nil {
			t.Errorf("hash ids %v from a prompt of the wrong length", run.Requests[1].HashIDs)
		}
	})
	for _, c := range []struct {
		name  string
		fsys  fstest.MapFS
		inErr string
	}{
		{"no meta.json", fstest.MapFS{"runs/r/requests.jsonl": {Data: []byte(llmsLine)}}, "meta.json"},
		{"bad meta.json", llmsFS(`{"model": `, llmsLine, nil), "runs/r/meta.json"},
		{"no requests.jsonl", fstest.MapFS{"runs/r/meta.json": {Data: []byte(`{}`)}}, "requests.jsonl"},
		{"a bad request line", llmsFS(`{}`, llmsLine+"{oops\n", nil), "runs/r/requests.jsonl (llmservingsim): record 2"},
		{"no requests", llmsFS(`{}`, "\n\n", nil), "no requests"},
		{"a bad workload line", llmsFS(`{"dataset_path": "w.jsonl"}`, llmsLine, fstest.MapFS{"runs/workloads/w.jsonl": {Data: []byte("nope\n")}}), "runs/workloads/w.jsonl:1"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := LoadLLMServingSim(c.fsys, "runs/r")
			if err == nil || !strings.Contains(err.Error(), c.inErr) {
				t.Errorf("error %v, want one mentioning %q", err, c.inErr)
			}
		})
	}
}

func TestLoadInferenceSimCodellamaPrefill(t *testing.T) {
	const dir = "inference-sim-eval-ground-truth/jan20-codellama-prefill-1"
	run, err := LoadInferenceSim(sharedRunDir(t, dir), dir)
	if err != nil {
		t.Fatal(err)
	}
	if run.Name != "jan20-codellama-prefill-1" || run.Format != "inference-sim" || run.Model != "codellama/CodeLlama-34b-Instruct-hf" || run.GPU != "h100-sxm" {
		t.Errorf("name %q format %q model %q gpu %q", run.Name, run.Format, run.Model, run.GPU)
	}
	if len(run.Requests) != 200 || run.LoggedBlocks != 2790 || run.EngineVersion != "0.11.0" || run.TP != 1 || run.DP != 1 {
		t.Errorf("%d requests, %d blocks, version %q, tp %d dp %d", len(run.Requests), run.LoggedBlocks, run.EngineVersion, run.TP, run.DP)
	}
	e := run.Engine
	if e.MaxModelLen != 8192 || e.MaxNumBatchedTokens != 64 || e.MaxNumSeqs != 32 || e.DType != "bfloat16" || e.KVCacheDType != "auto" {
		t.Errorf("engine %+v", e)
	}
	if e.AsyncScheduling == nil || *e.AsyncScheduling || e.EnablePrefixCaching == nil || !*e.EnablePrefixCaching || e.EnableChunkedPrefill == nil || !*e.EnableChunkedPrefill {
		t.Errorf("async %v prefix caching %v chunked %v; want false, true, true", e.AsyncScheduling, e.EnablePrefixCaching, e.EnableChunkedPrefill)
	}
	// profile.yaml: a 1024-token prefix shared by every prompt longer than it.
	if run.HashTokens != 1024 {
		t.Errorf("hash tokens %d, want 1024", run.HashTokens)
	}
	perStage := map[int]int{}
	for i, q := range run.Requests {
		if hashed := q.HashIDs != nil; hashed != (q.InputTokens > 1024) || (hashed && !slices.Equal(q.HashIDs, []int64{1})) {
			t.Errorf("request %d: %d input tokens, hash ids %v", i, q.InputTokens, q.HashIDs)
		}
		perStage[q.Stage]++
	}
	// guidellm_requests.csv: a sweep of 5 benchmarks of 40 requests.
	var strategies []string
	for i, st := range run.Stages {
		strategies = append(strategies, st.Strategy)
		if st.Index != i || perStage[i] != 40 {
			t.Errorf("stage %d: index %d, %d requests", i, st.Index, perStage[i])
		}
	}
	if want := []string{"synchronous", "throughput", "constant", "constant", "constant"}; !slices.Equal(strategies, want) {
		t.Errorf("strategies %v, want %v", strategies, want)
	}
	if len(run.Stages) == 5 && !(run.Stages[2].RateRPS > 0 && run.Stages[2].RateRPS < run.Stages[3].RateRPS && run.Stages[3].RateRPS < run.Stages[4].RateRPS) {
		t.Errorf("constant-rate stages %+v: want increasing rates", run.Stages[2:])
	}
}

func TestLoadInferenceSimTrainRun(t *testing.T) {
	const dir = "inference-sim-eval-ground-truth/jan21-llama7b-train-1"
	run, err := LoadInferenceSim(sharedRunDir(t, dir), dir)
	if err != nil {
		t.Fatal(err)
	}
	// No guidellm file: one benchmark. vLLM's log holds the settings.
	if len(run.Stages) != 0 || run.LoggedBlocks != 7438 || run.Model != "meta-llama/Llama-2-7b-hf" || run.Engine.DType != "float16" {
		t.Errorf("%d stages, %d blocks, model %q, dtype %q", len(run.Stages), run.LoggedBlocks, run.Model, run.Engine.DType)
	}
}

// isFS is a minimal inference-sim run directory.
func isFS(otel string, extra fstest.MapFS) fstest.MapFS {
	fsys := fstest.MapFS{
		"d/exp-config.yaml":   {Data: []byte("model: m\ntensor_parallelism: 2\nmax_model_len: 4096\nmax_num_batched_tokens: 512\nmax_num_seqs: 16\n")},
		"d/otel_requests.csv": {Data: []byte(otel)},
	}
	for k, v := range extra {
		fsys[k] = v
	}
	return fsys
}

const otelCSV = "start_ns,request_id,prompt_tokens,completion_tokens,ttft_s,e2e_s\n2000000000,a-0,100,5,0.1,0.5\n1000000000,b-0,2000,0,NaN,NaN\n"

func TestLoadInferenceSimFiles(t *testing.T) {
	t.Run("minimal", func(t *testing.T) {
		run, err := LoadInferenceSim(isFS(otelCSV, nil), "d")
		if err != nil {
			t.Fatal(err)
		}
		q := run.Requests
		if run.TP != 2 || run.Engine.MaxModelLen != 4096 || run.Engine.MaxNumBatchedTokens != 512 || run.Engine.MaxNumSeqs != 16 || len(q) != 2 {
			t.Fatalf("run %+v", run)
		}
		if q[0].SendS != 1 || q[1].SendS != 0 || q[0].TTFTS != 0.1 || q[1].Error == "" || q[1].OK() || run.HashTokens != 0 {
			t.Errorf("requests %+v", q)
		}
	})
	t.Run("the log's last start-up wins", func(t *testing.T) {
		log := "x vLLM API server version 0.10.0\nnum_gpu_blocks is: 100\ntensor_parallel_size=1\n" +
			"y vLLM API server version 0.11.2\nengine: dtype=torch.float16, max_seq_len=2048, enable_prefix_caching=False, chunked_prefill_enabled=True, kv_cache_dtype=fp8\n'max_num_batched_tokens': 1024, 'max_num_seqs': 8\nnum_gpu_blocks is: 300\n"
		run, err := LoadInferenceSim(isFS(otelCSV, fstest.MapFS{"d/vllm.log": {Data: []byte(log)}}), "d")
		if err != nil {
			t.Fatal(err)
		}
		e := run.Engine
		if run.EngineVersion != "0.11.2" || run.LoggedBlocks != 300 || run.TP != 2 || e.DType != "float16" || e.MaxModelLen != 2048 || e.KVCacheDType != "fp8" ||
			*e.EnablePrefixCaching || !*e.EnableChunkedPrefill || e.MaxNumBatchedTokens != 1024 || e.MaxNumSeqs != 8 {
			t.Errorf("run %+v, engine %+v", run, e)
		}
	})
	t.Run("a shared prefix", func(t *testing.T) {
		run, err := LoadInferenceSim(isFS(otelCSV, fstest.MapFS{"d/profile.yaml": {Data: []byte("data:\n  prefix_tokens: 1000\n")}}), "d")
		if err != nil {
			t.Fatal(err)
		}
		if run.HashTokens != 1000 || run.Requests[0].HashIDs != nil || !slices.Equal(run.Requests[1].HashIDs, []int64{1}) {
			t.Errorf("hash tokens %d, requests %+v", run.HashTokens, run.Requests)
		}
	})
	t.Run("guidellm stages joined by response id", func(t *testing.T) {
		g := "benchmark_index,strategy,rate,response_id\n0,synchronous,,a\n1,constant,2.5,b\n"
		run, err := LoadInferenceSim(isFS(otelCSV, fstest.MapFS{"d/guidellm_requests.csv": {Data: []byte(g)}}), "d")
		if err != nil {
			t.Fatal(err)
		}
		if len(run.Stages) != 2 || run.Stages[1].RateRPS != 2.5 || run.Requests[0].Stage != 0 || run.Requests[1].Stage != 1 {
			t.Errorf("stages %+v, requests %+v", run.Stages, run.Requests)
		}
	})
	for _, c := range []struct {
		name  string
		fsys  fstest.MapFS
		inErr string
	}{
		{"no exp-config.yaml", fstest.MapFS{"d/otel_requests.csv": {Data: []byte(otelCSV)}}, "exp-config.yaml"},
		{"no otel_requests.csv", fstest.MapFS{"d/exp-config.yaml": {Data: []byte("model: m\n")}}, "otel_requests.csv"},
		{"a missing column", isFS("start_ns,prompt_tokens,completion_tokens,ttft_s\n1,2,3,4\n", nil), "missing column e2e_s"},
		{"not a number", isFS("start_ns,prompt_tokens,completion_tokens,ttft_s,e2e_s\n1,2,x,4,5\n", nil), "d/otel_requests.csv:2: field completion_tokens"},
		{"no requests", isFS("start_ns,prompt_tokens,completion_tokens,ttft_s,e2e_s\n", nil), "no requests"},
		{"a bad profile", isFS(otelCSV, fstest.MapFS{"d/profile.yaml": {Data: []byte("data: [\n")}}), "d/profile.yaml"},
		{"a bad benchmark index", isFS(otelCSV, fstest.MapFS{"d/guidellm_requests.csv": {Data: []byte("benchmark_index,strategy,response_id\nx,constant,a\n")}}), "field benchmark_index"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := LoadInferenceSim(c.fsys, "d")
			if err == nil || !strings.Contains(err.Error(), c.inErr) {
				t.Errorf("error %v, want one mentioning %q", err, c.inErr)
			}
		})
	}
}
