package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// exampleSilicon is seven real rows of the aiconfigurator-silicon table.
const exampleSilicon = "../../testdata/aiconfigurator-silicon/silicon_sample.csv"

type closedLoopJSON struct {
	Run      string
	Basis    string
	Model    string
	GPU      string
	Requests int
	Metrics  []struct {
		Name                string
		Measured, Predicted float64
	}
	Layout *struct {
		TP, DP int
		MoETP  int `json:"moe_tp"`
		MoEEP  int `json:"moe_ep"`
	}
	ClosedLoop *struct {
		Concurrency    int
		WarmupRequests int `json:"warmup_requests"`
	} `json:"closed_loop"`
	Error string
}

func TestValidateClosedLoopTable(t *testing.T) {
	code, out, stderr := runCLI(t, "validate", "--run", exampleSilicon, "--output", "json", "--workers", "1")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var rows []closedLoopJSON
	if err := json.Unmarshal([]byte(out), &rows); err != nil || len(rows) != 7 {
		t.Fatalf("%d rows, %v", len(rows), err)
	}
	for _, r := range rows {
		if r.Basis != "aggregate" || r.Error != "" || len(r.Metrics) != 2 || r.Metrics[0].Name != "ttft_ms.mean" || r.Metrics[1].Name != "tpot_ms.mean" ||
			!(r.Metrics[0].Predicted > 0) || !(r.Metrics[1].Predicted > 0) || r.Layout == nil || r.ClosedLoop == nil {
			t.Errorf("row %+v", r)
		}
	}
	// Rows in the table's order, with its measured means; the DP×EP row
	// keeps batch_size 4 per rank × 4 ranks in flight, on its tp_size 4
	// GPUs: four attention ranks of one, the experts over the four.
	g, dpep := rows[6], rows[0]
	if g.Run != "2026_03_25_gpt_oss_120b_h200_sxm_vllm_fp4_agg_1024x1024_c4_tp1_0_ep1_0_199" || g.Model != "gpt-oss-120b" ||
		g.Metrics[0].Measured != 85.73688613250852 || g.Metrics[1].Measured != 6.331747622917966 {
		t.Errorf("gpt-oss row %+v", g)
	}
	if dpep.Run != "minimaxm2_5_b200_vllm_fp8_agg_1024x1024_c16_cfg691" || *dpep.Layout != (struct {
		TP, DP int
		MoETP  int `json:"moe_tp"`
		MoEEP  int `json:"moe_ep"`
	}{1, 4, 1, 4}) || dpep.ClosedLoop.Concurrency != 16 || dpep.ClosedLoop.WarmupRequests != 32 || dpep.Requests != 320 {
		t.Errorf("DP×EP row %+v %+v %+v", dpep, dpep.Layout, dpep.ClosedLoop)
	}
	// Parallel replays give the same figures as one at a time.
	if code, par, _ := runCLI(t, "validate", "--run", exampleSilicon, "--output", "json", "--workers", "3"); code != 0 || par != out {
		t.Errorf("--workers 3 differs from --workers 1 (exit %d)", code)
	}

	code, out, _ = runCLI(t, "validate", "--run", exampleSilicon)
	for _, want := range []string{"silicon_sample.csv (aiconfigurator-silicon): 7 closed-loop runs, 7 simulated\n", "all (bars 20% / 8%)", "gpt-oss-120b on h200 ",
		"per layout:", "minimax-m2.5               b200  1   4   1×4", "worst 10 runs by TTFT error:", "worst 10 runs by TPOT error:", "TP1 DP4, experts 1×4"} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	code, out, _ = runCLI(t, "validate", "--run", exampleSilicon, "--output", "markdown")
	for _, want := range []string{"## Closed-loop runs: silicon_sample.csv\n", "`silicon_sample.csv` (aiconfigurator-silicon): 7 closed-loop runs, 7 simulated.",
		"### Per model and GPU", "| group | runs | TTFT signed median | TTFT median \\|error\\| |", "| gpt-oss-120b on h200 | 1 | ", "### Per layout", "| minimax-m2.5 | b200 | 1 | 4 | 1×4 | 1 | ", "### The 10 worst runs by TTFT error"} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("markdown lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "## Runs replayed request by request") {
		t.Error("markdown of a table alone has a request-level section")
	}
}

func TestValidateFindsTables(t *testing.T) {
	code, out, stderr := runCLI(t, "validate", "--runs-from", "../../testdata", "--output", "markdown")
	if code != 0 || !strings.Contains(out, "## Runs replayed request by request") || !strings.Contains(out, "RTX4090/Llama-3.1-8B") ||
		!strings.Contains(out, "## Closed-loop runs: silicon_sample.csv") {
		t.Errorf("exit %d: %s\n%s", code, out, stderr)
	}
}

func TestValidateTableErrors(t *testing.T) {
	dir := t.TempDir()
	head, err := os.ReadFile(exampleSilicon)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(head), "\n")
	write := func(name string, rows ...string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(lines[0]+strings.Join(rows, "")), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	unknown := strings.Replace(lines[7], "openai/gpt-oss-120b", "nobody/unknown-model", 1)
	bad := strings.Replace(lines[7], ",1024,1024,", ",1024,-5,", 1)
	for _, c := range []struct {
		name     string
		args     []string
		code     int
		out, err string
	}{
		{"workers", []string{"--run", exampleSilicon, "--workers", "-1"}, 2, "", "--workers: -1 is not in [0, 256]"},
		{"bad row", []string{"--run", write("bad.csv", lines[1], bad)}, 0, "2 closed-loop runs, 1 simulated, 1 not read", `bad.csv: row 3 (2026_03_25_gpt_oss_120b_h200_sxm_vllm_fp4_agg_1024x1024_c4_tp1_0_ep1_0_199) skipped: field osl: "-5" is not a number`},
		{"only a bad row", []string{"--run", write("bad1.csv", bad)}, 2, "", `no usable row (1 skipped; the first: row 2`},
		{"no known row", []string{"--run", write("unknown.csv", unknown)}, 2, "", "no row names a catalog model and GPU"},
		{"a row skipped", []string{"--run", write("some.csv", lines[7], unknown)}, 0, "1 skipped (model or GPU not in the catalog)", "skipped 1 of 2 rows: model \"nobody/unknown-model\""},
		{"plot without a table", []string{"--run", exampleLLMServingSim, "--plot", filepath.Join(dir, "a.svg")}, 2, "", "--plot: no table of closed-loop runs"},
		{"nothing below", []string{"--runs-from", dir + "/none"}, 2, "", "--runs-from"},
	} {
		t.Run(c.name, func(t *testing.T) {
			// Called directly, to see the error value as report maps it.
			var out, errb strings.Builder
			err := runValidate(t.Context(), &env{getenv: func(string) string { return "" }, stdin: strings.NewReader(""), stdout: &out, stderr: &errb}, c.args)
			code := report(&errb, "headroom validate", err)
			if code != c.code || !strings.Contains(out.String(), c.out) || !strings.Contains(errb.String(), c.err) {
				t.Errorf("exit %d, want %d\nstdout %s\nstderr %s\nwant %q / %q", code, c.code, out.String(), errb.String(), c.out, c.err)
			}
		})
	}
}
