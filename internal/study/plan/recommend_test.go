package plan

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/headroom-sim/headroom/sim"
)

// cand is a hand-made candidate: cost, headroom, whether it qualifies,
// and the binding TTFT p99 (limit 1000 ms) it shows at the target.
func cand(gpu string, tp, replicas int, price, headroom, ttft float64, qualifies bool) Candidate {
	return Candidate{Config: Config{GPU: gpu, TP: tp, Replicas: replicas}, GPUs: tp * replicas, PricePerGPUHourUSD: price, CostPerHourUSD: price * float64(tp*replicas),
		MeetsSLA: true, Qualifies: qualifies, Headroom: headroom, HeadroomLimiting: "ttft_ms.p99",
		Checks: []sim.SLACheck{{Metric: "ttft_ms", Quantile: "p99", LimitMS: 1000, ValueMS: ttft, Met: true}, {Metric: "tpot_ms", Quantile: "p99", LimitMS: 100, ValueMS: 20, Met: true}}}
}

// TestRecommendTiesGoToLowerLatency is the case: at the same
// $20/h, h100 TP8×1 (TTFT p99 400 ms, 1.375×) and TP4×2 (300 ms, 1.75×)
// both qualify; the cheaper l40s TP1×2 does not (1.06×). TP4×2 wins the
// tie on the binding bound; TP8×1 loses on latency, is not on the front;
// l40s loses on headroom though cheaper; a dearer one loses on cost.
func TestRecommendTiesGoToLowerLatency(t *testing.T) {
	res := &PlanResult{Dimension: DimRate, TargetLoad: 10, Candidates: []Candidate{
		cand("h100-sxm", 8, 1, 2.5, 1.375, 400, true),
		cand("l40s", 1, 2, 1, 1.06, 900, false),
		cand("h100-sxm", 4, 2, 2.5, 1.75, 300, true),
		cand("b200", 8, 1, 5.5, 3, 150, true),
	}, Missed: []Candidate{}, Pruned: []Pruned{{GPU: "l4", TP: 1, Reason: "does not fit: weights need 131.45 GiB per GPU"}}}
	spec := &PlanSpec{Headroom: 1.3, MaxReplicas: 16}
	if err := runner(t).recommend(spec, res); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range res.Candidates {
		got = append(got, Label(c.Config)+":"+c.LostOn)
	}
	want := []string{"h100-sxm TP4×2:", "h100-sxm TP8×1:latency", "b200 TP8×1:cost", "l40s TP1×2:headroom"}
	if !slices.Equal(got, want) {
		t.Errorf("order and reasons %v\nwant %v", got, want)
	}
	rec := res.Recommendation
	if rec == nil || rec.Config != (Config{GPU: "h100-sxm", TP: 4, Replicas: 2}) || !res.Candidates[0].Recommended || rec.SustainedLoad != 17.5 {
		t.Fatalf("recommendation %+v", rec)
	}
	for _, s := range []string{"8 × NVIDIA H100 SXM5 80GB as 2 replicas of TP4", "$20.00/h", "sustains 17.5 req/s within the SLA (1.75× headroom)", "limited by TTFT p99"} {
		if !strings.Contains(rec.Sentence, s) {
			t.Errorf("sentence %q lacks %q", rec.Sentence, s)
		}
	}
	pareto := map[string]bool{}
	for _, c := range res.Candidates {
		pareto[Label(c.Config)] = c.Pareto
	}
	if !pareto["h100-sxm TP4×2"] || pareto["h100-sxm TP8×1"] || !pareto["b200 TP8×1"] || pareto["l40s TP1×2"] {
		t.Errorf("Pareto front %v", pareto)
	}
	if res.ParetoMetric != "ttft_ms.p99" || res.ParetoLimitMS != 1000 || res.Candidates[0].ParetoLatencyMS != 300 {
		t.Errorf("binding %s (limit %g), recommended at %g ms", res.ParetoMetric, res.ParetoLimitMS, res.Candidates[0].ParetoLatencyMS)
	}
	if l := res.Candidates[3].WhyNot; !strings.Contains(l, "$18.00/h cheaper, but sustains only") || !strings.Contains(l, "1.06×") {
		t.Errorf("headroom loser says %q", l)
	}
	var lost []string
	for _, ru := range res.RunnersUp {
		lost = append(lost, ru.LostOn)
	}
	if !slices.Equal(lost, []string{LostLatency, LostCost, LostHeadroom, LostNoFit}) {
		t.Errorf("runners-up lost on %v", lost)
	}
}

// TestRecommendNone: nothing qualifies; the summary names the cheapest
// that meets the SLA at the target and its headroom.
func TestRecommendNone(t *testing.T) {
	res := &PlanResult{Dimension: DimRate, TargetLoad: 10, Candidates: []Candidate{cand("l40s", 1, 2, 1, 1.1, 900, false)}, Missed: []Candidate{}, Pruned: []Pruned{}}
	if err := runner(t).recommend(&PlanSpec{Headroom: 1.5, MaxReplicas: 2}, res); err != nil {
		t.Fatal(err)
	}
	if res.Recommendation != nil || !strings.Contains(res.Summary, "l40s TP1×2") || !strings.Contains(res.Summary, "1.10×") {
		t.Errorf("recommendation %+v, summary %q", res.Recommendation, res.Summary)
	}
	b, _ := json.Marshal(res)
	for _, k := range []string{`"recommendation":null`, `"missed":[]`, `"pruned":[]`, `"runners_up":[`} {
		if !strings.Contains(string(b), k) {
			t.Errorf("JSON lacks %s", k)
		}
	}
}

