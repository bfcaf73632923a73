package measured

import (
	"errors"
	"os"
	"regexp"
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
	runs, err := ReadSilicon(strings.NewReader(siliconTable), "agg.csv")
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 3 {
		t.Fatalf("%d runs", len(runs))
	}
	m := runs[0]
	a := m.Aggregate
	if m.Name != "m_b300_c128" || m.Format != FormatSilicon || m.Model != "MiniMaxAI/MiniMax-M2.5" || m.GPU != "b300_sxm" || m.TP != 4 || m.DP != 1 ||
		m.MoETP != 4 || m.MoEEP != 1 || m.ExpertParallel || m.EngineVersion != "0.19.0" || m.Quantization != "fp8" || m.Warmup != 256 ||
		a.Concurrency != 128 || a.Completed != 2560 || a.MeanInputTokens != 8192 || a.MeanOutputTokens != 1024 ||
		a.TTFTMS["mean"] != 972.31 || a.TPOTMS["mean"] != 33.44 || m.Engine.MaxModelLen != 9216 {
		t.Errorf("first row %+v %+v", m, a)
	}
	if q := runs[1]; q.DP != 2 || q.MoETP != 2 || q.TP != 1 {
		t.Errorf("row without attention_dp_size: tp %d dp %d moe_tp %d", q.TP, q.DP, q.MoETP)
	}
	// batch_size is per attention-DP rank: 64 × 4 users (the table's
	// silicon_concurrency=256 for this row).
	if e := runs[2]; e.DP != 4 || e.MoEEP != 16 || !e.ExpertParallel || e.Aggregate.Concurrency != 256 || e.Warmup != 512 || e.Aggregate.Completed != 5120 {
		t.Errorf("DP × EP row: dp %d moe_ep %d ep %v, %d users, %d warm-up", e.DP, e.MoEEP, e.ExpertParallel, e.Aggregate.Concurrency, e.Warmup)
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
		{"zero tp", row("x,,vllm,0.19.0,m,h100_sxm,fp8,agg,1024,128,fp8,fp8,8,0,1,1,1,1,10,2"), "tp_size", "not a number in [1, 4096]"},
		{"split", row("x,,vllm,0.19.0,m,h100_sxm,fp8,agg,1024,128,fp8,fp8,8,4,1,1,1,2,10,2"), "moe_tp_size", "is not tp 4 × attention_dp 1 GPUs"},
		{"too many users", row("x,,vllm,0.19.0,m,h100_sxm,fp8,agg,1024,128,fp8,fp8,1048576,1,1,2,1,2,10,2"), "batch_size", "more than 1048576"},
		{"negative ttft", row("x,,vllm,0.19.0,m,h100_sxm,fp8,agg,1024,128,fp8,fp8,8,1,1,1,1,1,-1,2"), "silicon_ttft_ms", "not a number"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := ReadSilicon(strings.NewReader(c.in), "agg.csv")
			var ie *ImportError
			if !errors.As(err, &ie) || ie.Field != c.field || !strings.Contains(ie.Reason, c.reason) {
				t.Fatalf("err %v, want field %q: %q", err, c.field, c.reason)
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
	f.Fuzz(func(t *testing.T, in string) {
		runs, err := ReadSilicon(strings.NewReader(in), "fuzz.csv")
		if err != nil {
			if runs != nil {
				t.Fatal("runs with an error")
			}
			return
		}
		for _, r := range runs {
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
	runs, err := ReadSilicon(f, "silicon_vllm_agg.csv")
	if err != nil {
		t.Fatal(err)
	}
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
