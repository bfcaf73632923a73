package kernels

import (
	"math"
	"strings"
	"testing"

	"github.com/headroom-sim/headroom/models"
	"github.com/headroom-sim/headroom/sim/steptime"
)

const mlpCSV = `time_stats.attn_pre_proj.min,time_stats.attn_pre_proj.max,time_stats.attn_pre_proj.mean,time_stats.attn_pre_proj.median,time_stats.attn_pre_proj.std,time_stats.mlp_up_proj.median,time_stats.mlp_down_proj.median,time_stats.add.median,n_head,n_kv_head,n_embd,n_expanded_embd,vocab_size,use_gated_mlp,num_tokens,num_tensor_parallel_workers
0.05,0.06,0.055,0.058,0.001,0.283,0.143,0.002,64,8,8192,28672,32768,True,1,2
0.05,0.06,0.055,0.060,0.001,0.285,0.145,0.002,64,8,8192,28672,32768,True,1,2
1.4,1.5,1.45,1.411,0.01,7.97,4.005,0.112,64,8,8192,28672,32768,True,4096,2
`

func TestReadMLP(t *testing.T) {
	rows, err := ReadMLP("mlp.csv", strings.NewReader(mlpCSV))
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 3 {
		t.Fatalf("%d rows", len(rows))
	}
	r := rows[2]
	if r.Tokens != 4096 || r.TP != 2 || r.Hidden != 8192 || r.KVHeads != 8 || !r.GatedMLP || r.HeadDim() != 128 {
		t.Errorf("row %+v", r)
	}
	if got := r.Ops["attn_pre_proj"]; got.Median != 1.411 || got.Min != 1.4 || math.Abs(got.Seconds()-1.411e-3) > 1e-15 {
		t.Errorf("attn_pre_proj %+v", got)
	}
	if _, ok := r.Ops["mlp_act"]; ok {
		t.Error("absent op present")
	}
	pts := MLPPoints([]MLPFile{{GPU: "a100-80gb", Model: "m", Rows: rows}})
	var n1 int
	for _, p := range pts {
		if p.Tokens == 1 && p.Op == "attn_pre_proj" {
			n1++
			if math.Abs(p.Measured-0.059e-3) > 1e-12 {
				t.Errorf("duplicate rows not averaged: %g", p.Measured)
			}
		}
	}
	if n1 != 1 {
		t.Errorf("%d points for the duplicated row", n1)
	}
}

