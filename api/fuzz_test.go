package api

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"
)

// Fuzz the JSON bodies: whatever arrives, a handler answers a documented
// status with a JSON body (a problem for errors), never a 500 or a panic.

// slowAnswer bounds one answer: the synchronous limit of the simulate
// fuzzer plus slack. A slower answer spent its time where no limit applies.
const slowAnswer = 4 * time.Second

var allowed = map[int]bool{200: true, 201: true, 202: true, 400: true, 404: true, 409: true, 413: true, 422: true, 429: true}

func fuzzBody(f *testing.F, method, path string, seeds []string, mutate func(*Config)) {
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	h := newTestServer(f, mutate).Handler()
	// The first answer naming a GPU reads its kernel tables (a server
	// preloads them at start: Domain.PreloadKernels); the bound is on
	// answers after that.
	for _, s := range seeds {
		do(f, h, method, path, s)
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		start := time.Now()
		// A hang never returns to the check below: crash the worker so
		// that the fuzzer records the input.
		watchdog := time.AfterFunc(3*slowAnswer, func() { panic(fmt.Sprintf("no answer after %s for %q", 3*slowAnswer, body)) })
		r := do(t, h, method, path, string(body))
		watchdog.Stop()
		if d := time.Since(start); d > slowAnswer {
			t.Fatalf("HTTP %d after %s for %q", r.status, d, body)
		}
		if !allowed[r.status] {
			t.Fatalf("HTTP %d for %q: %s", r.status, body, r.body)
		}
		if !json.Valid(r.body) {
			t.Fatalf("HTTP %d: body is not JSON: %q", r.status, r.body)
		}
		if r.status >= 400 {
			r.problem(t)
		}
	})
}

func FuzzCapacityBody(f *testing.F) {
	fuzzBody(f, "POST", "/v1/capacity", []string{
		`{"model":"llama-3.1-70b","gpu":"h100-sxm","tp":4,"prompt_tokens":2048,"output_tokens":512}`,
		`{"model":"deepseek-v3","gpu":"h200","tp":8,"kv_cache_dtype":"fp8","engine":{"max_model_len":4096,"block_size":64}}`,
		`{"model":"gpt-oss-120b","gpu":"mi300x","weights_dtype":"mxfp4","fragmentation":0.1,"engine":{"gpu_memory_utilization":0.95,"enable_chunked_prefill":false}}`,
		`{"model":"llama-3.1-8b","gpu":"l4","engine":{"max_num_seqs":1,"max_num_batched_tokens":1}}`,
		`{"model":"x","gpu":1}`, `[]`, `null`, `{"tp":-1}`, `{`,
	}, nil)
}

func FuzzSimulateBody(f *testing.F) {
	fuzzBody(f, "POST", "/v1/simulate", []string{
		`{"model":"llama-3.1-8b","gpu":"h100-sxm","workload":{"requests":50}}`,
		`{"model":"qwen2.5-7b","gpu":"l40s","replicas":2,"router":"least_outstanding","engine":{"max_num_seqs":16,"enable_prefix_caching":false},
		  "workload":{"requests":40,"arrival":{"type":"closed_loop","concurrency":4,"think_time_ms":100},"shared_prefix":{"groups":2,"prefix_tokens":64},
		  "input_tokens":{"type":"normal","mean":300,"stddev":100,"min":1,"max":600},"output_tokens":{"type":"buckets","buckets":[{"weight":1,"min":1,"max":50}]}},
		  "sla":{"ttft_ms":{"p99":500}},"report":{"timeseries":true}}`,
		`{"model":"llama-3.1-8b","gpu":"h100-sxm","workload":{"stages":[{"duration_s":2,"rate_rps":5},{"duration_s":2,"concurrency":3}],"multi_turn":{"turns":2}}}`,
		`{"model":"llama-3.1-8b","gpu":"h100-sxm","engine":{"scheduler":"v0","preemption_mode":"swap","max_num_seqs":2}}`,
		`{"model":"llama-3.1-70b","gpu":"a100-80gb","tp":2}`, `{}`, `model: x`, `{"workload":[]}`,
		`{"model":"llama-3.1-8b","gpu":"h100-sxm","workload":{"requests":40},"disaggregation":{"prefill":{"replicas":2,"engine":{"enable_prefix_caching":false}},"decode":{"gpu":"h200","router":"least_kv"},"kv_transfer":{"link":"infiniband-ndr","latency_us":50}}}`,
		`{"model":"llama-3.1-8b","gpu":"h100-sxm","workload":{"requests":20},"disaggregation":{"decode":{"replicas":2},"kv_transfer":{"link":"nvlink4","overlap":"layerwise","bandwidth_gbps":0.5}}}`,
		`{"model":"llama-3.1-8b","gpu":"h100-sxm","disaggregation":{"decode":{"tp":0,"dp":-1}}}`, `{"model":"llama-3.1-8b","gpu":"h100-sxm","disaggregation":null}`,
		`{"model":"llama-3.1-8b","gpu":"h100-sxm","autoscale":{"max_replicas":2,"target":3},"disaggregation":{"decode":{"gpu":"h200"}}}`,
		`{"model":"llama-3.1-8b","gpu":"h100-sxm","engine":{"speculative":{"method":"eagle","num_speculative_tokens":2}},"disaggregation":{}}`,
		`{"model":"llama-3.1-8b","gpu":"h100-sxm","autoscale":{"min_replicas":1,"max_replicas":3,"metric":"kv_cache_usage","target":0.5,"interval_s":2,"tolerance":0,"cold_start":{"provision_s":5,"torch_compile_s":0}},"workload":{"rate_profile":[{"at_s":0,"rate_rps":2},{"at_s":4,"rate_rps":20},{"at_s":8,"rate_rps":0}],"rate_profile_end_s":10}}`,
	}, func(c *Config) {
		c.Simulate.SyncMaxRequests = 300
		c.Simulate.SyncTimeout = 2 * time.Second
	})
}

