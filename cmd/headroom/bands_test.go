package main

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/headroom-sim/headroom/sim"
)

// TestSimulateBands: the table shows each headline figure with its 80%
// band ("28.4 (22.3–35.0)"), the regime and what is outside the
// validation runs; the JSON keeps the point values where they were and
// adds the bands beside them.
func TestSimulateBands(t *testing.T) {
	args := []string{"simulate", "--gpu", "a100-80gb", "--requests", "60", "--rate-rps", "4", "--input-tokens", "1000", "--output-tokens", "200"}
	code, out, stderr := runCLI(t, args...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	band := regexp.MustCompile(`TTFT\s+\d+\.\d \(\d+\.\d–\d+\.\d\)\s+\d+\.\d \(\d+\.\d–\d+\.\d\)`)
	for _, want := range []*regexp.Regexp{band, regexp.MustCompile(`Judged in\s+loop open, load light, model_class dense`),
		regexp.MustCompile(`Outside\s+gpu a100-80gb: no validation run used this GPU`), regexp.MustCompile(`bands widened ×1\.5`)} {
		if !want.MatchString(out) {
			t.Errorf("the table has no %q:\n%s", want, out)
		}
	}
	code, js, stderr := runCLI(t, append(args, "--output", "json")...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var rep sim.Report
	if err := json.Unmarshal([]byte(js), &rep); err != nil {
		t.Fatal(err)
	}
	in := rep.TTFTMSInterval.At("mean")
	if in == nil || rep.TTFTMS.Mean <= 0 || rep.Uncertainty == nil || rep.Uncertainty.WidenRatio != 1.5 {
		t.Fatalf("ttft_ms.mean %v, band %+v, uncertainty %+v", rep.TTFTMS.Mean, in, rep.Uncertainty)
	}
	if !strings.Contains(out, band.FindString(out)) || !strings.Contains(in.Pool, "ttft_ms") {
		t.Errorf("pool %q", in.Pool)
	}
}

// TestPlanConfidenceFlag: the sentence says at which confidence the plan
// holds; a confidence the error model has no level for is a usage error
// naming the flag.
func TestPlanConfidenceFlag(t *testing.T) {
	base := []string{"plan", "--model", "llama-3.1-8b", "--gpus", "h100-sxm", "--tps", "1", "--rate-rps", "10", "--requests", "200",
		"--set", "sla.ttft_ms.p99=500", "--set", "sla.tpot_ms.p99=30", "--no-headroom"}
	code, out, stderr := runCLI(t, append(base, "--confidence", "0.9")...)
	if code != 0 || !strings.Contains(out, "every SLA bound holds at 90% confidence") {
		t.Errorf("exit %d: %s%s", code, out, stderr)
	}
	code, _, stderr = runCLI(t, append(base, "--confidence", "0.3")...)
	if code != 2 || !strings.Contains(stderr, "--confidence") {
		t.Errorf("--confidence 0.3: exit %d, %s", code, stderr)
	}
}
