package api

import (
	"bytes"
	"context"
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
		{`{"model":"llama-3.1-8b","gpu":"h100-sxm","autoscale":{"max_replicas":3,"target":2},"disaggregation":{"decode":{"gpu":"h200"}}}`, "autoscale"},
		{`{"model":"llama-3.1-8b","gpu":"h100-sxm","engine":{"speculative":{"method":"ngram","num_speculative_tokens":3}},"disaggregation":{"decode":{"gpu":"h200"}}}`, "engine.speculative"},
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

// A plan job with disaggregation refuses speculative decoding when it is
// submitted, naming the scenario's field.
func TestPlanJobDisaggregatedRefusesSpeculation(t *testing.T) {
	h := newTestServer(t, nil).Handler()
	r := do(t, h, "POST", "/v1/jobs", `{"kind":"plan","params":{"scenario":{"model":"llama-3.1-8b","gpu":"h100-sxm","sla":{"ttft_ms":{"p99":800}},
	  "engine":{"speculative":{"method":"ngram","num_speculative_tokens":3}}},"gpus":["h100"],"tps":[1],"disaggregation":{}}}`)
	if r.status != http.StatusBadRequest {
		t.Fatalf("HTTP %d, want 400: %s", r.status, r.body)
	}
	if p := r.problem(t); len(p.Errors) == 0 || p.Errors[0].Field != "params.scenario.engine.speculative" {
		t.Errorf("problem %+v, want field params.scenario.engine.speculative", p)
	}
}

// A plan job searches disaggregated clusters beside the aggregated ones
// and ranks them together; GPU aliases name catalog ids.
func TestPlanJobDisaggregated(t *testing.T) {
	s := newTestServer(t, nil)
	s.jobs.Start()
	defer s.jobs.Shutdown(context.Background())
	h := s.Handler()
	v := submit(t, h, "plan", `{"scenario":`+smallSLA+`,"gpus":["h100"],"tps":[1],"max_replicas":2,"skip_headroom":true,
	  "disaggregation":{"decode_gpus":["H200"],"shapes":[{"prefill":{"gpu":"h100","replicas":1},"decode":{"gpu":"h100","replicas":1}}]}}`)
	got := waitFinal(t, s.jobs, v.ID)
	if got.State != JobSucceeded {
		t.Fatalf("job: %+v (error %+v)", got, got.Error)
	}
	r := do(t, h, "GET", "/v1/jobs/"+v.ID, "")
	var res struct {
		Result struct {
			Candidates []struct {
				GPU            string `json:"gpu"`
				GPUs           int    `json:"gpus"`
				Disaggregation *struct {
					Prefill, Decode struct {
						GPU      string `json:"gpu"`
						Replicas int    `json:"replicas"`
					}
				} `json:"disaggregation"`
			} `json:"candidates"`
		} `json:"result"`
	}
	mustJSON(t, r.body, &res)
	var agg, dis int
	for _, c := range res.Result.Candidates {
		if d := c.Disaggregation; d != nil {
			dis++
			if d.Prefill.GPU != "h100-sxm" || (d.Decode.GPU != "h200" && d.Decode.GPU != "h100-sxm") || c.GPUs != d.Prefill.Replicas+d.Decode.Replicas {
				t.Errorf("disaggregated candidate %+v on %d GPUs", d, c.GPUs)
			}
		} else if c.GPU == "h100-sxm" {
			agg++
		}
	}
	if agg != 1 || dis != 1 {
		t.Errorf("%d aggregated and %d disaggregated candidates, want 1 and 1 (the given shape; a search runs only without shapes): %s", agg, dis, r.body)
	}
	if r := getAccept(t, h, "/v1/jobs/"+v.ID, "image/svg+xml"); r.status != http.StatusOK || !bytes.Contains(r.body, []byte("P h100-sxm TP1×1 + D h100-sxm TP1×1")) {
		t.Errorf("the Pareto chart does not name the disaggregated shape: HTTP %d", r.status)
	}
}