// TestPlanRecommendation: a real plan of Llama-3.1-70B at 2 req/s.
// Whatever is recommended qualifies and comes first; headroom and the SLA
// verdict come from one workload model (every candidate meeting the SLA
// at the target has a headroom of at least 1, and the qualifying ones at
// least the required); max_model_len follows the workload, so H100 TP2
// is not pruned for a 128k context it never needs.
func TestPlanRecommendation(t *testing.T) {
	r := runner(t)
	s := small(400)
	s.Model = "llama-3.1-70b"
	s.Workload.Arrival.RateRPS = 2
	s.SLA = &sim.SLA{TTFTMS: map[string]float64{"p99": 2000}, TPOTMS: map[string]float64{"p99": 80}}
	res, err := r.Plan(context.Background(), PlanSpec{Scenario: s, GPUs: []string{"h100-sxm", "a100-80gb", "l4"}, TPs: []int{1, 2, 4, 8}, MaxReplicas: 4}, nil)
	if err != nil {
		t.Fatal(err)
	}
	rec := res.Recommendation
	if rec == nil || !res.Candidates[0].Recommended || res.Candidates[0].Config != rec.Config || rec.Headroom < 1.3 {
		t.Fatalf("recommendation %+v; first candidate %+v", rec, res.Candidates[0])
	}
	last := 0.0
	for _, c := range res.Candidates {
		if !c.MeetsSLA || c.Headroom < 1 || c.GPUs != c.TP*c.Replicas {
			t.Errorf("%s meets the SLA %v with headroom %.2f", Label(c.Config), c.MeetsSLA, c.Headroom)
		}
		if c.Qualifies {
			if c.Headroom < 1.3 || c.CostPerHourUSD < last {
				t.Errorf("%s qualifies at %.2f×, $%.2f/h after $%.2f/h", Label(c.Config), c.Headroom, c.CostPerHourUSD, last)
			}
			last = c.CostPerHourUSD
		} else if c.Headroom >= 1.3 || c.LostOn != LostHeadroom {
			t.Errorf("%s does not qualify at %.2f× (%s)", Label(c.Config), c.Headroom, c.LostOn)
		}
	}
	for _, p := range res.Pruned {
		if p.GPU == "h100-sxm" && p.TP == 2 {
			t.Errorf("h100-sxm TP2 pruned: %s", p.Reason)
		}
		if p.Reason == "" {
			t.Errorf("%s TP%d pruned without a reason", p.GPU, p.TP)
		}
	}
	if len(res.Notes) == 0 || !strings.Contains(res.Notes[0], "max_model_len defaults to 768 tokens") {
		t.Errorf("notes %q", res.Notes)
	}
}

// TestEarlyStopIsSound: a probe stopped early misses the SLA in the full
// run too, on the bound that stopped it; one that meets it is not
// stopped, and its verdict is the full run's.
func TestEarlyStopIsSound(t *testing.T) {
	r := runner(t)
	for _, c := range []struct {
		gpu  string
		rate float64
		met  bool
	}{{"h100-sxm", 5, true}, {"l4", 30, false}, {"a10g", 12, false}} {
		s := small(600)
		s.GPU = c.gpu
		s.Engine.MaxModelLen = 4096
		s.Workload.Arrival.RateRPS = c.rate
		early, err := r.judge(context.Background(), s, true)
		if err != nil {
			t.Fatal(err)
		}
		full, err := r.judge(context.Background(), s, false)
		if err != nil {
			t.Fatal(err)
		}
		if early.met != c.met || full.met != c.met || early.stopped == c.met {
			t.Fatalf("%s at %g: early %+v, full met %v", c.gpu, c.rate, early, full.met)
		}
		if !c.met {
			val, lim, _ := checkValue(full.rep.SLA.Checks, early.limiting)
			if val <= lim || early.seen >= 600 || early.of != 600 {
				t.Errorf("%s at %g stopped on %s after %d of %d; the full run has %g (limit %g)", c.gpu, c.rate, early.limiting, early.seen, early.of, val, lim)
			}
		}
	}
}

// TestSLAWatchThresholds: a p99 over 10,000 requests breaks once 101 are
// past it (the sorted value at floor(0.99 × 9999) = 9899 and the 100
// above); p50 over 11 once 6 are; a max at the first; a mean once the sum
// so far over n is past the limit.
func TestSLAWatchThresholds(t *testing.T) {
	for _, c := range []struct {
		q        string
		n, after int
	}{{"p99", 10000, 101}, {"p50", 11, 6}, {"max", 50, 1}, {"mean", 10, 3}} {
		stopped := false
		w := newSLAWatch(&sim.SLA{TTFTMS: map[string]float64{c.q: 100}}, c.n, func(error) { stopped = true })
		for i := 1; i <= c.after; i++ {
			if stopped {
				t.Errorf("%s over %d broke after %d requests, want %d", c.q, c.n, i-1, c.after)
				break
			}
			w.sample(sim.RequestSample{TTFTMS: 400, OutputTokens: 2})
		}
		if !stopped || w.broken != "ttft_ms."+c.q {
			t.Errorf("%s over %d: not broken after %d requests past it", c.q, c.n, c.after)
		}
	}
	// Rounding: a value within the report's rounding of the limit does not count.
	w := newSLAWatch(&sim.SLA{TTFTMS: map[string]float64{"max": 100}}, 5, func(error) { t.Error("broke on 100.00004 ms") })
	w.sample(sim.RequestSample{TTFTMS: 100.00004})
}