func FuzzJobBody(f *testing.F) {
	fuzzBody(f, "POST", "/v1/jobs", []string{
		`{"kind":"simulate","params":{"model":"llama-3.1-8b","gpu":"h100-sxm"}}`,
		`{"kind":"simulate","params":{"model":"llama-3.1-8b","gpu":"h100-sxm","workload":{"requests":-5}}}`,
		`{"kind":"sweep","params":null}`, `{"kind":"","params":1}`, `{"kind":"simulate","params":"x"}`,
		`{"kind":"sweep","params":{"scenario":{"model":"llama-3.1-8b","gpu":"h100-sxm"},"axes":[{"path":"engine.max_num_seqs","values":[16,64]},{"path":"gpu","values":["l40s","h100"]}]}}`,
		`{"kind":"sweep","params":{"scenario":{},"list":true,"axes":[{"path":"workload.arrival.rate_rps","values":[1,2.5]},{"path":"replicas","values":[1,2]}]}}`,
		`{"kind":"sweep","params":{"scenario":{"model":"llama-3.1-8b","gpu":"h100-sxm"},"axes":[{"path":"engine","values":[{"max_num_seqs":8}]}]}}`,
		`{"kind":"sweep","params":{"scenario":{"model":"llama-3.1-8b","gpu":"h100-sxm","workload":{"requests":30}},"axes":[{"path":"disaggregation.decode.replicas","values":[1,2]},{"path":"disaggregation.prefill.gpu","values":["h100","h200"]}]}}`,
		`{"kind":"plan","params":{"scenario":{"model":"llama-3.1-8b","gpu":"h100-sxm","sla":{"ttft_ms":{"p99":500}}},"gpus":["h100","l40s"],"tps":[1,2],"max_replicas":4,"price_per_gpu_hour_usd":{"l40s":1.1},"pareto_metric":"ttft_ms.p99"}}`,
		`{"kind":"plan","params":{"scenario":{"model":"qwen2.5-7b","gpu":"l4","sla":{"e2e_ms":{"p50":9000}}},"configs":[{"gpu":"l4","tp":1,"replicas":2}],"skip_headroom":true}}`,
		`{"kind":"plan","params":{"scenario":{"model":"llama-3.1-8b","gpu":"h100-sxm","sla":{"ttft_ms":{"p99":800}},"workload":{"rate_profile":[{"at_s":0,"rate_rps":1},{"at_s":30,"rate_rps":6},{"at_s":60,"rate_rps":0}],"rate_profile_end_s":90}},"gpus":["h100"],"tps":[1],"window_s":30,"headroom":1.1,"target_utilization":0.5}}`,
		`{"kind":"plan","params":{"scenario":{"model":"llama-3.1-8b","gpu":"h100-sxm","sla":{"ttft_ms":{"p99":800}},"autoscale":{"metric":"in_flight","target":8,"max_replicas":2,"cold_start":{"weights_load_gbps":4}},"workload":{"rate_profile":[{"at_s":0,"rate_rps":3},{"at_s":20,"rate_rps":9}]}},"configs":[{"gpu":"h100","replicas":1}]}}`,
		`{"kind":"simulate","params":{"model":"llama-3.1-8b","gpu":"h100-sxm","replicas":1,"autoscale":{"max_replicas":3,"target":2,"interval_s":1,"scale_up_delay_s":2},"workload":{"rate_profile":[{"at_s":0,"rate_rps":1},{"at_s":5,"rate_rps":8}],"rate_profile_end_s":12}}}`,
		`{"kind":"plan","params":{"scenario":{"model":"llama-3.1-8b","gpu":"h100-sxm","sla":{"ttft_ms":{"p99":800}},"workload":{"requests":30}},"gpus":["h100"],"tps":[1],"max_replicas":2,"headroom":1.2,"disaggregation":{"decode_gpus":["h200"],"max_replicas":2}}}`,
		`{"kind":"plan","params":{"scenario":{"model":"llama-3.1-8b","gpu":"h100-sxm","sla":{"ttft_ms":{"p99":800}},"engine":{"speculative":{"method":"ngram","num_speculative_tokens":2}}},"disaggregation":{"shapes":[{"prefill":{"gpu":"h100"},"decode":{"gpu":"h100","replicas":1}}]}}}`,
		`{"kind":"curve","params":{"scenario":{"model":"llama-3.1-8b","gpu":"h100-sxm","sla":{"tpot_ms":{"p99":50}}},"rates_rps":[1,4,16],"step_duration_s":30}}`,
		`{"kind":"curve","params":{"scenario":{"model":"llama-3.1-8b","gpu":"h100-sxm"},"concurrencies":[1,8]}}`,
		`{"kind":"maxload","params":{"scenario":{"model":"llama-3.1-8b","gpu":"h100-sxm","sla":{"ttft_ms":{"p99":1000}},"workload":{"arrival":{"type":"closed_loop","concurrency":4}}},"max_probes":5,"tolerance":0.05}}`,
		`{"kind":"compare","params":{"a":{"model":"llama-3.1-8b","gpu":"h100-sxm"},"b":{"model":"llama-3.1-8b","gpu":"h200","calibration":"x"},"keep_workloads":true}}`,
		`{"kind":"calibrate","params":{"file":"eyJyZXF1ZXN0X2lkIjogImJlbmNoLTAifQo=","file_name":"requests.jsonl","model":"llama-3.1-8b","gpu":"l4","stage":0}}`,
	}, func(c *Config) { c.Jobs.QueueSize = 0 })
}

