package plan

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/headroom-sim/headroom/internal/study/scenario"
	"github.com/headroom-sim/headroom/sim"
	"github.com/headroom-sim/headroom/sim/engine"
	"github.com/headroom-sim/headroom/sim/workload"
)

// longPrompts is a prefill-heavy workload with an SLA on both phases.
func longPrompts(requests int) scenario.Scenario {
	s := small(requests)
	s.Workload.Arrival.RateRPS = 6
	s.Workload.InputTokens = workload.LengthSpec{Type: workload.LengthFixed, Value: 3000}
	s.Workload.OutputTokens = workload.LengthSpec{Type: workload.LengthFixed, Value: 128}
	s.Engine.MaxModelLen = 4096
	s.SLA = &sim.SLA{TTFTMS: map[string]float64{"p99": 600}, TPOTMS: map[string]float64{"p99": 12}}
	return s
}

func TestConfigScenario(t *testing.T) {
	base := longPrompts(10)
	lat := 3.0
	base.Disaggregation = &scenario.DisaggregationSpec{
		Prefill:    scenario.PoolSpec{Router: sim.RouterLeastOutstanding},
		KVTransfer: scenario.KVTransferSpec{Link: "roce-400", LatencyUS: &lat},
	}
	agg := Config{GPU: "h200", TP: 2, Replicas: 3}.Scenario(base)
	if agg.GPU != "h200" || agg.TP != 2 || agg.Replicas != 3 || agg.Disaggregation != nil {
		t.Errorf("aggregated shape: %s tp%d ×%d, disaggregation %+v", agg.GPU, agg.TP, agg.Replicas, agg.Disaggregation)
	}
	sh := DisaggShape{Prefill: PoolShape{"h100-sxm", 1, 2}, Decode: PoolShape{"h200", 2, 1}}
	d := Config{Disaggregation: &sh}.Scenario(base)
	p, q := d.Pool(scenario.PoolPrefill), d.Pool(scenario.PoolDecode)
	if p.GPU != "h100-sxm" || p.TP != 1 || p.Replicas != 2 || p.Router != sim.RouterLeastOutstanding || q.GPU != "h200" || q.TP != 2 || q.Replicas != 1 {
		t.Errorf("pools: prefill %s tp%d ×%d %s, decode %s tp%d ×%d", p.GPU, p.TP, p.Replicas, p.Router, q.GPU, q.TP, q.Replicas)
	}
	if k := d.Disaggregation.KVTransfer; k.Link != "roce-400" || *k.LatencyUS != 3 {
		t.Errorf("the scenario's link settings were lost: %+v", k)
	}
	if base.Disaggregation.Prefill.GPU != "" {
		t.Error("the base scenario was changed")
	}
}

