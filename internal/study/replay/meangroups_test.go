package replay_test

import (
	"context"
	"errors"
	"math"
	"strings"
	"sync"
	"testing"

	"github.com/headroom-sim/headroom/internal/adapter/measured"
	"github.com/headroom-sim/headroom/internal/study/replay"
)

// mean is a replayed run with its measured and predicted means.
func mean(model, gpu string, tp, dp int, mttft, ttft, mtpot, tpot float64) replay.MeanResult {
	return replay.MeanResult{Run: &measured.Run{Name: model + gpu, TP: tp, DP: dp}, Model: model, GPU: gpu,
		MeasuredTTFTMS: mttft, TTFTMS: ttft, MeasuredTPOT: mtpot, TPOTMS: tpot}
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

func TestGroupMeans(t *testing.T) {
	rs := []replay.MeanResult{
		mean("b-model", "h200", 2, 1, 100, 110, 10, 9),  // +10%, -10%
		mean("a-model", "h100", 1, 1, 100, 150, 10, 10), // +50%, 0
		mean("b-model", "h200", 1, 1, 100, 80, 10, 12),  // -20%, +20%
		mean("b-model", "h200", 2, 1, 200, 260, 20, 21), // +30%, +5%
		{Run: &measured.Run{TP: 2}, Model: "b-model", GPU: "h200", Err: errors.New("does not fit")},
	}
	byPair := replay.GroupMeans(rs, false)
	if len(byPair) != 2 || byPair[0].Model != "a-model" || byPair[1].Model != "b-model" || byPair[0].Layout != nil {
		t.Fatalf("groups %+v", byPair)
	}
	b := byPair[1]
	// b-model's TTFT errors +10, -20, +30: signed median +10, |e| median 20;
	// TPOT -10, +20, +5: signed median +5, |e| median 10.
	if b.N != 3 || b.Failed != 1 || !near(b.TTFTBias, 10) || !near(b.TTFTMedian, 20) || !near(b.TPOTBias, 5) || !near(b.TPOTMedian, 10) {
		t.Errorf("b-model on h200: %+v", b.MeanErrors)
	}
	// P90 of |TTFT| 10, 20, 30 interpolates to 28.
	if !near(b.TTFTP90, 28) {
		t.Errorf("TTFT P90 %v, want 28", b.TTFTP90)
	}
	byLayout := replay.GroupMeans(rs, true)
	var names []string
	for _, g := range byLayout {
		names = append(names, g.Name())
	}
	if got := strings.Join(names, "; "); got != "a-model on h100, TP1; b-model on h200, TP1; b-model on h200, TP2" {
		t.Fatalf("layout groups %q", got)
	}
	tp2 := byLayout[2]
	if tp2.N != 2 || tp2.Failed != 1 || !near(tp2.TTFTBias, 20) || !near(tp2.TPOTMedian, 7.5) {
		t.Errorf("TP2 group %+v", tp2.MeanErrors)
	}
	worst := replay.WorstMeans(rs, 2, false)
	if len(worst) != 2 || worst[0] != 1 || worst[1] != 3 {
		t.Errorf("worst TTFT %v, want [1 3]", worst)
	}
	if w := replay.WorstMeans(rs, 10, true); len(w) != 4 || w[0] != 2 || w[3] != 1 {
		t.Errorf("worst TPOT %v", w)
	}
}

func TestLayoutString(t *testing.T) {
	for _, c := range []struct {
		l    replay.Layout
		want string
	}{
		{replay.Layout{TP: 8, DP: 1, MoETP: 1, MoEEP: 1}, "TP8"},
		{replay.Layout{TP: 2, DP: 1, MoETP: 2, MoEEP: 1}, "TP2, experts 2×1"},
		{replay.Layout{TP: 4, DP: 4, MoETP: 1, MoEEP: 16}, "TP4 DP4, experts 1×16"},
	} {
		if got := c.l.String(); got != c.want {
			t.Errorf("%+v: %q, want %q", c.l, got, c.want)
		}
	}
}

// siliconRows is a small closed-loop table: two runs that fit and one on a
// model the catalog does not know.
const siliconRows = `id,model_path,system,precision,isl,osl,batch_size,tp_size,attention_dp_size,moe_tp_size,moe_ep_size,silicon_ttft_ms,silicon_tpot_ms
a,meta-llama/Llama-3.1-8B-Instruct,h100_sxm,bf16,256,8,1,1,,1,1,20,7
b,meta-llama/Llama-3.1-8B-Instruct,h100_sxm,bf16,256,8,2,1,,1,1,25,8
c,nobody/no-such-model,h100_sxm,bf16,256,8,1,1,,1,1,20,7
`

func TestReplayMeans(t *testing.T) {
	tab, err := measured.ReadSilicon(strings.NewReader(siliconRows), "rows.csv")
	if err != nil {
		t.Fatal(err)
	}
	runs := tab.Runs
	var mu sync.Mutex
	var seen []int
	rs := replay.ReplayMeans(t.Context(), runs, builtin(t), replay.MeanOptions{Workers: 2, Progress: func(done, total int) {
		mu.Lock()
		defer mu.Unlock()
		if total != 3 {
			t.Errorf("total %d", total)
		}
		seen = append(seen, done)
	}})
	if len(seen) != 3 || seen[0] != 1 || seen[2] != 3 {
		t.Errorf("progress %v, want 1, 2, 3", seen)
	}
	for i, r := range rs[:2] {
		if r.Run != runs[i] || r.Err != nil || r.Model != "llama-3.1-8b" || r.GPU != "h100-sxm" || !(r.TTFTMS > 0) || !(r.TPOTMS > 0) || r.PredictedBlocks <= 0 {
			t.Errorf("run %d: %+v", i, r)
		}
	}
	if rs[0].MeasuredTTFTMS != 20 || rs[1].MeasuredTPOT != 8 {
		t.Errorf("measured means %+v %+v", rs[0], rs[1])
	}
	// Two users wait on each other's prefills: the second run's TTFT is
	// longer than the first's.
	if !(rs[1].TTFTMS > rs[0].TTFTMS) {
		t.Errorf("TTFT at concurrency 2 (%v) not above concurrency 1 (%v)", rs[1].TTFTMS, rs[0].TTFTMS)
	}
	if rs[2].Err == nil || rs[2].Model != "nobody/no-such-model" {
		t.Errorf("unknown model: %+v", rs[2])
	}
	if e := replay.SummarizeMeans(rs); e.N != 2 || e.Failed != 1 {
		t.Errorf("summary %+v", e)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	for _, r := range replay.ReplayMeans(ctx, runs, builtin(t), replay.MeanOptions{}) {
		if !errors.Is(r.Err, context.Canceled) {
			t.Errorf("cancelled: %v", r.Err)
		}
	}
}

func TestMeanResultComparison(t *testing.T) {
	tab, err := measured.ReadSilicon(strings.NewReader(siliconRows), "rows.csv")
	if err != nil {
		t.Fatal(err)
	}
	runs := tab.Runs
	r := replay.MeanResult{Run: runs[1], Model: "llama-3.1-8b", GPU: "h100-sxm", MeasuredTTFTMS: 25, TTFTMS: 30, MeasuredTPOT: 8, TPOTMS: 6, PredictedBlocks: 1000}
	c := r.Comparison()
	m, ok := c.Get("ttft_ms.mean")
	p, _ := c.Get("tpot_ms.mean")
	if !ok || m.Measured != 25 || m.Predicted != 30 || m.ErrorPct != 20 || p.ErrorPct != -25 || len(c.Metrics) != 2 {
		t.Errorf("metrics %+v", c.Metrics)
	}
	if c.Run != "b" || c.Basis != replay.BasisAggregate || c.Requests != 40 || c.PredictedBlocks != 1000 || c.Layout == nil || c.Layout.TP != 1 ||
		c.ClosedLoop == nil || *c.ClosedLoop != (replay.ClosedLoop{Concurrency: 2, InputTokens: 256, OutputTokens: 8, WarmupRequests: 4}) || c.Error != "" {
		t.Errorf("comparison %+v", c)
	}
	r.Err = errors.New("does not fit")
	if c := r.Comparison(); c.Error != "does not fit" || c.Metrics != nil {
		t.Errorf("failed run %+v", c)
	}
}

// TestDisaggregatedRowReplays: a disaggregated row of the closed-loop
// table is simulated as the prefill and decode pools it describes.
func TestDisaggregatedRowReplays(t *testing.T) {
	const head = "id,silicon_data_source,backend,backend_version,model_path,system,precision,mode,isl,osl,gemm_quant_mode,moe_quant_mode,batch_size,tp_size,pp_size,attention_dp_size,moe_tp_size,moe_ep_size," +
		"prefill_batch_size,prefill_num_workers,prefill_tp_size,prefill_pp_size,prefill_attention_dp_size,prefill_moe_tp_size,prefill_moe_ep_size," +
		"decode_batch_size,decode_num_workers,decode_tp_size,decode_pp_size,decode_attention_dp_size,decode_moe_tp_size,decode_moe_ep_size,silicon_ttft_ms,silicon_tpot_ms\n"
	const row = "llama_disagg_c16,db-dump; silicon_concurrency=16,vllm,0.19.0,nvidia/Llama-3.1-8B-Instruct-FP8,h200_sxm,fp8,disagg,1000,100,fp8,,,,,,0,0," +
		"1,2,1,1,1,0,0,16,1,2,1,1,0,0,80,9\n"
	tab, err := measured.ReadSilicon(strings.NewReader(head+row), "disagg.csv")
	if err != nil {
		t.Fatal(err)
	}
	run := tab.Runs[0]
	run.Model, run.GPU = "llama-3.1-8b-instruct-fp8", "h200"
	s := replay.Scenario(run)
	d := s.Disaggregation
	if d == nil || d.Prefill.Replicas != 2 || d.Prefill.TP != 1 || d.Decode.Replicas != 1 || d.Decode.TP != 2 {
		t.Fatalf("disaggregation %+v", d)
	}
	rs := replay.ReplayMeans(t.Context(), []*measured.Run{run}, builtin(t), replay.MeanOptions{})
	if r := rs[0]; r.Err != nil || !(r.TTFTMS > 0) || !(r.TPOTMS > 0) {
		t.Errorf("replay %+v", r)
	}
}