// FuzzCalibrationUpload fuzzes the benchmark file of POST /v1/calibrations
// (a short fit when it imports).
func FuzzCalibrationUpload(f *testing.F) {
	f.Add([]byte(readFile(f, calibFixture)))
	for _, s := range []string{"", "{}", "send_s,input_tokens,output_tokens,ttft_ms,e2e_ms\n0,10,5,20,40\n", `{"benchmarks":[]}`} {
		f.Add([]byte(s))
	}
	h := newTestServer(f, func(c *Config) { c.Calibrations.SyncTimeout = 2 * time.Second }).Handler()
	fields := map[string]string{"model": "llama-3.1-8b", "gpu": "rtx-pro-6000", "max_evaluations": "3"}
	// Warm the GPU's kernel tables, as a server's start does.
	warm, ct := form(f, fields, "results.json", []byte(readFile(f, calibFixture)))
	upload(f, h, "/v1/calibrations", warm, ct)
	f.Fuzz(func(t *testing.T, file []byte) {
		body, ct := form(t, fields, "results.json", file)
		start := time.Now()
		watchdog := time.AfterFunc(3*slowAnswer, func() { panic(fmt.Sprintf("no answer after %s for %q", 3*slowAnswer, file)) })
		r := upload(t, h, "/v1/calibrations", body, ct)
		watchdog.Stop()
		if d := time.Since(start); d > slowAnswer {
			t.Fatalf("HTTP %d after %s for %q", r.status, d, file)
		}
		if !allowed[r.status] || !json.Valid(r.body) {
			t.Fatalf("HTTP %d for %q: %s", r.status, file, r.body)
		}
		if r.status >= 400 {
			r.problem(t)
		}
	})
}

func FuzzModelBody(f *testing.F) {
	cfg := readFile(f, "testdata/hf-config.json")
	fuzzBody(f, "POST", "/v1/models?id=fuzzed", []string{
		cfg, `{"num_hidden_layers":2,"hidden_size":64,"num_attention_heads":4,"vocab_size":100,"max_position_embeddings":128}`,
		`{"text_config":{"hidden_size":1},"quantization_config":{"quant_method":"awq","bits":3}}`, `{"num_local_experts":8}`, `{}`, `[]`,
	}, nil)
}
