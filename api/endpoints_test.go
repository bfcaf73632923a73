package api

import (
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/headroom-sim/headroom/sim"
)

// TestEndpoints covers every endpoint's answer and error paths: status,
// media type, and for errors the problem type and the fields named.
func TestEndpoints(t *testing.T) {
	h := newTestServer(t, func(c *Config) {
		c.Simulate.SyncMaxRequests = 500
		c.BodyLimitBytes = 4096
	}).Handler()
	big := `{"model":"llama-3.1-8b","gpu":"h100-sxm","pad":"` + strings.Repeat("x", 5000) + `"}`
	tests := []struct {
		name, method, path, body string
		status                   int
		problem                  string // problem type slug, "" for success
		field                    string // first field named, if any
	}{
		{"healthz", "GET", "/healthz", "", 200, "", ""},
		{"readyz", "GET", "/readyz", "", 200, "", ""},
		{"gpus", "GET", "/v1/gpus", "", 200, "", ""},
		{"gpu", "GET", "/v1/gpus/h100-sxm", "", 200, "", ""},
		{"gpu by alias", "GET", "/v1/gpus/H100", "", 200, "", ""},
		{"gpu unknown", "GET", "/v1/gpus/h1000", "", 404, "not-found", ""},
		{"models", "GET", "/v1/models", "", 200, "", ""},
		{"model", "GET", "/v1/models/llama-3.1-8b", "", 200, "", ""},
		{"model by hf id", "GET", "/v1/models/meta-llama/Llama-3.1-8B-Instruct", "", 200, "", ""},
		{"model by escaped hf id", "GET", "/v1/models/meta-llama%2FLlama-3.1-8B-Instruct", "", 200, "", ""},
		{"model unknown", "GET", "/v1/models/llama-9", "", 404, "not-found", ""},
		{"capacity", "POST", "/v1/capacity", `{"model":"llama-3.1-70b","gpu":"h100-sxm","tp":4,"prompt_tokens":2048,"output_tokens":512}`, 200, "", ""},
		{"capacity defaults", "POST", "/v1/capacity", `{"model":"llama-3.1-8b","gpu":"h100"}`, 200, "", ""},
		{"capacity infeasible", "POST", "/v1/capacity", `{"model":"llama-3.1-70b","gpu":"h100-sxm"}`, 422, "infeasible", ""},
		{"capacity unknown model", "POST", "/v1/capacity", `{"model":"nope","gpu":"h100-sxm"}`, 404, "not-found", ""},
		{"capacity unknown gpu", "POST", "/v1/capacity", `{"model":"llama-3.1-8b","gpu":"nope"}`, 404, "not-found", ""},
		{"capacity missing model", "POST", "/v1/capacity", `{"gpu":"h100-sxm"}`, 400, "invalid-request", "model"},
		{"capacity tp range", "POST", "/v1/capacity", `{"model":"llama-3.1-8b","gpu":"h100-sxm","tp":4096}`, 400, "invalid-request", "tp"},
		{"capacity tp heads", "POST", "/v1/capacity", `{"model":"llama-3.1-8b","gpu":"h100-sxm","tp":3}`, 400, "invalid-request", "tp"},
		{"capacity too long", "POST", "/v1/capacity", `{"model":"llama-3.1-8b","gpu":"h100-sxm","prompt_tokens":4000,"output_tokens":200,"engine":{"max_model_len":4096}}`, 400, "invalid-request", "prompt_tokens"},
		{"capacity seqs over tokens", "POST", "/v1/capacity", `{"model":"llama-3.1-8b","gpu":"h100-sxm","engine":{"max_num_seqs":512,"max_num_batched_tokens":256}}`, 400, "invalid-request", "engine.max_num_batched_tokens"},
		{"capacity utilization", "POST", "/v1/capacity", `{"model":"llama-3.1-8b","gpu":"h100-sxm","engine":{"gpu_memory_utilization":1.5}}`, 400, "invalid-request", "engine.gpu_memory_utilization"},
		{"capacity dtype", "POST", "/v1/capacity", `{"model":"llama-3.1-8b","gpu":"h100-sxm","weights_dtype":"fp7"}`, 400, "invalid-request", "weights_dtype"},
		{"capacity max_model_len over model", "POST", "/v1/capacity", `{"model":"llama-3.1-8b","gpu":"h100-sxm","engine":{"max_model_len":10000000}}`, 400, "invalid-request", "engine.max_model_len"},
		{"capacity unknown key", "POST", "/v1/capacity", `{"model":"llama-3.1-8b","gpu":"h100-sxm","tensor_parallel":2}`, 400, "invalid-request", "tensor_parallel"},
		{"capacity wrong type", "POST", "/v1/capacity", `{"model":"llama-3.1-8b","gpu":"h100-sxm","tp":"two"}`, 400, "invalid-request", "tp"},
		{"capacity malformed", "POST", "/v1/capacity", `{"model":`, 400, "malformed-request", ""},
		{"capacity trailing data", "POST", "/v1/capacity", `{"model":"llama-3.1-8b","gpu":"h100-sxm"} {}`, 400, "malformed-request", ""},
		{"capacity empty", "POST", "/v1/capacity", ``, 400, "malformed-request", ""},
		{"capacity array", "POST", "/v1/capacity", `[1]`, 400, "malformed-request", ""},
		{"capacity too large", "POST", "/v1/capacity", big, 413, "body-too-large", ""},
		{"simulate", "POST", "/v1/simulate", `{"model":"llama-3.1-8b","gpu":"h100-sxm","workload":{"requests":50}}`, 200, "", ""},
		{"simulate unknown key", "POST", "/v1/simulate", `{"model":"llama-3.1-8b","gpu":"h100-sxm","engine":{"max_num_seq":8}}`, 400, "invalid-request", "engine.max_num_seq"},
		{"simulate invalid", "POST", "/v1/simulate", `{"model":"llama-3.1-8b","gpu":"h100-sxm","router":"random"}`, 400, "invalid-request", "router"},
		{"simulate wrong type", "POST", "/v1/simulate", `{"model":"llama-3.1-8b","gpu":"h100-sxm","tp":"x"}`, 400, "invalid-request", "tp"},
		{"simulate tp heads", "POST", "/v1/simulate", `{"model":"llama-3.1-8b","gpu":"h100-sxm","tp":3}`, 400, "invalid-request", "tp"},
		{"simulate file reference", "POST", "/v1/simulate", `{"model":"llama-3.1-8b","gpu":"h100-sxm","workload":{"trace":{"file":"/etc/passwd","format":"csv"}}}`, 400, "invalid-request", "workload.trace.file"},
		{"simulate malformed", "POST", "/v1/simulate", `{"model": [`, 400, "malformed-request", ""},
		{"simulate not an object", "POST", "/v1/simulate", `"model"`, 400, "malformed-request", ""},
		{"simulate unknown model", "POST", "/v1/simulate", `{"model":"nope","gpu":"h100-sxm"}`, 404, "not-found", ""},
		{"simulate infeasible", "POST", "/v1/simulate", `{"model":"llama-3.1-70b","gpu":"h100-sxm"}`, 422, "infeasible", ""},
		{"simulate over the sync limit", "POST", "/v1/simulate", `{"model":"llama-3.1-8b","gpu":"h100-sxm","workload":{"requests":501}}`, 422, "over-limit", ""},
		{"simulate too large", "POST", "/v1/simulate", big, 413, "body-too-large", ""},
		{"jobs list", "GET", "/v1/jobs", "", 200, "", ""},
		{"job unknown", "GET", "/v1/jobs/nope", "", 404, "not-found", ""},
		{"job cancel unknown", "DELETE", "/v1/jobs/nope", "", 404, "not-found", ""},
		{"job unknown kind", "POST", "/v1/jobs", `{"kind":"sweeps","params":{}}`, 400, "invalid-request", "kind"},
		{"job missing params", "POST", "/v1/jobs", `{"kind":"simulate"}`, 400, "invalid-request", "params"},
		{"job bad params", "POST", "/v1/jobs", `{"kind":"simulate","params":{"model":"llama-3.1-8b","gpu":"h100-sxm","replicas":0}}`, 400, "invalid-request", "params.replicas"},
		{"job infeasible", "POST", "/v1/jobs", `{"kind":"simulate","params":{"model":"llama-3.1-70b","gpu":"h100-sxm"}}`, 422, "infeasible", ""},
		{"job unknown gpu", "POST", "/v1/jobs", `{"kind":"simulate","params":{"model":"llama-3.1-8b","gpu":"x"}}`, 404, "not-found", ""},
		{"add model bad id", "POST", "/v1/models?id=../etc", `{}`, 400, "invalid-request", "id"},
		{"add model no id", "POST", "/v1/models", `{}`, 400, "invalid-request", "id"},
		{"add model bad config", "POST", "/v1/models?id=m1", `{"hidden_size":1}`, 400, "invalid-request", "num_hidden_layers"},
		{"add model unknown key", "POST", "/v1/models?id=m1", `{"num_hidden_layers":1,"wat":2}`, 400, "invalid-request", "wat"},
		{"add model not json", "POST", "/v1/models?id=m1", `hidden_size: 1`, 400, "malformed-request", ""},
		{"add model taken", "POST", "/v1/models?id=llama-3.1-8b", readFile(t, "testdata/hf-config.json"), 409, "conflict", ""},
		{"add model ignore_unknown", "POST", "/v1/models?id=m1&ignore_unknown=maybe", `{}`, 400, "invalid-request", "ignore_unknown"},
		{"openapi", "GET", "/openapi.json", "", 200, "", ""},
		{"docs", "GET", "/docs", "", 302, "", ""},
		{"docs page", "GET", "/docs/index.html", "", 200, "", ""},
		{"docs slash", "GET", "/docs/", "", 302, "", ""},
		{"docs default document", "GET", "/docs/doc.json", "", 302, "", ""},
		{"docs assets", "GET", "/docs/swagger-initializer.js", "", 200, "", ""},
		{"metrics", "GET", "/metrics", "", 200, "", ""},
		{"no route", "GET", "/v2/gpus", "", 404, "not-found", ""},
		{"wrong method", "PUT", "/v1/capacity", "", 405, "method-not-allowed", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := do(t, h, tt.method, tt.path, tt.body)
			if r.status != tt.status {
				t.Fatalf("%s %s: HTTP %d, want %d: %s", tt.method, tt.path, r.status, tt.status, r.body)
			}
			if tt.problem == "" {
				if ct := r.header.Get("Content-Type"); r.status == 200 && !strings.Contains(ct, "json") && !strings.Contains(ct, "html") && !strings.Contains(ct, "text/plain") && !strings.Contains(ct, "javascript") {
					t.Errorf("Content-Type %q", ct)
				}
				return
			}
			r.wantProblem(t, tt.problem, tt.field)
		})
	}
}

