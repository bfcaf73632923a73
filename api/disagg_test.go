package api

import (
	"net/http"
	"testing"
)

// A disaggregated scenario body runs as the CLI's does: the report has
// both pools, the transfer and TTFT's parts.
func TestSimulateDisaggregated(t *testing.T) {
	h := newTestServer(t, nil).Handler()
	r := do(t, h, "POST", "/v1/simulate", `{"model":"llama-3.1-8b","gpu":"h100-sxm","workload":{"requests":100,"arrival":{"type":"poisson","rate_rps":5},"input_tokens":{"type":"fixed","value":2000}},
	  "disaggregation":{"prefill":{"replicas":2},"decode":{"gpu":"h200","engine":{"max_num_seqs":64}},"kv_transfer":{"link":"roce-400","overlap":"layerwise"}}}`)
	if r.status != http.StatusOK {
		t.Fatalf("HTTP %d: %s", r.status, r.body)
	}
	var rep struct {
		GPU            string `json:"gpu"`
		Requests       struct{ Total, Completed int }
		Disaggregation *struct {
			TTFTBreakdown map[string]struct {
				Count int `json:"count"`
			} `json:"ttft_breakdown"`
			KVTransfer struct {
				Link    string `json:"link"`
				Overlap string `json:"overlap"`
			} `json:"kv_transfer"`
			Prefill, Decode struct {
				GPU      string `json:"gpu"`
				Replicas int    `json:"replicas"`
			}
		} `json:"disaggregation"`
	}
	r.json(t, &rep)
	d := rep.Disaggregation
	switch {
	case d == nil:
		t.Fatalf("no disaggregation section: %s", r.body)
	case rep.GPU != "h200" || d.Prefill.GPU != "h100-sxm" || d.Prefill.Replicas != 2 || d.Decode.GPU != "h200" || d.Decode.Replicas != 1:
		t.Errorf("pools: report gpu %s, prefill %+v, decode %+v", rep.GPU, d.Prefill, d.Decode)
	case d.KVTransfer.Link != "roce-400" || d.KVTransfer.Overlap != "layerwise":
		t.Errorf("transfer %+v", d.KVTransfer)
	case rep.Requests.Completed != 100 || len(d.TTFTBreakdown) != 5 || d.TTFTBreakdown["kv_transfer_ms"].Count != 100:
		t.Errorf("requests %+v, breakdown %+v", rep.Requests, d.TTFTBreakdown)
	}
}

// Bad disaggregation fields are 400 problems naming them.
func TestSimulateDisaggregatedErrors(t *testing.T) {
	h := newTestServer(t, nil).Handler()
	for _, c := range []struct{ body, field string }{
		{`{"model":"llama-3.1-8b","gpu":"h100-sxm","disaggregation":{"decode":{"tp":3}}}`, "disaggregation.decode.tp"},
		{`{"model":"llama-3.1-8b","gpu":"h100-sxm","disaggregation":{"prefill":{"gpus":1}}}`, "disaggregation.prefill.gpus"},
		{`{"model":"llama-3.1-8b","gpu":"h100-sxm","disaggregation":{"kv_transfer":{"link":"carrier-pigeon"}}}`, "disaggregation.kv_transfer.link"},
		{`{"model":"llama-3.1-8b","gpu":"h100-sxm","disaggregation":{"decode":{"gpu":"h200"},"kv_transfer":{"link":"nvlink4"}}}`, "disaggregation.kv_transfer.link"},
	} {
		r := do(t, h, "POST", "/v1/simulate", c.body)
		if r.status != http.StatusBadRequest {
			t.Errorf("%s: HTTP %d, want 400: %s", c.field, r.status, r.body)
			continue
		}
		p := r.problem(t)
		if len(p.Errors) == 0 || p.Errors[0].Field != c.field {
			t.Errorf("problem %+v, want field %s", p, c.field)
		}
	}
}
