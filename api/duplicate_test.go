package api

import (
	"net/http"
	"testing"
)

// TestBodiesAreOneValueOnce (issue 23, smaller items): a key given twice,
// a second document and data after the value are refused, on
// /v1/simulate and on the other endpoints alike.
func TestBodiesAreOneValueOnce(t *testing.T) {
	h := newTestServer(t, nil).Handler()
	for _, c := range []struct {
		name, path, body, typ, field string
	}{
		{"simulate: trailing data", "/v1/simulate", `{"model":"llama-3.1-8b","gpu":"h100-sxm"} xyz`, "malformed-request", ""},
		{"simulate: a second document", "/v1/simulate", "{\"model\":\"llama-3.1-8b\",\"gpu\":\"h100-sxm\"}\n---\nmodel: llama-3.1-70b\n", "malformed-request", ""},
		{"simulate: a key twice", "/v1/simulate", `{"model":"llama-3.1-8b","gpu":"h100-sxm","model":"llama-3.1-70b"}`, "", ""},
		{"capacity: a key twice", "/v1/capacity", `{"model":"llama-3.1-8b","gpu":"h100-sxm","engine":{"max_num_seqs":8,"max_num_seqs":9}}`, "invalid-request", "engine.max_num_seqs"},
		{"jobs: a key twice in a list", "/v1/jobs", `{"kind":"sweep","params":{"scenario":{},"axes":[{"path":"tp","values":[1],"path":"replicas"}]}}`, "invalid-request", "params.axes[0].path"},
		{"capacity: trailing data", "/v1/capacity", `{"model":"llama-3.1-8b","gpu":"h100-sxm"} {}`, "malformed-request", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := do(t, h, "POST", c.path, c.body)
			if r.status != http.StatusBadRequest {
				t.Fatalf("HTTP %d, want 400: %s", r.status, r.body)
			}
			if c.typ != "" {
				r.wantProblem(t, c.typ, c.field)
			}
		})
	}
	// The same keys once each are fine.
	if r := do(t, h, "POST", "/v1/capacity", `{"model":"llama-3.1-8b","gpu":"h100-sxm","engine":{"max_num_seqs":8}}`); r.status != http.StatusOK {
		t.Errorf("HTTP %d: %s", r.status, r.body)
	}
}