func TestReadErrors(t *testing.T) {
	cases := map[string]string{
		"missing column": "time_stats.add.median,n_head\n1,2\n",
		"bad number":     strings.Replace(mlpCSV, "0.058", "x", 1),
		"bad bool":       strings.Replace(mlpCSV, "True,1,2", "maybe,1,2", 1),
		"zero tokens":    strings.Replace(mlpCSV, "True,1,2", "True,0,2", 1),
		"bad heads":      strings.Replace(mlpCSV, "64,8,8192", "64,7,8192", 1),
		"empty":          "",
	}
	for name, in := range cases {
		if _, err := ReadMLP("mlp.csv", strings.NewReader(in)); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	if _, err := ReadSplitwise("p.csv", strings.NewReader("model,hardware\nx,y\n")); err == nil {
		t.Error("splitwise: missing columns accepted")
	}
	if _, err := ReadCollective("a.csv", strings.NewReader(",time_stats.all_reduce.median,num_workers,size,collective,devices_per_node\n0,,2,2048,all_reduce,2\n")); err == nil {
		t.Error("all_reduce: empty time accepted")
	}
}

func TestReadAttentionCollectiveSplitwise(t *testing.T) {
	att := `time_stats.attn_input_reshape.median,time_stats.attn_decode.median,time_stats.attn_output_reshape.median,time_stats.attn_prefill.median,n_embd,n_q_head,n_kv_head,block_size,num_tensor_parallel_workers,max_model_len,batch_size,prefill_chunk_size,kv_cache_size,is_prefill,attention_backend
0.0,0.667,0.004,,8192,64,8,16,2,4096,128,0,4032,False,AttentionBackend.FLASH_ATTENTION
0.0,,0.044,2.314,8192,64,8,16,2,4096,1,4096,0,True,AttentionBackend.FLASH_ATTENTION
`
	rows, err := ReadAttention("attention.csv", strings.NewReader(att))
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2 || rows[0].IsPrefill || rows[0].BatchSize != 128 || rows[0].Time.Median != 0.667 ||
		!rows[1].IsPrefill || rows[1].PrefillChunk != 4096 || rows[1].Time.Median != 2.314 || rows[1].ReshapeMS != 0.044 {
		t.Errorf("rows %+v", rows)
	}
	pts := AttentionPoints([]AttentionSet{{Name: "a", GPU: "a100-80gb", Rows: rows}})
	if len(pts) != 3 {
		t.Fatalf("%d points, want decode + prefill + prefill_square", len(pts))
	}
	for _, p := range pts {
		switch p.Op {
		case "attn_decode":
			// 128 sequences × 4033 tokens × 2 (K, V) × 4 KV heads × 128 × 2 bytes
			if want := 128 * 4033 * 2 * 4 * 128 * 2.0; math.Abs(p.Cost.DataBytes-want)/want > 0.01 {
				t.Errorf("decode bytes %g, want about %g", p.Cost.DataBytes, want)
			}
		case "attn_prefill":
			// causal pairs 4096·4097/2 × 4·128 FLOPs × 32 heads
			if want := 4096 * 4097 / 2 * 4 * 128 * 32.0; math.Abs(p.Cost.FLOPs-want)/want > 1e-9 {
				t.Errorf("prefill FLOPs %g, want %g", p.Cost.FLOPs, want)
			}
		case "attn_prefill_square":
			if want := 4096 * 4096 * 4 * 128 * 32.0; math.Abs(p.Cost.FLOPs-want)/want > 1e-9 {
				t.Errorf("square FLOPs %g, want %g", p.Cost.FLOPs, want)
			}
		}
	}

	ar := `,time_stats.all_reduce.min,time_stats.all_reduce.max,time_stats.all_reduce.mean,time_stats.all_reduce.median,time_stats.all_reduce.std,rank,num_workers,size,collective,devices_per_node,max_devices_per_node
0,0.031,0.077,0.05,0.043,0.019,0,2,2048,all_reduce,1,8
1,0.031,0.077,0.05,0.040,0.019,0,2,2048,all_reduce,2,8
`
	crs, err := ReadCollective("all_reduce.csv", strings.NewReader(ar))
	if err != nil {
		t.Fatal(err)
	}
	if len(crs) != 2 || crs[0].IntraNode() || !crs[1].IntraNode() || crs[1].SizeBytes != 2048 || crs[1].Time.Median != 0.040 {
		t.Errorf("rows %+v", crs)
	}
	if pts := AllReducePoints([]NetworkSet{{Name: "a100_dgx", GPU: "a100-80gb", DGX: true, Rows: crs}}); len(pts) != 1 || math.Abs(pts[0].Measured-40e-6) > 1e-15 {
		t.Errorf("all-reduce points %+v (the cross-node row must be dropped)", pts)
	}

	sw := `model,hardware,prompt_size,batch_size,token_size,peak_power,average_power,prompt_time,token_time,e2e_time,tensor_parallel
llama2-70b,a100-80gb,512,1,128,1,0.7,196.0,54.9,7168.0,2
llama2-70b,a100-80gb,512,1,128,1,0.7,198.0,54.8,7166.0,2
llama2-70b,a100-80gb,512,1,128,1,0.7,197.0,54.7,7160.0,2
`
	srs, err := ReadSplitwise("perf_model.csv", strings.NewReader(sw))
	if err != nil {
		t.Fatal(err)
	}
	cs := SplitwiseCases(srs)
	if len(cs) != 1 || cs[0].Runs != 3 || cs[0].Prompt1 != 0.197 || cs[0].DecodeSteps != 127 {
		t.Errorf("cases %+v", cs)
	}
}

// The per-op split must add up to the cost model's own ops.
func TestLayerOpsMatchCostModel(t *testing.T) {
	s := Shape{Heads: 64, KVHeads: 8, Hidden: 8192, Intermediate: 28672, Vocab: 32000, GatedMLP: true}
	for _, tp := range []int{1, 2, 8} {
		ops, step := LayerOps(s, tp, 300)
		if ops["attn_pre_proj"] != step[models.OpQKVProj] || ops["attn_post_proj"] != step[models.OpOProj] {
			t.Errorf("tp %d: projections differ from Step", tp)
		}
		up, down, mlp := ops["mlp_up_proj"], ops["mlp_down_proj"], step[models.OpMLP]
		for name, pair := range map[string][2]float64{
			"flops":   {up.FLOPs + down.FLOPs, mlp.FLOPs},
			"weights": {up.WeightBytes + down.WeightBytes, mlp.WeightBytes},
			"data":    {up.DataBytes + down.DataBytes, mlp.DataBytes},
		} {
			if math.Abs(pair[0]-pair[1]) > 1e-6*pair[1] {
				t.Errorf("tp %d: mlp %s: up+down %g, Step %g", tp, name, pair[0], pair[1])
			}
		}
		// gate+up: 2·T·H·2I/tp
		if want := 2 * 300 * 8192 * 2 * 28672.0 / float64(tp); math.Abs(up.FLOPs-want) > 1e-6*want {
			t.Errorf("tp %d: up FLOPs %g, want %g", tp, up.FLOPs, want)
		}
	}
	// A non-gated MLP (phi-2) is two plain GEMMs.
	ops, _ := LayerOps(Shape{Heads: 32, KVHeads: 32, Hidden: 2560, Intermediate: 10240, Vocab: 51200}, 1, 10)
	if want := 2 * 10 * 2560 * 10240.0; ops["mlp_up_proj"].FLOPs != want || ops["mlp_down_proj"].FLOPs != want {
		t.Errorf("non-gated MLP FLOPs %g %g, want %g", ops["mlp_up_proj"].FLOPs, ops["mlp_down_proj"].FLOPs, want)
	}
}

func TestMinimize(t *testing.T) {
	params := []Param{
		{Name: "a", Lo: 0.01, Hi: 1, Field: func(p *steptime.Profile) *float64 { return &p.GEMMEfficiency }},
		{Name: "b", Lo: 0, Hi: 1000, Offset: 1, Field: func(p *steptime.Profile) *float64 { return &p.GEMMHalfTokens }},
	}
	f := func(x []float64) float64 { return math.Abs(math.Log(x[0]/0.3)) + math.Abs(math.Log((x[1]+1)/51)) }
	x, v := Minimize(params, []float64{0.9, 3}, f)
	if math.Abs(x[0]-0.3) > 1e-3 || math.Abs(x[1]-50) > 0.05 || v > 1e-3 {
		t.Errorf("minimum at %v (%g), want [0.3 50]", x, v)
	}
	// Bounds hold.
	x, _ = Minimize(params, []float64{0.5, 5}, func(x []float64) float64 { return -x[0] - x[1] })
	if x[0] > 1 || x[1] > 1000 {
		t.Errorf("bounds broken: %v", x)
	}
}