func readFile(t testing.TB, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestGolden pins whole responses: the catalog and capacity answers as the
// CLI prints them, and the problem documents of each error class.
func TestGolden(t *testing.T) {
	h := newTestServer(t, nil).Handler()
	tests := []struct{ name, method, path, body string }{
		{"gpu-h100-sxm.json", "GET", "/v1/gpus/h100-sxm", ""},
		{"model-llama-3.1-8b.json", "GET", "/v1/models/llama-3.1-8b", ""},
		{"capacity-70b-tp4.json", "POST", "/v1/capacity", `{"model":"llama-3.1-70b","gpu":"h100-sxm","tp":4,"prompt_tokens":2048,"output_tokens":512}`},
		{"problem-validation.json", "POST", "/v1/capacity", `{"model":"llama-3.1-8b","gpu":"h100-sxm","tp":3,"fragmentation":2}`},
		{"problem-unknown-model.json", "POST", "/v1/capacity", `{"model":"llama-3.1-9b","gpu":"h100-sxm"}`},
		{"problem-infeasible.json", "POST", "/v1/simulate", `{"model":"llama-3.1-70b","gpu":"l40s"}`},
		{"problem-unknown-key.json", "POST", "/v1/simulate", `{"model":"llama-3.1-8b","gpu":"h100-sxm","workload":{"arrival":{"type":"poisson","rate":3}}}`},
		{"problem-malformed.json", "POST", "/v1/capacity", `{"model": "x",}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := do(t, h, tt.method, tt.path, tt.body)
			golden(t, tt.name, r.body)
		})
	}
}

// TestSimulateReport checks the invariants of a synchronous report (its
// figures belong to the simulator's own golden tests).
func TestSimulateReport(t *testing.T) {
	h := newTestServer(t, nil).Handler()
	r := do(t, h, "POST", "/v1/simulate", `{"model":"llama-3.1-8b","gpu":"h100-sxm","workload":{"requests":200,"arrival":{"type":"poisson","rate_rps":20}}}`)
	if r.status != http.StatusOK {
		t.Fatalf("HTTP %d: %s", r.status, r.body)
	}
	var rep struct {
		Model    string `json:"model"`
		Requests struct {
			Total, Completed, Rejected int
		} `json:"requests"`
		TTFTMS struct {
			P99 float64 `json:"p99"`
		} `json:"ttft_ms"`
		Throughput struct {
			RequestsPerS float64 `json:"requests_per_s"`
		} `json:"throughput"`
		KVCache struct {
			NumGPUBlocks int `json:"num_gpu_blocks"`
		} `json:"kv_cache"`
		TTFTMSInterval struct {
			P99 *sim.Interval `json:"p99"`
		} `json:"ttft_ms_interval"`
		Uncertainty *sim.Uncertainty `json:"uncertainty"`
	}
	r.json(t, &rep)
	// The error band of the point value, and the regime it was judged in.
	if in := rep.TTFTMSInterval.P99; in == nil || !(in.P95[0] > 0 && in.P95[0] <= in.P80[0] && in.P80[0] < in.P80[1] && in.P80[1] <= in.P95[1]) || in.Pool == "" {
		t.Errorf("ttft_ms_interval.p99 %+v: want [low, high] bands, 95%% around 80%%, and their pool", in)
	}
	if u := rep.Uncertainty; u == nil || u.Regime["loop"] != "open" || u.Regime["gpu_family"] != "hopper" || u.ErrorModel == "" {
		t.Errorf("uncertainty %+v: want the open-loop, Hopper regime and the model's source", u)
	}
	if rep.Model != "llama-3.1-8b" || rep.Requests.Total != 200 || rep.Requests.Completed+rep.Requests.Rejected != 200 {
		t.Errorf("requests not accounted for: %+v", rep)
	}
	if !(rep.TTFTMS.P99 > 0) || !(rep.Throughput.RequestsPerS > 0) || rep.KVCache.NumGPUBlocks <= 0 {
		t.Errorf("empty report: %s", r.body)
	}
}
