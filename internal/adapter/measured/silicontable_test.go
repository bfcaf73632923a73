package measured

import (
	"errors"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/headroom-sim/headroom/internal/testkit/refdata"
)

const siliconHead = "id,silicon_data_source,backend,backend_version,model_path,system,precision,mode,isl,osl,gemm_quant_mode,moe_quant_mode,batch_size,tp_size,pp_size,attention_dp_size,moe_tp_size,moe_ep_size,silicon_ttft_ms,silicon_tpot_ms\n"

const siliconTable = siliconHead +
	"m_b300_c128,db-dump; config_id=733,vllm,0.19.0,MiniMaxAI/MiniMax-M2.5,b300_sxm,fp8,agg,8192,1024,fp8,fp8,128,4,1,1,4,1,972.31,33.44\n" +
	// An older row leaves attention_dp_size out: the expert split covers tp × dp GPUs.
	"q_h200_c8,db-dump,vllm,0.12.0,Qwen/Qwen3-235B-A22B-FP8,h200_sxm,fp8,agg,1024,128,fp8,fp8,8,1,1,,2,1,88.5,12.25\n" +
	"m_b200_dpep,,vllm,0.19.0,MiniMaxAI/MiniMax-M2.5,b200_sxm,fp8,agg,1024,1024,fp8,fp8,64,4,1,4,1,16,300,20\n"

func TestReadSilicon(t *testing.T) {
	tab, err := ReadSilicon(strings.NewReader(siliconTable), "agg.csv")
	if err != nil {
		t.Fatal(err)
	}
	runs := tab.Runs
	if len(runs) != 3 {
		t.Fatalf("%d runs", len(runs))
	}
	m := runs[0]
	a := m.Aggregate
	if m.Name != "m_b300_c128" || m.Format != FormatSilicon || m.Model != "MiniMaxAI/MiniMax-M2.5" || m.GPU != "b300_sxm" || m.TP != 4 || m.DP != 1 ||
		m.MoETP != 4 || m.MoEEP != 1 || m.ExpertParallel || m.EngineVersion != "0.19.0" || m.Quantization != "fp8" || m.Warmup != 256 ||
		a.Concurrency != 128 || a.Completed != 2560 || a.MeanInputTokens != 8192 || a.MeanOutputTokens != 1024 ||
		a.TTFTMS["mean"] != 972.31 || a.TPOTMS["mean"] != 33.44 || m.Engine.MaxModelLen != 9216+16 {
		t.Errorf("first row %+v %+v", m, a)
	}
	if q := runs[1]; q.DP != 2 || q.MoETP != 2 || q.TP != 1 {
		t.Errorf("row without attention_dp_size: tp %d dp %d moe_tp %d", q.TP, q.DP, q.MoETP)
	}
	// batch_size is per attention-DP rank: 64 × 4 users (the table's
	// silicon_concurrency=256 for this row). tp_size 4 is the engine's
	// GPUs, four ranks of one; the table's moe_ep 16 counts tp × dp GPUs,
	// read back as the experts over the engine's 4.
	if e := runs[2]; e.TP != 1 || e.DP != 4 || e.MoETP != 1 || e.MoEEP != 4 || !e.ExpertParallel || e.Aggregate.Concurrency != 256 || e.Warmup != 512 || e.Aggregate.Completed != 5120 {
		t.Errorf("DP × EP row: tp %d dp %d moe %d×%d ep %v, %d users, %d warm-up", e.TP, e.DP, e.MoETP, e.MoEEP, e.ExpertParallel, e.Aggregate.Concurrency, e.Warmup)
	}
	// The row says how it was read; the others have no such note.
	if n := runs[2].Engine.Extra; len(n) == 0 || !strings.Contains(n[0], "tp_size 4 with attention_dp_size 4 read as 4 GPUs: 4 attention ranks of 1, the experts split 1×4") {
		t.Errorf("DP × EP row notes %q", n)
	}
	for _, r := range runs[:2] {
		for _, n := range r.Engine.Extra {
			if strings.Contains(n, "attention_dp_size") {
				t.Errorf("%s: note %q", r.Name, n)
			}
		}
	}
	// A row without attention_dp_size states the whole concurrency.
	if q := runs[1]; q.Aggregate.Concurrency != 8 {
		t.Errorf("row without attention_dp_size: %d users, want 8", q.Aggregate.Concurrency)
	}
}

