package api

import (
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/headroom-sim/headroom/catalogs"
	"github.com/headroom-sim/headroom/internal/study/stepreport"
)

// copyKernelDB writes the built-in measurements of system under
// dir/name/system, as a user's kernel database.
func copyKernelDB(t *testing.T, dir, name, system string) {
	t.Helper()
	src := catalogs.Kernels()
	err := fs.WalkDir(src, system, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(src, p)
		if err != nil {
			return err
		}
		dst := filepath.Join(dir, name, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		return os.WriteFile(dst, b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

const stepBody = `{"model":"llama-3.1-8b","gpu":"h100-sxm","steptime":{"backend":"table"},"batch":{"decode_seqs":64,"kv_len":2048}}`

// TestStepTimeEndpoint covers POST /v1/steptime's answer and each error
// class, with and without a kernel_db_dir.
func TestStepTimeEndpoint(t *testing.T) {
	h := newTestServer(t, func(c *Config) { c.BodyLimitBytes = 4096 }).Handler()
	tmp := t.TempDir()
	root := filepath.Join(tmp, "served")
	copyKernelDB(t, root, "team-a", "h100_sxm")
	copyKernelDB(t, tmp, "outside", "h100_sxm") // readable, but not under kernel_db_dir
	withDir := newTestServer(t, func(c *Config) { c.KernelDBDir = root }).Handler()
	big := `{"model":"llama-3.1-8b","gpu":"h100-sxm","calibration":"` + strings.Repeat("x", 5000) + `"}`
	tests := []struct {
		name    string
		server  string // "" or "dir"
		body    string
		status  int
		problem string
		field   string
	}{
		{"table", "", stepBody, 200, "", ""},
		{"formula with prefill", "", `{"model":"llama-3.1-8b","gpu":"h100-sxm","batch":{"decode_seqs":8,"kv_len":100,"prefill_tokens":512,"prefill_context_tokens":1024,"prefill_completes":false}}`, 200, "", ""},
		{"moe split", "", `{"model":"qwen3-30b-a3b","gpu":"h200","tp":2,"dp":2,"moe_ep":4,"batch":{"decode_seqs":8,"kv_len":100}}`, 200, "", ""},
		{"kernel_db under kernel_db_dir", "dir", `{"model":"llama-3.1-8b","gpu":"h100-sxm","steptime":{"kernel_db":"team-a"},"batch":{"decode_seqs":64,"kv_len":2048}}`, 200, "", ""},
		{"missing model", "", `{"gpu":"h100-sxm","batch":{"decode_seqs":1,"kv_len":8}}`, 400, "invalid-request", "model"},
		{"empty batch", "", `{"model":"llama-3.1-8b","gpu":"h100-sxm"}`, 400, "invalid-request", "batch.decode_seqs"},
		{"negative batch", "", `{"model":"llama-3.1-8b","gpu":"h100-sxm","batch":{"decode_seqs":-1}}`, 400, "invalid-request", "batch.decode_seqs"},
		{"decode without kv_len", "", `{"model":"llama-3.1-8b","gpu":"h100-sxm","batch":{"decode_seqs":4}}`, 400, "invalid-request", "batch.kv_len"},
		{"kv_len past max_model_len", "", `{"model":"llama-3.1-8b","gpu":"h100-sxm","engine":{"max_model_len":1024},"batch":{"decode_seqs":4,"kv_len":2000}}`, 400, "invalid-request", "batch.kv_len"},
		{"over max_num_seqs", "", `{"model":"llama-3.1-8b","gpu":"h100-sxm","engine":{"max_num_seqs":4},"batch":{"decode_seqs":5,"kv_len":20}}`, 400, "invalid-request", "batch.decode_seqs"},
		{"over the token budget", "", `{"model":"llama-3.1-8b","gpu":"h100-sxm","batch":{"prefill_tokens":9000}}`, 400, "invalid-request", "batch.prefill_tokens"},
		{"bad backend", "", `{"model":"llama-3.1-8b","gpu":"h100-sxm","steptime":{"backend":"magic"},"batch":{"decode_seqs":1,"kv_len":8}}`, 400, "invalid-request", "steptime.backend"},
		{"kernel_db refused", "", `{"model":"llama-3.1-8b","gpu":"h100-sxm","steptime":{"kernel_db":"/etc"},"batch":{"decode_seqs":1,"kv_len":8}}`, 400, "invalid-request", "steptime.kernel_db"},
		{"kernel_db escaping the dir", "dir", `{"model":"llama-3.1-8b","gpu":"h100-sxm","steptime":{"kernel_db":"../outside"},"batch":{"decode_seqs":1,"kv_len":8}}`, 400, "invalid-request", "steptime.kernel_db"},
		{"kernel_db absolute", "dir", `{"model":"llama-3.1-8b","gpu":"h100-sxm","steptime":{"kernel_db":"/team-a"},"batch":{"decode_seqs":1,"kv_len":8}}`, 400, "invalid-request", "steptime.kernel_db"},
		{"kernel_db missing", "dir", `{"model":"llama-3.1-8b","gpu":"h100-sxm","steptime":{"kernel_db":"team-b"},"batch":{"decode_seqs":1,"kv_len":8}}`, 400, "invalid-request", "steptime.kernel_db"},
		{"kernel_db without the gpu", "dir", `{"model":"llama-3.1-8b","gpu":"h200","steptime":{"kernel_db":"team-a"},"batch":{"decode_seqs":1,"kv_len":8}}`, 400, "invalid-request", "steptime.kernel_db"},
		{"tp not dividing heads", "", `{"model":"llama-3.1-8b","gpu":"h100-sxm","tp":3,"batch":{"decode_seqs":1,"kv_len":8}}`, 400, "invalid-request", "tp"},
		{"split of a dense model", "", `{"model":"llama-3.1-8b","gpu":"h100-sxm","moe_ep":1,"batch":{"decode_seqs":1,"kv_len":8}}`, 400, "invalid-request", "moe_ep"},
		{"unknown key", "", `{"model":"llama-3.1-8b","gpu":"h100-sxm","batch_size":1}`, 400, "invalid-request", "batch_size"},
		{"wrong type", "", `{"model":"llama-3.1-8b","gpu":"h100-sxm","batch":{"decode_seqs":"many"}}`, 400, "invalid-request", "batch.decode_seqs"},
		{"malformed", "", `{"model":`, 400, "malformed-request", ""},
		{"unknown model", "", `{"model":"llama-9","gpu":"h100-sxm","batch":{"decode_seqs":1,"kv_len":8}}`, 404, "not-found", ""},
		{"unknown gpu", "", `{"model":"llama-3.1-8b","gpu":"z100","batch":{"decode_seqs":1,"kv_len":8}}`, 404, "not-found", ""},
		{"unknown calibration", "", `{"model":"llama-3.1-8b","gpu":"h100-sxm","calibration":"nope","batch":{"decode_seqs":1,"kv_len":8}}`, 404, "not-found", ""},
		{"does not fit", "", `{"model":"llama-3.1-70b","gpu":"h100-sxm","batch":{"decode_seqs":1,"kv_len":8}}`, 422, "infeasible", ""},
		{"too large", "", big, 413, "body-too-large", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := h
			if tt.server == "dir" {
				srv = withDir
			}
			r := do(t, srv, "POST", "/v1/steptime", tt.body)
			if r.status != tt.status {
				t.Fatalf("HTTP %d, want %d: %s", r.status, tt.status, r.body)
			}
			if tt.problem == "" {
				return
			}
			p := r.wantProblem(t, tt.problem, tt.field)
			// Issue 23: no server path, nor what else kernel_db_dir holds.
			if strings.Contains(string(r.body), tmp) || strings.Contains(p.Detail, "h100_sxm") {
				t.Errorf("the problem shows the server's files: %s", r.body)
			}
		})
	}
}

// TestStepTimeGolden pins a whole answer; the kernels sum to gpu_ms and
// the user's copy of the tables gives what the built-in ones give.
func TestStepTimeGolden(t *testing.T) {
	root := t.TempDir()
	copyKernelDB(t, root, "team-a", "h100_sxm")
	h := newTestServer(t, func(c *Config) { c.KernelDBDir = root }).Handler()
	r := do(t, h, "POST", "/v1/steptime", stepBody)
	if r.status != 200 {
		t.Fatalf("HTTP %d: %s", r.status, r.body)
	}
	golden(t, "steptime-llama8b-h100-table.json", r.body)
	var rep stepreport.Report
	r.json(t, &rep)
	var sum float64
	measured := 0
	for _, k := range rep.Kernels {
		sum += k.TimeUS
		if k.MeasuredUS != nil {
			measured++
		}
	}
	if math.Abs(sum-rep.GPUMS*1e3) > 0.01 || measured == 0 || rep.TPOTMS == nil || *rep.TPOTMS != rep.StepMS {
		t.Errorf("kernels %.3f µs vs gpu %.6f ms, %d measured, tpot %v", sum, rep.GPUMS, measured, rep.TPOTMS)
	}
	u := do(t, h, "POST", "/v1/steptime", strings.Replace(stepBody, `"backend":"table"`, `"kernel_db":"team-a"`, 1))
	var own stepreport.Report
	u.json(t, &own)
	if own.KernelDB == nil || strings.HasPrefix(own.KernelDB.Source, "built-in") || own.StepMS != rep.StepMS {
		t.Errorf("the user's copy: kernel db %+v, step %.6f ms; built-in step %.6f ms", own.KernelDB, own.StepMS, rep.StepMS)
	}
}

// TestSimulateTable: simulations over the API read the built-in tables
// (steptime.backend table), and a kernel_db only under kernel_db_dir.
func TestSimulateTable(t *testing.T) {
	h := newTestServer(t, nil).Handler()
	r := do(t, h, "POST", "/v1/simulate", `{"model":"llama-3.1-8b","gpu":"h100-sxm","steptime":{"backend":"table"},"workload":{"requests":20}}`)
	if r.status != 200 {
		t.Fatalf("table backend: HTTP %d: %s", r.status, r.body)
	}
	r = do(t, h, "POST", "/v1/simulate", `{"model":"llama-3.1-8b","gpu":"h100-sxm","steptime":{"kernel_db":"x"},"workload":{"requests":20}}`)
	if p := r.problem(t); r.status != 400 || len(p.Errors) == 0 || p.Errors[0].Field != "steptime.kernel_db" || !strings.Contains(p.Errors[0].Reason, "kernel_db_dir") {
		t.Errorf("kernel_db without kernel_db_dir: HTTP %d: %s", r.status, r.body)
	}
}

func TestKernelDBDirConfig(t *testing.T) {
	cfg := testConfig()
	cfg.KernelDBDir = filepath.Join(t.TempDir(), "absent")
	dom, err := NewDomain(mustBuiltin(t), "", nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := New(cfg, Options{Engine: dom}); err == nil || !strings.Contains(err.Error(), "kernel_db_dir") {
		t.Errorf("a kernel_db_dir that is no directory: %v", err)
	}
}

func FuzzStepTimeBody(f *testing.F) {
	fuzzBody(f, "POST", "/v1/steptime", []string{
		stepBody,
		`{"model":"qwen3-30b-a3b","gpu":"h200","dp":4,"expert_parallel":true,"steptime":{"backend":"table","moe_routing":"balanced"},"batch":{"decode_seqs":32,"kv_len":1000}}`,
		`{"model":"gpt-oss-120b","gpu":"h100-sxm","tp":2,"engine":{"max_num_seqs":16,"async_scheduling":false},"batch":{"decode_seqs":4,"kv_len":4096,"prefill_tokens":600,"prefill_chunks":2}}`,
		`{"model":"llama-3.1-8b","gpu":"h100-sxm","moe_tp":2,"batch":{"prefill_tokens":1}}`,
		`{"batch":{"kv_len":-1}}`, `[]`, `null`, `{`,
	}, nil)
}
