package main

import (
	"encoding/json"
	"strings"
	"testing"
)

var planSLA = []string{"--set", "sla.ttft_ms.p99=1000", "--set", "sla.tpot_ms.p99=40"}

// TestPlanGolden pins plan's answer, as a table and as JSON, for a small
// fixed-rate plan and for a rate profile played through its
// recommendation (deterministic: every probe uses the scenario's seed).
func TestPlanGolden(t *testing.T) {
	if testing.Short() {
		t.Skip("plans: run without -short")
	}
	fixed := append([]string{"plan", "--requests", "300", "--rate-rps", "12", "--gpus", "h100-sxm,l40s,l4", "--tps", "1,2", "--max-replicas", "4"}, planSLA...)
	day := append([]string{"plan", "--rate-profile", "testdata/step-profile.csv", "--rate-profile-trace", ""}, planSLA...)
	day = append(day[:3], append([]string{"--gpus", "h100-sxm", "--tps", "1", "--window-s", "120"}, day[5:]...)...)
	for _, c := range []struct {
		golden string
		args   []string
	}{
		{"plan-fixed.txt", fixed},
		{"plan-fixed.json", append(append([]string{}, fixed...), "--output", "json")},
		{"plan-day.txt", day},
		{"plan-day.json", append(append([]string{}, day...), "--output", "json")},
	} {
		t.Run(c.golden, func(t *testing.T) {
			code, out, stderr := runCLI(t, c.args...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			if strings.HasSuffix(c.golden, ".txt") && !strings.HasPrefix(out, "Recommendation: ") {
				t.Errorf("the answer does not come first:\n%s", out)
			}
			if strings.HasSuffix(c.golden, ".json") {
				var v struct {
					Recommendation *struct{ Sentence string } `json:"recommendation"`
					Summary        string                     `json:"summary"`
					Missed, Pruned []any
					RunnersUp      []struct {
						LostOn string `json:"lost_on"`
						Why    string `json:"why"`
					} `json:"runners_up"`
				}
				if err := json.Unmarshal([]byte(out), &v); err != nil {
					t.Fatal(err)
				}
				if v.Recommendation == nil || v.Recommendation.Sentence != v.Summary || v.Missed == nil || v.Pruned == nil {
					t.Errorf("recommendation %+v, summary %q, missed %v, pruned %v", v.Recommendation, v.Summary, v.Missed, v.Pruned)
				}
				for _, ru := range v.RunnersUp {
					if ru.LostOn == "" || ru.Why == "" {
						t.Errorf("runner-up without a reason: %+v", ru)
					}
				}
			}
			golden(t, c.golden, out)
		})
	}
}

// TestPlanFlagErrors: plan's own flags refuse what they cannot use,
// naming the flag.
func TestPlanFlagErrors(t *testing.T) {
	for _, c := range []struct {
		args []string
		msg  string
	}{
		{[]string{"--headroom", "0.5"}, "--headroom: must be in [1, 100], got 0.5"},
		{[]string{"--target-utilization", "1.5"}, "--target-utilization: must be in (0, 1], got 1.5"},
		{[]string{"--time-scale", "24"}, "--time-scale: the scenario has no rate profile"},
		{[]string{"--rate-profile", "nope.csv"}, "--rate-profile: open nope.csv"},
		{[]string{"--rate-profile", "testdata/step-profile.csv", "--rate-profile-trace", "../../examples/azure-conv-head.csv"}, "give --rate-profile or --rate-profile-trace, not both"},
		{[]string{"--rate-profile-trace", "trace.txt"}, "--trace-format: say the format of trace.txt"},
		{[]string{"--rate-profile", "testdata/step-profile.csv", "--window-s", "0"}, "--window-s: must be in [1, 86400] s, got 0"},
		{[]string{"--rate-profile", "testdata/step-profile.csv", "--rate-scale", "-1"}, "--rate-scale: must be in (0, 1e6], got -1"},
		{[]string{"--rate-profile", "../../examples/poisson.yaml"}, "--rate-profile: ../../examples/poisson.yaml"},
	} {
		code, _, stderr := runCLI(t, append(append([]string{"plan"}, planSLA...), c.args...)...)
		if code != 2 || !strings.Contains(stderr, c.msg) || strings.Count(strings.TrimSpace(stderr), "\n") > 0 {
			t.Errorf("%v: exit %d, stderr %q; want 2 and %q", c.args, code, stderr, c.msg)
		}
	}
}

// TestPlanProfileFromTrace: --rate-profile-trace counts the trace's
// arrivals per window, stretched by --time-scale, and takes its lengths.
func TestPlanProfileFromTrace(t *testing.T) {
	if testing.Short() {
		t.Skip("a plan: run without -short")
	}
	code, out, stderr := runCLI(t, append([]string{"plan", "--output", "json", "--rate-profile-trace", "../../examples/azure-conv-head.csv",
		"--time-scale", "10", "--window-s", "600", "--gpus", "h100-sxm", "--tps", "1", "--no-headroom"}, planSLA...)...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var v struct {
		Notes []string
		Day   struct {
			DurationS   float64 `json:"duration_s"`
			RateProfile []struct {
				AtS float64 `json:"at_s"`
			} `json:"rate_profile"`
		}
	}
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatal(err)
	}
	// The head of the trace spans 424 s: 70.7 minutes at 10×, in 7 windows
	// of 10 minutes (the last 42.6 s join the last window).
	if n := len(v.Day.RateProfile); n != 7 || v.Day.RateProfile[1].AtS != 600 || v.Day.DurationS < 3000 {
		t.Errorf("%d windows over %g s: %+v", n, v.Day.DurationS, v.Day.RateProfile)
	}
	if !strings.Contains(strings.Join(v.Notes, "\n"), "lengths follow the trace's") {
		t.Errorf("notes %q", v.Notes)
	}
}