func TestReadSiliconErrors(t *testing.T) {
	row := func(fields string) string { return siliconHead + fields + "\n" }
	for _, c := range []struct {
		name, in, field, reason string
	}{
		{"missing column", "id,model_path\nx,y\n", "system", "missing column"},
		{"no rows", siliconHead, "", "no rows"},
		{"bad number", row("x,,vllm,0.19.0,m,h100_sxm,fp8,agg,abc,128,fp8,fp8,8,1,1,1,1,1,10,2"), "isl", `"abc" is not a number`},
		{"fraction", row("x,,vllm,0.19.0,m,h100_sxm,fp8,agg,1024,128,fp8,fp8,8.5,1,1,1,1,1,10,2"), "batch_size", "not a whole number"},
		{"zero tp", row("x,,vllm,0.19.0,m,h100_sxm,fp8,agg,1024,128,fp8,fp8,8,0,1,1,1,1,10,2"), "tp_size", "0: the row's mode needs it"},
		{"pipeline", row("x,,vllm,0.19.0,m,h100_sxm,fp8,agg,1024,128,fp8,fp8,8,1,2,1,1,1,10,2"), "pp_size", "2 pipeline stages: the simulator serves no pipeline parallelism"},
		{"mode", row("x,,vllm,0.19.0,m,h100_sxm,fp8,spec,1024,128,fp8,fp8,8,1,1,1,1,1,10,2"), "mode", `"spec" is not agg or disagg`},
		{"backend", row("x,,trtllm,1.0,m,h100_sxm,fp8,agg,1024,128,fp8,fp8,8,1,1,1,1,1,10,2"), "backend", `"trtllm": the simulator models vLLM`},
		{"split", row("x,,vllm,0.19.0,m,h100_sxm,fp8,agg,1024,128,fp8,fp8,8,4,1,1,1,2,10,2"), "moe_tp_size", "is not tp 4 × attention_dp 1 GPUs"},
		{"too many users", row("x,,vllm,0.19.0,m,h100_sxm,fp8,agg,1024,128,fp8,fp8,1048576,2,1,2,1,4,10,2"), "batch_size", "more than 1048576"},
		{"ranks", row("x,,vllm,0.19.0,m,h100_sxm,fp8,agg,1024,128,fp8,fp8,8,2,1,4,1,8,10,2"), "attention_dp_size", "4 ranks do not divide tp_size 2, the engine's GPUs"},
		{"dp split", row("x,,vllm,0.19.0,m,h100_sxm,fp8,agg,1024,128,fp8,fp8,8,4,1,2,1,2,10,2"), "attention_dp_size", "moe_tp 1 × moe_ep 2 is neither tp_size 4 nor tp_size × attention_dp_size 8 GPUs"},
		{"negative ttft", row("x,,vllm,0.19.0,m,h100_sxm,fp8,agg,1024,128,fp8,fp8,8,1,1,1,1,1,-1,2"), "silicon_ttft_ms", "not a number"},
	} {
		t.Run(c.name, func(t *testing.T) {
			// Alone, the row refuses the file (no usable row), naming it.
			_, err := ReadSilicon(strings.NewReader(c.in), "agg.csv")
			var ie *ImportError
			want := c.reason
			if c.field != "" && c.reason != "missing column" {
				want = "row 2 (x) skipped: field " + c.field + ": " + c.reason
			}
			if !errors.As(err, &ie) || !strings.Contains(err.Error(), want) && !(strings.Contains(err.Error(), "row 2 (x) skipped: field "+c.field+": ") && strings.Contains(err.Error(), c.reason)) {
				t.Fatalf("err %v, want %q", err, want)
			}
			if c.reason == "missing column" || c.reason == "no rows" {
				return
			}
			// Beside a good row, it is skipped with that note.
			tab, err := ReadSilicon(strings.NewReader(siliconTable+strings.TrimPrefix(c.in, siliconHead)), "agg.csv")
			if err != nil || len(tab.Runs) != 3 || len(tab.Skipped) != 1 || !strings.Contains(tab.Skipped[0], "row 5 (x) skipped: field "+c.field) {
				t.Fatalf("%+v, %v", tab, err)
			}
		})
	}
}

func TestFindSiliconFiles(t *testing.T) {
	fsys := fstest.MapFS{
		"measured/silicon/agg.csv":        {Data: []byte("\xef\xbb\xbf" + siliconTable)},
		"measured/silicon/upper.CSV":      {Data: []byte(siliconTable)},
		"measured/silicon/other.csv":      {Data: []byte("send_s,input_tokens,output_tokens,ttft_ms,e2e_ms\n0,1,1,1,1\n")},
		"measured/silicon/agg.csv.txt":    {Data: []byte(siliconTable)},
		"measured/run/meta.json":          {Data: []byte("{}")},
		"measured/run/requests.jsonl":     {Data: []byte("{}\n")},
		"measured/run/inside/table.csv":   {Data: []byte(siliconTable)},
		"measured/deeper/x/y/another.csv": {Data: []byte(siliconTable)},
	}
	got, err := FindSiliconFiles(fsys, "measured")
	if err != nil {
		t.Fatal(err)
	}
	want := "measured/deeper/x/y/another.csv measured/silicon/agg.csv measured/silicon/upper.CSV"
	if strings.Join(got, " ") != want {
		t.Errorf("found %q, want %q", got, want)
	}
	if _, err := FindSiliconFiles(fsys, "nowhere"); err == nil {
		t.Error("a missing root is an error")
	}
}

