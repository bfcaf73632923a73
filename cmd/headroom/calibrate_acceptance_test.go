package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/headroom-sim/headroom/internal/study/calibrate"
	"github.com/headroom-sim/headroom/internal/testkit/refdata"
)

// calibrate --fit acceptance on the shared vllm+eagle run: a rate in [0,
// 1] with its source, the other stages checked, and --out a block the
// scenario's engine.speculative takes.
func TestCalibrateAcceptanceCLI(t *testing.T) {
	dir := refdata.Path(t, "measured/inference-perf-kubecon/vllm+eagle")
	out := filepath.Join(t.TempDir(), "acceptance.json")
	code, stdout, errb := runCLI(t, "calibrate", "--fit", "acceptance", "--trace", dir, "--stage", "0", "--holdout-stages", "--output", "json", "--out", out)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errb)
	}
	var fit calibrate.AcceptanceFit
	if err := json.Unmarshal([]byte(stdout), &fit); err != nil {
		t.Fatal(err)
	}
	if fit.Method != "eagle3" || fit.NumSpeculativeTokens != 4 || !(fit.Rate >= 0 && fit.Rate <= 1) || !strings.Contains(fit.Source, "vllm+eagle stage 0") {
		t.Errorf("fit %+v", fit)
	}
	if len(fit.Holdouts) != 6*3 {
		t.Errorf("%d held-out figures, want 3 for each of stages 1-6", len(fit.Holdouts))
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var file struct {
		Acceptance struct {
			Rate   *float64 `json:"rate"`
			Source string   `json:"source"`
		} `json:"acceptance"`
	}
	if err := json.Unmarshal(b, &file); err != nil || file.Acceptance.Rate == nil || *file.Acceptance.Rate != fit.Rate || file.Acceptance.Source != fit.Source {
		t.Errorf("--out wrote %s (%v)", b, err)
	}
	// A multi-stage run needs the stage to fit on.
	if code, _, errb := runCLI(t, "calibrate", "--fit", "acceptance", "--trace", dir); code != 2 || !strings.Contains(errb, "--stage: ") {
		t.Errorf("without --stage: exit %d, %s", code, errb)
	}
}

// With vLLM's spec_decode counters the acceptance is read off them, per
// position, and --out writes per_position.
func TestCalibrateAcceptanceFromCounters(t *testing.T) {
	dir := refdata.Path(t, "measured/inference-perf-kubecon/vllm+eagle")
	metrics := "../../internal/adapter/measured/testdata/vllm-metrics/spec-decode.txt"
	out := filepath.Join(t.TempDir(), "acceptance.json")
	code, stdout, errb := runCLI(t, "calibrate", "--fit", "acceptance", "--trace", dir, "--stage", "0", "--spec-decode-metrics", metrics, "--output", "json", "--out", out)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errb)
	}
	var fit calibrate.AcceptanceFit
	if err := json.Unmarshal([]byte(stdout), &fit); err != nil {
		t.Fatal(err)
	}
	if !fit.FromCounters || fit.Evaluations != 0 || len(fit.PerPosition) != 4 || fit.PerPosition[0] != 0.09 || fit.MeanAcceptanceLength != 1.13 {
		t.Errorf("fit %+v", fit)
	}
	b, _ := os.ReadFile(out)
	if !strings.Contains(string(b), `"per_position"`) || !strings.Contains(string(b), "spec_decode counters") {
		t.Errorf("--out wrote %s", b)
	}
	// A scrape subtracted from itself counts no proposal.
	if code, _, errb := runCLI(t, "calibrate", "--fit", "acceptance", "--trace", dir, "--stage", "0", "--spec-decode-metrics", metrics, "--spec-decode-metrics-before", metrics); code == 0 || !strings.Contains(errb, "no proposals") {
		t.Errorf("an empty interval: exit %d, %s", code, errb)
	}
}

// simulate answers whether speculation pays (speculative.verdict) unless
// told not to.
func TestSimulateSpeculationVerdict(t *testing.T) {
	args := []string{"simulate", "--requests", "60", "--output", "json", "--set", "engine.speculative.method=eagle3",
		"--set", "engine.speculative.num_speculative_tokens=4", "--set", "engine.speculative.acceptance.rate=0.05"}
	for _, off := range []bool{false, true} {
		a := args
		if off {
			a = append(a, "--speculation-verdict=false")
		}
		code, out, errb := runCLI(t, a...)
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errb)
		}
		var rep struct {
			Speculative struct {
				Verdict *struct {
					LowLoad *struct {
						SpeedupRatio  float64  `json:"speedup_ratio"`
						BreakEvenRate *float64 `json:"break_even_rate"`
					} `json:"low_load"`
				} `json:"verdict"`
			} `json:"speculative"`
		}
		if err := json.Unmarshal([]byte(out), &rep); err != nil {
			t.Fatal(err)
		}
		v := rep.Speculative.Verdict
		switch {
		case off && v != nil:
			t.Errorf("--speculation-verdict=false: verdict %+v", v)
		case !off && (v == nil || v.LowLoad == nil || !(v.LowLoad.SpeedupRatio < 1) || v.LowLoad.BreakEvenRate == nil):
			t.Errorf("verdict %+v: want a slow-down at 5%% acceptance and a break-even rate", v)
		}
	}
	code, out, _ := runCLI(t, args[:len(args)-6]...)
	if code != 0 || strings.Contains(out, `"verdict"`) {
		t.Errorf("without speculation: exit %d, a verdict in the report", code)
	}
}
