package measured

import (
	"encoding/csv"
	"encoding/json"
	"io/fs"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"testing/fstest"
)

// TestBlisTraceFixture reads the constructed trace v3 folder, every figure
// known by hand.
func TestBlisTraceFixture(t *testing.T) {
	run, err := LoadDir(os.DirFS("testdata/blis-trace"), "run")
	if err != nil {
		t.Fatal(err)
	}
	if run.Format != FormatBlisTrace || run.Name != "run" || run.Model != "Qwen/Qwen3-14B" || run.ModelNote != "run/trace.yaml: server.model" || run.GPU != "" {
		t.Fatalf("run %s (%s), model %q (%s), gpu %q", run.Name, run.Format, run.Model, run.ModelNote, run.GPU)
	}
	if e := run.Engine; run.EngineVersion != "0.23.0" || e.MaxModelLen != 40960 || e.MaxNumBatchedTokens != 8192 || e.BlockSize != 16 || !*e.EnablePrefixCaching || !*e.EnableChunkedPrefill || run.TP != 1 {
		t.Errorf("version %q, engine %+v, tp %d", run.EngineVersion, e, run.TP)
	}
	if len(run.Requests) != 4 || len(run.Stages) != 2 || run.Stages[1].Label != "tenant tenant_B" {
		t.Fatalf("%d requests, stages %+v", len(run.Requests), run.Stages)
	}
	q := run.Requests[0]
	if q.SendS != 0 || !near(q.TTFTS, 0.060, 1e-9) || !near(q.E2ES, 0.090, 1e-9) || q.InputTokens != 70 || q.OutputTokens != 4 || q.Stage != 0 || q.DelayS != 0 {
		t.Errorf("request 0 %+v", q)
	}
	if want := []float64{0.06002, 0.070, 0.080, 0.090, 0.090}; len(q.ChunkTimesS) != len(want) || !near(q.ChunkTimesS[0], want[0], 1e-9) || !near(q.ChunkTimesS[4], want[4], 1e-9) {
		t.Errorf("chunks %v", q.ChunkTimesS)
	}
	if tpot, _ := q.TPOTS(); !near(tpot, 0.010, 1e-9) {
		t.Errorf("tpot %v", tpot)
	}
	if q := run.Requests[1]; !near(q.SendS, 0.3003, 1e-9) || q.Stage != 1 || !near(q.DelayS, 0.0003, 1e-6) {
		t.Errorf("request 1 %+v", q)
	}
	if q := run.Requests[2]; q.InputTokens != 64 || !near(q.DelayS, 0.002, 1e-6) {
		t.Errorf("request 2 (no server_input_tokens) %+v", q)
	}
	if q := run.Requests[3]; q.Error != "HTTP 503: server overloaded" || q.OK() {
		t.Errorf("request 3 %+v", q)
	}
	for _, n := range []string{"median 0.300 ms, p99 2.000 ms", "1 rows without server_input_tokens", "the chunk times of 3 of 4 requests", "give --gpu"} {
		if !hasNote(run, n) {
			t.Errorf("no note with %q: %q", n, run.Engine.Extra)
		}
	}
	for _, k := range []string{"column client_id", "column x_request_id", "server_config.json: launched_by", "run/trace.yaml: network"} {
		if !slices.Contains(run.Ignored, k) {
			t.Errorf("ignored %q lacks %q", run.Ignored, k)
		}
	}
	if slices.Contains(run.Ignored, "server_config.json: max_seq_len") || slices.Contains(run.Ignored, "column send_time_us") {
		t.Errorf("ignored %q lists a key that is read", run.Ignored)
	}
	// trace.csv alone: the same requests, no chunks, no server.
	one := importFixture(t, "testdata/blis-trace/run/trace.csv")
	if one.Format != FormatBlisTrace || len(one.Requests) != 4 || one.Requests[0].ChunkTimesS != nil || !near(one.Requests[0].E2ES, 0.090, 1e-9) || one.Engine.MaxModelLen != 0 {
		t.Errorf("trace.csv alone: %+v", one)
	}
}

func TestBlisTraceErrors(t *testing.T) {
	base := fstest.MapFS{}
	for _, f := range []string{"run/trace.yaml", "run/trace.csv", "run/trace.itl.csv"} {
		base[f] = &fstest.MapFile{Data: mustRead(t, "testdata/blis-trace/"+f)}
	}
	with := func(name, data string) fstest.MapFS {
		m := fstest.MapFS{}
		for k, v := range base {
			m[k] = v
		}
		m[name] = &fstest.MapFile{Data: []byte(data)}
		return m
	}
	csvHead := strings.SplitN(string(base["run/trace.csv"].Data), "\n", 2)[0] + "\n"
	for _, c := range []struct {
		name string
		fsys fs.FS
		want string
	}{
		{"version", with("run/trace.yaml", "trace_version: 2\n"), "trace_version 2: this reader knows version 3"},
		{"unit", with("run/trace.yaml", "trace_version: 3\ntime_unit: parsecs\n"), `time_unit "parsecs" is not a time unit`},
		{"bad send", with("run/trace.csv", csvHead+"0,a,a,,,0,,0,true,64,4,0,0,0,0,0,,0,70,1,soon,2,3,6,ok,,length,x\n"), `record 1: field send_time_us: "soon" is not a number`},
		{"last before first", with("run/trace.csv", csvHead+"0,a,a,,,0,,0,true,64,4,0,0,0,0,0,,0,70,1,10,30,20,6,ok,,length,x\n"), "field last_chunk_time_us: before first_chunk_time_us"},
		{"missing column", with("run/trace.csv", "request_id,send_time_us\n0,1\n"), "field first_chunk_time_us: missing column"},
		{"bad chunk", with("run/trace.itl.csv", "request_id,chunk_index,timestamp_us\n0,x,1\n"), `field chunk_index: "x" is not a chunk index`},
		{"no itl columns", with("run/trace.itl.csv", "request_id,when\n"), "field chunk_index: missing column"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := LoadDir(c.fsys, "run")
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("%v, want %q", err, c.want)
			}
		})
	}
}