func TestImportNamesTheSiliconTable(t *testing.T) {
	_, err := Import(strings.NewReader(siliconTable), "silicon_vllm_agg.csv", "")
	var ie *ImportError
	if !errors.Is(err, ErrRunTable) || !errors.As(err, &ie) || ie.Format != FormatSilicon || !strings.Contains(err.Error(), "one per row") {
		t.Fatalf("err %v", err)
	}
}

func FuzzReadSilicon(f *testing.F) {
	f.Add(siliconTable)
	f.Add(siliconHead + "x,,vllm,,m,h100_sxm,fp8,agg,1,1,,,1,1,1,,,,0,0\n")
	f.Add(siliconHead + "\"unterminated\n")
	f.Add(siliconDisaggHead + siliconDisaggRow)
	f.Fuzz(func(t *testing.T, in string) {
		tab, err := ReadSilicon(strings.NewReader(in), "fuzz.csv")
		if err != nil {
			if tab != nil {
				t.Fatal("runs with an error")
			}
			return
		}
		if len(tab.Runs) == 0 {
			t.Fatal("a table without a run")
		}
		for _, r := range tab.Runs {
			a := r.Aggregate
			if r.TP < 1 || r.DP < 1 || r.MoETP < 1 || r.MoEEP < 1 || a == nil || a.Concurrency < 1 || a.Completed != SiliconRequestsPerUser*a.Concurrency ||
				!(a.TTFTMS["mean"] >= 0) || !(a.TPOTMS["mean"] >= 0) || r.Engine.MaxModelLen < 2 || r.Name == "" {
				t.Fatalf("row %+v %+v", r, a)
			}
			if r.MoETP*r.MoEEP != 1 && r.MoETP*r.MoEEP != r.TP*r.DP {
				t.Fatalf("split %d×%d over tp %d × dp %d", r.MoETP, r.MoEEP, r.TP, r.DP)
			}
		}
	})
}

