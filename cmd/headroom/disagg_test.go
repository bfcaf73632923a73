package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/headroom-sim/headroom/internal/study/plan"
)

func TestCatalogInterconnects(t *testing.T) {
	code, out, stderr := runCLI(t, "catalog", "list", "interconnects")
	if code != 0 || !strings.Contains(out, "nvlink4") || !strings.Contains(out, "360.0") || !strings.Contains(out, "infiniband-ndr") {
		t.Fatalf("exit %d: %s%s", code, out, stderr)
	}
	code, out, _ = runCLI(t, "catalog", "show", "interconnects", "IB-NDR", "--output", "json")
	var l struct {
		ID       string  `json:"id"`
		LineRate float64 `json:"line_rate_gbps"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &l) != nil || l.ID != "infiniband-ndr" || l.LineRate != 50 {
		t.Errorf("show IB-NDR: exit %d: %s", code, out)
	}
	if code, _, stderr := runCLI(t, "catalog", "show", "interconnects", "nvlink-6"); code != 2 || !strings.Contains(stderr, "unknown interconnect") {
		t.Errorf("unknown link: exit %d: %s", code, stderr)
	}
}

func TestSimulateDisaggregatedTable(t *testing.T) {
	code, out, stderr := runCLI(t, "simulate", "--scenario", "../../examples/disaggregated.yaml", "--requests", "100")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range []string{"prefill 2× h100-sxm (tp 1, 2 GPUs), decode 1× h200", "infiniband-ndr at 34.0 GB/s per GPU + 17 µs, read after the prefill",
		"KV admission", "KV transfer", "first decode step", "Prefill pool", "Decode pool"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	if code, _, stderr := runCLI(t, "simulate", "--set", "disaggregation.decode.tp=3"); code != 2 || !strings.Contains(stderr, "disaggregation.decode.tp") {
		t.Errorf("bad pool tp: exit %d: %s", code, stderr)
	}
}

func TestPlanAndSweepDisaggregated(t *testing.T) {
	code, out, stderr := runCLI(t, "plan", "--output", "json", "--requests", "200", "--gpus", "h100-sxm", "--tps", "1", "--max-replicas", "2",
		"--decode-gpus", "h200", "--no-headroom", "--set", "sla.ttft_ms.p99=2000", "--set", "sla.tpot_ms.p99=60")
	if code != 0 {
		t.Fatalf("plan: exit %d: %s", code, stderr)
	}
	var res struct {
		Recommendation *struct {
			Sentence string `json:"sentence"`
		} `json:"recommendation"`
		Candidates []struct {
			GPU            string          `json:"gpu"`
			Disaggregation json.RawMessage `json:"disaggregation"`
		} `json:"candidates"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatal(err)
	}
	if res.Recommendation == nil || res.Recommendation.Sentence == "" {
		t.Errorf("no recommendation: %s", out)
	}
	kinds := map[bool]int{}
	for _, c := range res.Candidates {
		kinds[c.Disaggregation != nil]++
	}
	if kinds[false] != 1 || kinds[true] != 1 {
		t.Errorf("candidates %s, want one aggregated (h100-sxm) and one disaggregated (h100-sxm prefill, h200 decode)", out)
	}
	// The table names each pool of a disaggregated shape and says how.
	code, out, stderr = runCLI(t, "plan", "--requests", "200", "--gpus", "h100-sxm", "--tps", "1", "--max-replicas", "2",
		"--decode-gpus", "h200", "--no-headroom", "--set", "sla.ttft_ms.p99=2000", "--set", "sla.tpot_ms.p99=60")
	if code != 0 || !strings.Contains(out, "Recommendation: ") || !strings.Contains(out, "P h100-sxm TP1×") || !strings.Contains(out, "+ D h200 TP1×") || !strings.Contains(out, plan.DisaggLabelFormat) {
		t.Errorf("plan table: exit %d: %s%s", code, out, stderr)
	}
	if code, _, stderr := runCLI(t, "plan", "--decode-gpus", "h900", "--set", "sla.ttft_ms.p99=2000"); code != 2 || !strings.Contains(stderr, "--decode-gpus") {
		t.Errorf("unknown decode GPU: exit %d: %s", code, stderr)
	}
	// A sweep axis may switch disaggregation on, with a mapping holding commas.
	code, out, stderr = runCLI(t, "sweep", "--output", "json", "--requests", "60", "--axis", "disaggregation=null,{prefill: {replicas: 1}, decode: {gpu: h200}}")
	var sw struct {
		Points []struct {
			Error string `json:"error"`
		} `json:"points"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &sw) != nil || len(sw.Points) != 2 || sw.Points[0].Error != "" || sw.Points[1].Error != "" {
		t.Errorf("sweep: exit %d: %s%s", code, out, stderr)
	}
}