// TestBlisTraceResidency reads the reference data's trace v3 runs and
// checks them against the client's own per-request table (requests.csv)
// and summary (summary.json).
func TestBlisTraceResidency(t *testing.T) {
	root := sharedData + "/residency-vllm-h100-qwen3-14b"
	if !dirExists(root) {
		t.Skipf("reference data not present: %s", root)
	}
	fsys := os.DirFS(sharedData)
	dirs, err := FindRunDirs(fsys, "residency-vllm-h100-qwen3-14b")
	if err != nil || len(dirs) != 9 {
		t.Fatalf("found %q, %v", dirs, err)
	}
	for _, dir := range dirs {
		t.Run(dir, func(t *testing.T) {
			run, err := LoadDir(fsys, dir)
			if err != nil {
				t.Fatal(err)
			}
			if run.Model != "Qwen/Qwen3-14B" || run.EngineVersion != "0.23.0" || run.Engine.MaxModelLen != 40960 || run.GPU != "" {
				t.Errorf("model %q, version %q, engine %+v, gpu %q", run.Model, run.EngineVersion, run.Engine, run.GPU)
			}
			// requests.csv: ttft_ms, e2e_ms and tpot_ms per request, in the
			// same order; its tpot divides by the output tokens, not by
			// output − 1 as vLLM's (and ours) does.
			f, err := os.Open(sharedData + "/" + dir + "/requests.csv")
			if err != nil {
				t.Fatal(err)
			}
			rows, err := csv.NewReader(f).ReadAll()
			f.Close()
			if err != nil || len(rows)-1 != len(run.Requests) {
				t.Fatalf("%d rows, %d requests, %v", len(rows)-1, len(run.Requests), err)
			}
			col := map[string]int{}
			for i, h := range rows[0] {
				col[h] = i
			}
			byStart := slices.Clone(run.Requests)
			for i, r := range rows[1:] {
				ttft, _ := strconv.ParseFloat(r[col["ttft_ms"]], 64)
				e2e, _ := strconv.ParseFloat(r[col["e2e_ms"]], 64)
				tpot, _ := strconv.ParseFloat(r[col["tpot_ms"]], 64)
				q := findRequest(byStart, ttft, e2e)
				if q == nil {
					t.Fatalf("row %d: no request with ttft %v ms and e2e %v ms", i+1, ttft, e2e)
				}
				got, _ := q.TPOTS()
				if n := float64(q.OutputTokens); math.Abs(got*1e3*(n-1)/n-tpot) > 0.01 {
					t.Errorf("row %d: tpot %v ms × (n−1)/n, requests.csv %v", i+1, got*1e3, tpot)
				}
			}
			var sum struct {
				Overall struct {
					TTFT map[string]float64 `json:"ttft_ms"`
					ITL  map[string]float64 `json:"itl_ms"`
					E2E  map[string]float64 `json:"e2e_ms"`
				} `json:"overall"`
			}
			if err := json.Unmarshal(mustRead(t, sharedData+"/"+dir+"/summary.json"), &sum); err != nil {
				t.Fatal(err)
			}
			d := Describe(run)
			for _, c := range []struct {
				name      string
				got, want map[string]float64
			}{{"ttft", d.TTFTMS, sum.Overall.TTFT}, {"e2e", d.E2EMS, sum.Overall.E2E}, {"itl", d.ITLMS, sum.Overall.ITL}} {
				if c.want == nil || (c.name == "itl" && !fileExists(fsys, dir+"/trace.itl.csv")) {
					continue // the client's ITL needs the chunk times
				}
				for _, k := range []string{"mean", "p50", "max"} {
					if math.Abs(c.got[k]-c.want[k]) > 0.006 {
						t.Errorf("%s %s: %v ms, summary.json %v", c.name, k, c.got[k], c.want[k])
					}
				}
			}
		})
	}
}

// findRequest is the request with these TTFT and E2E (ms, to 0.01).
func findRequest(reqs []Request, ttft, e2e float64) *Request {
	for i := range reqs {
		if q := &reqs[i]; math.Abs(q.TTFTS*1e3-ttft) <= 0.006 && math.Abs(q.E2ES*1e3-e2e) <= 0.006 {
			return q
		}
	}
	return nil
}