// TestSiliconConcurrencyAsMeasured: in the reference table, every row
// whose silicon_data_source states the benchmark's concurrency
// (silicon_concurrency=N) imports with N users.
func TestSiliconConcurrencyAsMeasured(t *testing.T) {
	f, err := os.Open(refdata.Path(t, "measured/aiconfigurator-silicon/silicon_vllm_agg.csv"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tab, err := ReadSilicon(f, "silicon_vllm_agg.csv")
	if err != nil {
		t.Fatal(err)
	}
	runs := tab.Runs
	stated := regexp.MustCompile(`silicon_concurrency=(\d+)`)
	checked, dp := 0, 0
	for _, r := range runs {
		for _, note := range r.Engine.Extra {
			if m := stated.FindStringSubmatch(note); m != nil {
				checked++
				if r.DP > 1 {
					dp++
				}
				if want, _ := strconv.Atoi(m[1]); r.Aggregate.Concurrency != want {
					t.Errorf("%s: %d users, the source says %d (tp %d, dp %d)", r.Name, r.Aggregate.Concurrency, want, r.TP, r.DP)
				}
			}
		}
	}
	if checked < 800 || dp < 60 {
		t.Errorf("checked %d rows (%d with attention DP): want every row of the table", checked, dp)
	}
}

// The table's full header, as AIConfigurator ships it, with the prefill and
// decode columns of disaggregated rows.
const siliconDisaggHead = "id,silicon_data_source,backend,backend_version,model_path,system,precision,mode,isl,osl,gemm_quant_mode,moe_quant_mode,batch_size,tp_size,pp_size,attention_dp_size,moe_tp_size,moe_ep_size," +
	"prefill_batch_size,prefill_num_workers,prefill_tp_size,prefill_pp_size,prefill_attention_dp_size,prefill_moe_tp_size,prefill_moe_ep_size," +
	"decode_batch_size,decode_num_workers,decode_tp_size,decode_pp_size,decode_attention_dp_size,decode_moe_tp_size,decode_moe_ep_size,silicon_ttft_ms,silicon_tpot_ms\n"

// siliconDisaggRow is a disaggregated row: 2 prefill workers at TP 1 and one
// decode worker at TP 2, the aggregated columns left empty or 0.
const siliconDisaggRow = "llama_disagg_c64,db-dump; silicon_concurrency=64,vllm,0.19.0,nvidia/Llama-3.1-8B-Instruct-FP8,h200_sxm,fp8,disagg,4000,500,fp8,,,,,,0,0," +
	"1,2,1,1,1,0,0,64,1,2,1,1,0,0,180.5,9.75\n"

// TestReadSiliconModes reads the table as the tool ships it: a dense
// model's placeholders (0, empty) and disaggregated rows.
func TestReadSiliconModes(t *testing.T) {
	agg := "llama_agg_c8,db-dump,vllm,0.19.0,nvidia/Llama-3.1-8B-Instruct-FP8,h200_sxm,fp8,agg,1000,100,fp8,,8,1,1,0,0,0,,,,,,,,,,,,,,,72.5,11.25\n"
	tab, err := ReadSilicon(strings.NewReader(siliconDisaggHead+agg+siliconDisaggRow), "silicon_sample.csv")
	if err != nil {
		t.Fatal(err)
	}
	if len(tab.Runs) != 2 || len(tab.Skipped) != 0 || len(tab.Ignored) != 2 {
		t.Fatalf("%d runs, skipped %q, ignored %q", len(tab.Runs), tab.Skipped, tab.Ignored)
	}
	a := tab.Runs[0]
	if a.TP != 1 || a.DP != 1 || a.MoETP != 1 || a.MoEEP != 1 || a.Disagg != nil || a.Aggregate.Concurrency != 8 {
		t.Errorf("agg row with placeholders: %+v", a)
	}
	d := tab.Runs[1]
	want := Disagg{Prefill: Pool{Workers: 2, TP: 1, DP: 1, MoETP: 1, MoEEP: 1, BatchSize: 1}, Decode: Pool{Workers: 1, TP: 2, DP: 1, MoETP: 1, MoEEP: 1, BatchSize: 64}}
	if d.Disagg == nil || *d.Disagg != want || d.TP != 2 || d.Aggregate.Concurrency != 64 || d.Warmup != 128 || d.Aggregate.TTFTMS["mean"] != 180.5 {
		t.Errorf("disagg row: %+v %+v", d.Disagg, d)
	}
	if !slices.Contains(d.Ignored, "column gemm_quant_mode") {
		t.Errorf("ignored %q", d.Ignored)
	}
	// Without silicon_concurrency: decode batch × attention DP × workers, said.
	row := strings.Replace(siliconDisaggRow, "db-dump; silicon_concurrency=64", "db-dump", 1)
	row = strings.Replace(row, ",64,1,2,", ",32,3,2,", 1)
	tab, err = ReadSilicon(strings.NewReader(siliconDisaggHead+row), "x.csv")
	if err != nil || tab.Runs[0].Aggregate.Concurrency != 96 || !hasNote(tab.Runs[0], "decode_batch_size 32 × decode_attention_dp_size 1 × decode_num_workers 3") {
		t.Errorf("%+v, %v", tab, err)
	}
}

// TestSiliconWorldLayout: a row with attention data parallelism is read
// on tp_size GPUs, its expert split scaled back from tp × dp to them.
func TestSiliconWorldLayout(t *testing.T) {
	for _, c := range []struct {
		world, dp, moeTP, moeEP int
		tp, mtp, mep            int
		reason                  string
	}{
		{4, 4, 1, 16, 1, 1, 4, ""}, // the shared rows: tp4_ep4
		{2, 2, 1, 4, 1, 1, 2, ""},  // tp2_ep2
		{8, 2, 1, 8, 4, 1, 8, ""},  // the split already counts the engine's GPUs
		{8, 2, 16, 1, 4, 8, 1, ""}, // experts sliced, not spread
		{8, 2, 2, 8, 4, 2, 4, ""},  // both: the spread is scaled
		{8, 4, 2, 16, 2, 2, 4, ""}, // 2 × 16 = 32 = 8 × 4
		{6, 4, 1, 24, 0, 0, 0, "4 ranks do not divide tp_size 6, the engine's GPUs"},
		{4, 2, 1, 2, 0, 0, 0, "moe_tp 1 × moe_ep 2 is neither tp_size 4 nor tp_size × attention_dp_size 8 GPUs"},
		{6, 6, 4, 9, 0, 0, 0, "moe_tp 4 × moe_ep 9 does not split over tp_size 6 GPUs"},
	} {
		tp, mtp, mep, reason := siliconWorldLayout(c.world, c.dp, c.moeTP, c.moeEP)
		if tp != c.tp || mtp != c.mtp || mep != c.mep || reason != c.reason {
			t.Errorf("siliconWorldLayout(%d, %d, %d, %d) = %d, %d×%d, %q; want %d, %d×%d, %q",
				c.world, c.dp, c.moeTP, c.moeEP, tp, mtp, mep, reason, c.tp, c.mtp, c.mep, c.reason)
		}
	}
}