// The plan ranks disaggregated clusters (homogeneous and H100 prefill
// with H200 decode) with the aggregated ones, judged as they are: for each
// pair of pool types the fewest replicas that hold the SLA at the
// required headroom (qualifying), and fewer that hold it at the target
// only; one fewer replica in either pool misses the SLA at that load.
func TestPlanDisaggregatedCandidates(t *testing.T) {
	if testing.Short() {
		t.Skip("a plan of many simulations: run without -short")
	}
	r := runner(t)
	base := longPrompts(600)
	base.Workload.Arrival.RateRPS = 14
	spec := PlanSpec{Scenario: base, GPUs: []string{"h100-sxm"}, TPs: []int{1}, MaxReplicas: 6, SkipHeadroom: true,
		Disaggregation: &DisaggSearch{DecodeGPUs: []string{"h100-sxm", "h200"}}}
	res, err := r.Plan(context.Background(), spec, nil)
	if err != nil {
		t.Fatal(err)
	}
	var agg, dis []Candidate
	qualifying := map[string]int{}
	for _, c := range res.Candidates {
		if c.Disaggregation == nil {
			agg = append(agg, c)
			continue
		}
		dis = append(dis, c)
		if c.Qualifies {
			qualifying[c.Disaggregation.Prefill.GPU+"/"+c.Disaggregation.Decode.GPU]++
		}
	}
	if len(agg) == 0 || len(dis) == 0 || qualifying["h100-sxm/h100-sxm"] != 1 || qualifying["h100-sxm/h200"] != 1 || len(res.Missed) != 0 {
		t.Fatalf("%d aggregated and %d disaggregated candidates, qualifying pairs %v, want one qualifying per pair of pool types: %+v (missed %+v)",
			len(agg), len(dis), qualifying, res.Candidates, res.Missed)
	}
	// 3,000-token prompts at 14 req/s: 2 H100 prefill replicas feed 1 H100
	// decode replica within the SLA at the target.
	found := false
	for _, c := range dis {
		sh := c.Disaggregation
		found = found || *sh == DisaggShape{Prefill: PoolShape{"h100-sxm", 1, 2}, Decode: PoolShape{"h100-sxm", 1, 1}}
	}
	if !found {
		t.Errorf("no candidate P h100-sxm TP1×2 + D h100-sxm TP1×1: %+v", dis)
	}
	if rec := res.Recommendation; rec == nil || !res.Candidates[0].Recommended || res.Candidates[0].CostPerHourUSD > agg[0].CostPerHourUSD && agg[0].Qualifies {
		t.Errorf("the recommendation %+v is not the cheapest qualifying candidate", rec)
	}
	var q []Candidate
	for _, c := range res.Candidates {
		if c.Qualifies {
			q = append(q, c)
		}
	}
	for i := 1; i < len(q); i++ {
		if q[i].CostPerHourUSD < q[i-1].CostPerHourUSD {
			t.Error("qualifying candidates are not ranked by cost together")
		}
	}
	cat := r.Env.Catalog
	for _, c := range dis {
		sh := c.Disaggregation
		pg, _ := cat.GPU(sh.Prefill.GPU)
		dg, _ := cat.GPU(sh.Decode.GPU)
		gpus := sh.Prefill.Replicas + sh.Decode.Replicas
		cost := float64(sh.Prefill.Replicas)*pg.PricePerGPUHourUSD + float64(sh.Decode.Replicas)*dg.PricePerGPUHourUSD
		if !c.MeetsSLA || c.GPUs != gpus || math.Abs(c.CostPerHourUSD-cost) > 1e-9 {
			t.Errorf("%s: meets %v, %d GPUs $%.2f/h; want met, %d GPUs, $%.2f/h", sh, c.MeetsSLA, c.GPUs, c.CostPerHourUSD, gpus, cost)
		}
		// It holds the SLA at the required headroom exactly when it
		// qualifies.
		at := withLoad(base, DimRate, base.Workload.Arrival.RateRPS*res.RequiredHeadroom)
		if out := r.Run(context.Background(), c.Config.Scenario(at)); out.Err != nil || out.Report.SLA.Met != c.Qualifies {
			t.Errorf("%s qualifies %v, but at %.3g× the target: %v, %v", sh, c.Qualifies, res.RequiredHeadroom, out.Err, out.Report != nil && out.Report.SLA.Met)
		}
		load := base.Workload.Arrival.RateRPS
		if c.Qualifies {
			load *= res.RequiredHeadroom
		}
		for _, fewer := range []DisaggShape{
			{Prefill: PoolShape{sh.Prefill.GPU, 1, sh.Prefill.Replicas - 1}, Decode: sh.Decode},
			{Prefill: sh.Prefill, Decode: PoolShape{sh.Decode.GPU, 1, sh.Decode.Replicas - 1}},
		} {
			if fewer.Prefill.Replicas < 1 || fewer.Decode.Replicas < 1 {
				continue
			}
			out := r.Run(context.Background(), Config{Disaggregation: &fewer}.Scenario(withLoad(base, DimRate, load)))
			if out.Err != nil {
				t.Fatal(out.Err)
			}
			if out.Report.SLA.Met {
				t.Errorf("%s meets the SLA at %g req/s with fewer replicas than %s", &fewer, load, sh)
			}
		}
		t.Logf("%s (qualifies %v): $%.2f/h, TTFT p99 %.0f ms, TPOT p99 %.1f ms", sh, c.Qualifies, c.CostPerHourUSD, c.TTFTP99MS, c.TPOTP99MS)
	}
	for _, c := range agg {
		t.Logf("aggregated %s (qualifies %v): $%.2f/h, TTFT p99 %.0f ms, TPOT p99 %.1f ms", Label(c.Config), c.Qualifies, c.CostPerHourUSD, c.TTFTP99MS, c.TPOTP99MS)
	}
	t.Log(res.Summary)
}

// Given shapes run as they are, and pairs that cannot start are pruned
// with their shape.
func TestPlanDisaggregatedShapesAndPruning(t *testing.T) {
	r := runner(t)
	s := longPrompts(100)
	s.Model = "llama-3.1-70b"
	s.SLA = &sim.SLA{E2EMS: map[string]float64{"p99": 1e6}}
	sh := DisaggShape{Prefill: PoolShape{"h100-sxm", 4, 1}, Decode: PoolShape{"h200", 2, 1}}
	bad := DisaggShape{Prefill: PoolShape{"l4", 1, 1}, Decode: PoolShape{"h200", 2, 1}}
	res, err := r.Plan(context.Background(), PlanSpec{Scenario: s, Configs: []Config{{Disaggregation: &sh}, {Disaggregation: &bad}}, SkipHeadroom: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Candidates) != 1 || *res.Candidates[0].Disaggregation != sh || res.Candidates[0].GPUs != 6 {
		t.Errorf("candidates %+v, want the given shape on 6 GPUs", res.Candidates)
	}
	if len(res.Pruned) != 1 || res.Pruned[0].Disaggregation == nil || *res.Pruned[0].Disaggregation != bad {
		t.Errorf("pruned %+v, want the L4 prefill pool", res.Pruned)
	}
}

// A sweep may mix aggregated and disaggregated points: every figure is
// in its own column, and a point without it has null there.
func TestSweepAlignsDisaggregatedColumns(t *testing.T) {
	r := runner(t)
	base := longPrompts(60)
	res, err := r.Sweep(context.Background(), SweepSpec{Scenario: base, Axes: []Axis{
		{Path: "disaggregation", Values: []any{nil, map[string]any{"decode": map[string]any{"gpu": "h200"}}}},
	}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Points) != 2 || res.Points[0].Error != "" || res.Points[1].Error != "" {
		t.Fatalf("points %+v", res.Points)
	}
	col := func(name string) int {
		i := slices.Index(res.Columns, name)
		if i < 0 {
			t.Fatalf("no column %s", name)
		}
		return i
	}
	x, ttft := col("disaggregation.kv_transfer.transfers"), col("ttft_ms.p99")
	if !math.IsNaN(res.Points[0].Metrics[x]) || res.Points[1].Metrics[x] != 60 {
		t.Errorf("transfers: aggregated %g, disaggregated %g; want NaN and 60", res.Points[0].Metrics[x], res.Points[1].Metrics[x])
	}
	for i, sc := range []scenario.Scenario{base, Config{Disaggregation: &DisaggShape{Prefill: PoolShape{"h100-sxm", 1, 1}, Decode: PoolShape{"h200", 1, 1}}}.Scenario(base)} {
		out := r.Run(context.Background(), sc)
		if out.Err != nil {
			t.Fatal(out.Err)
		}
		if got := res.Points[i].Metrics[ttft]; got != out.Report.TTFTMS.P99 {
			t.Errorf("point %d: ttft_ms.p99 column %g, the run's %g", i, got, out.Report.TTFTMS.P99)
		}
	}
	b, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	var back SweepResult
	if err := json.Unmarshal(b, &back); err != nil || !math.IsNaN(back.Points[0].Metrics[x]) || back.Points[1].Metrics[x] != 60 {
		t.Errorf("JSON round trip: %v, %v", err, back.Points)
	}
}

// A disaggregated recommendation is named by its pools in the sentence
// and the runners-up, and a rate profile is not played through it (the
// autoscaler scales one pool of replicas): the plan says so in a note.
func TestPlanDisaggregatedRecommendation(t *testing.T) {
	r := runner(t)
	s := stepProfile()
	s.Workload.Requests = 200
	s.SLA = &sim.SLA{E2EMS: map[string]float64{"p99": 1e6}}
	one := DisaggShape{Prefill: PoolShape{"h100-sxm", 1, 1}, Decode: PoolShape{"h200", 1, 1}}
	two := DisaggShape{Prefill: PoolShape{"h100-sxm", 1, 2}, Decode: PoolShape{"h200", 1, 2}}
	res, err := r.Plan(context.Background(), PlanSpec{Scenario: s, SkipHeadroom: true,
		Configs: []Config{{GPU: "h100-sxm", TP: 1, Replicas: 8}, {Disaggregation: &one}, {Disaggregation: &two}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	rec := res.Recommendation
	if rec == nil || rec.Disaggregation == nil || *rec.Disaggregation != one || rec.GPUs != 2 || rec.GPUName != "NVIDIA H100 SXM5 80GB + NVIDIA H200 SXM 141GB" {
		t.Fatalf("recommendation %+v, want %s on 2 GPUs", rec, &one)
	}
	if want := "2 GPUs disaggregated, P h100-sxm TP1×1 + D h200 TP1×1 (prefill on NVIDIA H100 SXM5 80GB, decode on NVIDIA H200 SXM 141GB): $"; !strings.HasPrefix(rec.Sentence, want) {
		t.Errorf("sentence %q, want it to start %q", rec.Sentence, want)
	}
	labels := map[string]RunnerUp{}
	for _, ru := range res.RunnersUp {
		labels[ru.Label] = ru
	}
	if ru, ok := labels["P h100-sxm TP1×2 + D h200 TP1×2"]; !ok || ru.LostOn != LostCost || ru.Disaggregation == nil || *ru.Disaggregation != two || ru.GPU != "h200" {
		t.Errorf("runners-up %+v, want the larger disaggregated shape, lost on cost", res.RunnersUp)
	}
	if ru, ok := labels["h100-sxm TP1×8"]; !ok || ru.LostOn != LostCost || ru.Disaggregation != nil {
		t.Errorf("runners-up %+v, want the aggregated shape, lost on cost", res.RunnersUp)
	}
	if res.Day != nil || !slices.ContainsFunc(res.Notes, func(n string) bool {
		return strings.Contains(n, "not played through the recommendation: it is disaggregated")
	}) {
		t.Errorf("day %+v, notes %q: want no day and a note", res.Day, res.Notes)
	}
}

// A plan with disaggregated shapes refuses speculative decoding before
// it simulates anything, naming the scenario's field; turned off (no
// drafts), it is no speculation.
func TestPlanDisaggregatedRefusesSpeculation(t *testing.T) {
	r := runner(t)
	s := longPrompts(20)
	s.Engine.Speculative = &engine.Speculative{Method: engine.SpecNgram, NumSpeculativeTokens: 3}
	sh := DisaggShape{Prefill: PoolShape{"h100-sxm", 1, 1}, Decode: PoolShape{"h100-sxm", 1, 1}}
	for _, spec := range []PlanSpec{
		{Scenario: s, GPUs: []string{"h100-sxm"}, TPs: []int{1}, Disaggregation: &DisaggSearch{}},
		{Scenario: s, Configs: []Config{{Disaggregation: &sh}}},
	} {
		_, err := r.Plan(context.Background(), spec, nil)
		var fe *scenario.FieldError
		if !errors.As(err, &fe) || fe.Field != "engine.speculative" || !strings.Contains(fe.Reason, "disaggregation") {
			t.Errorf("%v, want a FieldError on engine.speculative", err)
		}
	}
	s.Engine.Speculative.NumSpeculativeTokens = 0
	if _, err := r.Plan(context.Background(), PlanSpec{Scenario: s, Configs: []Config{{Disaggregation: &sh}}, SkipHeadroom: true}, nil); err != nil {
		t.Errorf("speculation off: %v", err)
	}
}

// A disaggregated candidate's headroom is searched on the plan's own
// workload, as an aggregated one's: the shape holds the SLA at its
// headroom × the target and misses it 5% above (the search's precision).
func TestPlanDisaggregatedHeadroom(t *testing.T) {
	r := runner(t)
	base := longPrompts(300)
	sh := DisaggShape{Prefill: PoolShape{"h100-sxm", 1, 1}, Decode: PoolShape{"h100-sxm", 1, 1}}
	res, err := r.Plan(context.Background(), PlanSpec{Scenario: base, Configs: []Config{{Disaggregation: &sh}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Candidates) != 1 {
		t.Fatalf("candidates %+v, missed %+v", res.Candidates, res.Missed)
	}
	c := res.Candidates[0]
	if c.Headroom < 1 || c.HeadroomCapped || c.HeadroomLimiting == "" || c.Qualifies != (c.Headroom >= res.RequiredHeadroom) {
		t.Fatalf("headroom %.3g× (capped %v, limiting %q, qualifies %v)", c.Headroom, c.HeadroomCapped, c.HeadroomLimiting, c.Qualifies)
	}
	for _, x := range []struct {
		m    float64
		want bool
	}{{c.Headroom, true}, {c.Headroom * (1 + headroomTolerance), false}} {
		out := r.Run(context.Background(), c.Config.Scenario(withLoad(base, DimRate, x.m*base.Workload.Arrival.RateRPS)))
		if out.Err != nil || out.Report.SLA.Met != x.want {
			t.Errorf("at %.3g× the target: %v, met %v; want %v", x.m, out.Err, out.Report != nil && out.Report.SLA.Met, x.want)
		}
	}
	t.Logf("%s: headroom %.3g× (%s), qualifies %v", &sh, c.Headroom, c.HeadroomLimiting, c.Qualifies)
}
