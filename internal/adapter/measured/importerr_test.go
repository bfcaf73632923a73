package measured

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"math"
	"os"
	"strings"
	"testing"
)

// TestImportErrors checks that a bad record is reported with the format,
// the record and the field.
func TestImportErrors(t *testing.T) {
	vllm := func(ttfts string) string {
		return `{"model_id": "m", "request_rate": "inf", "mean_ttft_ms": 1, "input_lens": [1, 2, 3], "output_lens": [2, 2, 2],
			"ttfts": ` + ttfts + `, "itls": [[0.01], [0.01], [0.01]], "errors": ["", "", ""]}`
	}
	for _, tc := range []struct {
		name, file, format, data string
		want                     string // the whole message
		record                   int
		field                    string
	}{
		{"vllm ttft not a number", "results.json", "", vllm(`[0.1, 0.2, "abc"]`),
			`results.json (vllm-bench): record 3: field ttfts: "abc" is not a number`, 3, "ttfts"},
		{"vllm negative ttft", "results.json", "", vllm(`[0.1, -2, 0.3]`),
			`results.json (vllm-bench): record 2: field ttfts: -2 s is not a valid duration`, 2, "ttfts"},
		{"vllm list lengths", "results.json", "", vllm(`[0.1, 0.2]`),
			`results.json (vllm-bench): field input_lens: has 3 entries, ttfts has 2`, 0, "input_lens"},
		{"vllm token count", "results.json", "", strings.Replace(vllm(`[0.1, 0.2, 0.3]`), `[2, 2, 2]`, `[2, 2.5, 2]`, 1),
			`results.json (vllm-bench): record 2: field output_lens: 2.5 is not a token count`, 2, "output_lens"},
		{"vllm wrong type", "results.json", "", `{"mean_ttft_ms": 1, "ttfts": {"a": 1}}`,
			`results.json (vllm-bench): field ttfts: object is not a list`, 0, "ttfts"},
		{"sglang second line", "bench.jsonl", "", `{"mean_e2e_latency_ms": 1, "completed": 1}` + "\n" + `{"mean_e2e_latency_ms": "x"}`,
			`bench.jsonl (sglang-bench): record 2: field mean_e2e_latency_ms: "x" is not a number`, 2, "mean_e2e_latency_ms"},
		{"aiperf ttft", "profile_export.jsonl", "",
			`{"metadata": {"timestamp_ns": 1}, "metrics": {"ttft": {"value": 1, "unit": "ms"}}, "error": null}` + "\n\n" +
				`{"metadata": {"timestamp_ns": 2}, "metrics": {"ttft": {"value": "slow", "unit": "ms"}}, "error": null}`,
			`profile_export.jsonl (aiperf): record 3: field metrics.ttft.value: "slow" is not a number`, 3, "metrics.ttft.value"},
		{"aiperf unit", "profile_export.jsonl", "",
			`{"metadata": {"timestamp_ns": 1}, "metrics": {"ttft": {"value": 1, "unit": "tokens"}}, "error": null}`,
			`profile_export.jsonl (aiperf): record 1: field metrics.ttft.unit: "tokens" is not a time unit`, 1, "metrics.ttft.unit"},
		{"aiperf bad json", "profile_export.jsonl", "",
			`{"metadata": {"timestamp_ns": 1}, "metrics": {}, "error": null}` + "\n" + `{"metadata": {"timestamp_ns": 1}, "metrics": {`,
			`profile_export.jsonl (aiperf): record 2: JSON ends early`, 2, ""},
		{"plain csv", "mine.csv", "", "send_s,input_tokens,output_tokens,ttft_ms,e2e_ms\n0,10,5,20,90\n0.1,10,5,abc,90\n",
			`mine.csv (csv): record 2: field ttft_ms: "abc" is not a number`, 2, "ttft_ms"},
		{"plain csv missing column", "mine.csv", "csv", "send_s,input_tokens,output_tokens,ttft_ms\n0,10,5,20\n",
			`mine.csv (csv): field e2e_ms: missing column`, 0, "e2e_ms"},
		{"guidellm csv", "guidellm_requests.csv", "",
			"benchmark_index,strategy,rate,status,prompt_tokens,output_tokens,request_start,first_token_iteration,last_token_iteration,request_end,error\n0,synchronous,,successful,10,-3,1.0,1.1,1.2,1.2,\n",
			`guidellm_requests.csv (guidellm-csv): record 1: field output_tokens: -3 is not a token count`, 1, "output_tokens"},
		{"guidellm", "benchmarks.json", "",
			`{"benchmarks": [{"args": {"strategy": {"type_": "synchronous"}}, "requests": {"successful": [
				{"prompt_tokens": 10, "output_tokens": 3, "start_time": 1.0, "first_token_time": 1.1, "last_token_time": 1.2, "end_time": 1.2},
				{"prompt_tokens": "ten", "output_tokens": 3, "start_time": 2.0, "first_token_time": 2.1, "last_token_time": 2.2, "end_time": 2.2}]}}]}`,
			`benchmarks.json (guidellm): record 2: field benchmarks[0].requests.successful[1].prompt_tokens: "ten" is not a number`, 2, "benchmarks[0].requests.successful[1].prompt_tokens"},
		{"llmservingsim", "requests.jsonl", "",
			`{"request_id": "a", "input_toks": 10, "output_toks": 2, "arrival_time": 1.0, "queued_ts": 5.0, "first_token_ts": 5.1, "last_token_ts": 5.2}` + "\n" +
				`{"request_id": "b", "input_toks": "many", "output_toks": 2, "arrival_time": 1.0, "queued_ts": 5.0, "first_token_ts": 5.1, "last_token_ts": 5.2}`,
			`requests.jsonl (llmservingsim): record 2: field input_toks: string is not a number`, 2, "input_toks"},
		{"inference-perf", "lifecycle.json", "",
			`[{"start_time": 1.0, "end_time": 2.0, "info": {"input_tokens": 3, "output_tokens": 2, "output_token_times": [1.1, 1.2]}},
			  {"end_time": 2.0, "info": {"input_tokens": 3}}]`,
			`lifecycle.json (inference-perf): record 2: field start_time: missing`, 2, "start_time"},
		{"genai-perf", "profile_export.json", "",
			`{"experiments": [{"experiment": {"mode": "concurrency", "value": 1}, "requests": [
				{"timestamp": 1000, "request_inputs": {"payload": "{}"}, "response_timestamps": [2000, 3000], "response_outputs": [{"response": "data: x"}]}]}]}`,
			`profile_export.json (genai-perf): record 1: field experiments[0].requests[0].response_outputs: has 1 entries, response_timestamps has 2`, 1, "experiments[0].requests[0].response_outputs"},
		{"aiperf summary", "profile_export_aiperf.json", "",
			`{"records": {"ttft": {"tag": "ttft", "unit": "ms", "avg": "fast"}}}`,
			`profile_export_aiperf.json (aiperf-summary): field records.ttft.avg: "fast" is not a number`, 0, "records.ttft.avg"},
		{"aiperf summary csv label over two lines", "p.csv", "", "Metric,avg\n\"Time to\nFirst Token (ms)\",1\n",
			`p.csv (aiperf-summary-csv): no metrics`, 0, ""},
		{"llmperf", "x_summary.json", "", `{"results_ttft_s_mean": [1]}`,
			`x_summary.json (llmperf-summary): field results_ttft_s_mean: a list is not a number`, 0, "results_ttft_s_mean"},
		{"named format, wrong content", "data.bin", "aiperf", `{"benchmarks": []}`,
			`data.bin (aiperf): record 1: field metadata.request_start_ns: missing (and no timestamp_ns)`, 1, "metadata.request_start_ns"},
		{"no requests", "results.json", "", `{"model_id": "m", "request_throughput": null}`,
			`results.json (vllm-bench): no requests and no aggregate metrics`, 0, ""},
		{"unknown format name", "x.json", "nope", `{}`,
			`x.json: unknown format "nope" (known: ` + strings.Join(Formats(), ", ") + `)`, 0, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			run, err := Import(strings.NewReader(tc.data), tc.file, tc.format)
			var ie *ImportError
			if !errors.As(err, &ie) {
				t.Fatalf("Import = %+v, %v; want an *ImportError", run, err)
			}
			if err.Error() != tc.want {
				t.Errorf("error\n got: %s\nwant: %s", err, tc.want)
			}
			if ie.Record != tc.record || ie.Field != tc.field {
				t.Errorf("record %d field %q, want %d %q", ie.Record, ie.Field, tc.record, tc.field)
			}
		})
	}
}

func TestImportLimits(t *testing.T) {
	big := strings.Repeat("x", 2000)
	_, err := importLimited(strings.NewReader(big), "big.csv", "", 1000, 500)
	if !errors.Is(err, ErrTooLarge) || !strings.HasPrefix(err.Error(), "big.csv: ") {
		t.Errorf("file over the limit: %v", err)
	}
	line := `{"metadata": {"timestamp_ns": 1}, "metrics": {}, "error": null}` + "\n" + `{"metadata": {}, "x": "` + strings.Repeat("y", 600) + `"}` + "\n"
	_, err = importLimited(strings.NewReader(line), "p.jsonl", "aiperf", 10000, 500)
	var ie *ImportError
	if !errors.Is(err, ErrTooLarge) || !errors.As(err, &ie) || ie.Record != 2 {
		t.Errorf("line over the limit: %v", err)
	}
	if MaxImportBytes != 512<<20 || MaxLineBytes != 64<<20 {
		t.Errorf("limits %d, %d", MaxImportBytes, MaxLineBytes)
	}
	// A reader that fails mid-way.
	_, err = Import(io.MultiReader(strings.NewReader("{"), errReader{}), "r.json", "")
	if !errors.As(err, &ie) || !strings.Contains(err.Error(), "read: boom") {
		t.Errorf("read error: %v", err)
	}
}

type errReader struct{}

func (errReader) Read([]byte) (int, error) { return 0, errors.New("boom") }

// TestImportSemantics pins the per-format conventions on small inputs.
func TestImportSemantics(t *testing.T) {
	t.Run("vllm chunks are not tokens", func(t *testing.T) {
		run, err := Import(strings.NewReader(`{"model_id": "m", "max_concurrency": 1, "duration": 1,
			"input_lens": [10, 20], "output_lens": [6, 3], "ttfts": [0.1, 0.2], "itls": [[0.02, 0.04], [0.01, 0.01]], "errors": ["", ""]}`), "r.json", "")
		if err != nil {
			t.Fatal(err)
		}
		q := run.Requests[0]
		if q.OutputTokens != 6 || len(q.ChunkTimesS) != 2 || !near(q.E2ES, 0.16, 1e-12) || !near(q.ChunkTimesS[0], 0.12, 1e-12) {
			t.Errorf("request 0: %+v", q)
		}
		if tp, _ := q.TPOTS(); !near(tp, 0.06/5, 1e-12) {
			t.Errorf("tpot %v, want (e2e − ttft)/(out − 1)", tp)
		}
		// At max_concurrency 1 the sends are back to back.
		if !near(run.Requests[1].SendS, 0.16, 1e-12) || run.Model != "m" {
			t.Errorf("send %v model %q", run.Requests[1].SendS, run.Model)
		}
	})
	t.Run("vllm start_times", func(t *testing.T) {
		run, err := Import(strings.NewReader(`{"mean_ttft_ms": 1, "input_lens": [1, 2], "output_lens": [2, 2], "ttfts": [0.1, 0.1],
			"itls": [[0.1], [0.1]], "start_times": [1000.5, 1000.25]}`), "r.json", "")
		if err != nil {
			t.Fatal(err)
		}
		// Sorted by send: the second request went first.
		if q := run.Requests; q[0].SendS != 0 || q[0].InputTokens != 2 || q[1].SendS != 0.25 || len(run.Engine.Extra) != 0 {
			t.Errorf("requests %+v, notes %q", q, run.Engine.Extra)
		}
	})
	t.Run("failed requests", func(t *testing.T) {
		run, err := Import(strings.NewReader("send_s,input_tokens,output_tokens,ttft_ms,e2e_ms,error\n5,10,3,20,60,\n6,10,0,,,boom\n7,10,3,,,\n"), "r.csv", "")
		if err != nil {
			t.Fatal(err)
		}
		s := run.Summarize()
		if s.Completed != 1 || s.Failed != 2 || run.Requests[1].Error != "boom" || run.Requests[2].Error != "no timings" || run.Requests[0].SendS != 0 {
			t.Errorf("summary %+v, requests %+v", s, run.Requests)
		}
		if !math.IsNaN(run.Requests[1].TTFTS) {
			t.Errorf("failed request has a TTFT")
		}
	})
	t.Run("stages", func(t *testing.T) {
		run, err := Import(strings.NewReader("send_s,input_tokens,output_tokens,ttft_ms,e2e_ms,stage\n5,10,3,20,60,0\n9,10,3,20,60,1\n9.5,10,3,20,60,1\n"), "r.csv", "")
		if err != nil {
			t.Fatal(err)
		}
		if len(run.Stages) != 2 || run.Stage(1) == nil || len(run.Stage(1).Requests) != 2 || run.Stage(1).Requests[0].SendS != 0 || run.Stage(7) != nil {
			t.Errorf("stages %+v", run.Stages)
		}
	})
}

func TestFormats(t *testing.T) {
	seen := map[string]bool{}
	for _, f := range Formats() {
		if seen[f] || DescribeFormat(f) == "" {
			t.Errorf("format %q repeated or undescribed", f)
		}
		seen[f] = true
	}
	if DescribeFormat("nope") != "" {
		t.Errorf("unknown format described")
	}
}

// fuzzSeed shrinks a fixture, keeping it valid, so that the fuzzer's
// minimisation of inputs derived from it stays quick: JSON values keep two
// elements of each list and 32 bytes of each string, JSON Lines and CSV
// their first lines.
func fuzzSeed(b []byte) []byte {
	// bulky are keys of guidellm reports that an importer does not need.
	bulky := map[string]bool{"scheduler_state": true, "scheduler_metrics": true, "input_metrics": true, "output_metrics": true,
		"scheduler_info": true, "environment": true, "request_loader": true, "run_stats": true, "profile": true, "constraints": true,
		"warmup": true, "cooldown": true, "variance": true, "mode": true, "total_sum": true, "errored_requests": true,
		"incomplete": true, "total": true, "time_per_output_token_ms": true, "output_tokens_per_second": true, "requests_per_second": true,
		"tokens_per_second": true, "prompt_token_count": true, "output_token_count": true, "text": true, "image": true, "video": true, "audio": true,
		"backend": true, "request_args": true, "percentiles": true, "response_id": true, "request_id": true, "x_request_id": true, "x_correlation_id": true, "conversation_id": true}
	var shrink func(v any) any
	shrink = func(v any) any {
		switch x := v.(type) {
		case []any:
			x = x[:min(len(x), 2)]
			for i := range x {
				x[i] = shrink(x[i])
			}
			return x
		case map[string]any:
			for k := range x {
				if bulky[k] {
					delete(x, k)
					continue
				}
				x[k] = shrink(x[k])
			}
		case string:
			return x[:min(len(x), 32)]
		}
		return v
	}
	var out [][]byte
	for i, line := range bytes.Split(b, []byte("\n")) {
		if i == 4 {
			break
		}
		var v any
		dec := json.NewDecoder(bytes.NewReader(line))
		dec.UseNumber()
		if !bytes.HasPrefix(line, []byte("{")) || dec.Decode(&v) != nil {
			out = append(out, line) // CSV
			continue
		}
		j, _ := json.Marshal(shrink(v))
		out = append(out, j)
	}
	var v any
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if dec.Decode(&v) == nil && !dec.More() {
		j, _ := json.Marshal(shrink(v)) // one JSON value, maybe over several lines
		return j
	}
	return bytes.Join(out, []byte("\n"))
}

// FuzzImport: Import never panics, and every error is an *ImportError whose
// message starts with the name.
func FuzzImport(f *testing.F) {
	for _, c := range fixtureCases {
		b, err := os.ReadFile(c.path)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(fuzzSeed(b), uint8(0))
	}
	f.Add([]byte(`{"ttfts": [NaN, Infinity], "mean_ttft_ms": -Infinity, "input_lens": [1, 2], "output_lens": [1e300, -1]}`), uint8(0))
	f.Add([]byte("send_s,input_tokens,output_tokens,ttft_ms,e2e_ms\n1,2,3,4,5\n"), uint8(12))
	formats := Formats()
	f.Fuzz(func(t *testing.T, data []byte, which uint8) {
		format := ""
		if i := int(which) % (len(formats) + 1); i > 0 {
			format = formats[i-1]
		}
		run, err := Import(bytes.NewReader(data), "fuzz.in", format)
		if err != nil {
			var ie *ImportError
			if !errors.As(err, &ie) || !strings.HasPrefix(err.Error(), "fuzz.in") {
				t.Fatalf("error %T %q", err, err)
			}
			return
		}
		if run.Format == "" || (len(run.Requests) == 0 && run.Aggregate == nil && len(run.Stages) == 0) {
			t.Fatalf("empty run %+v", run)
		}
		for i, q := range run.Requests {
			if math.IsNaN(q.SendS) || q.SendS < 0 || q.InputTokens < 0 || q.OutputTokens < 0 {
				t.Fatalf("request %d: %+v", i, q)
			}
			if q.Error == "" && (math.IsNaN(q.TTFTS) || math.IsNaN(q.E2ES) || q.TTFTS < 0) {
				t.Fatalf("request %d without error has bad timings: %+v", i, q)
			}
		}
		run.Summarize()
	})
}

// TestFuzzSeedsImport checks that the shrunk fixtures still import as
// their format (so the fuzzer starts from valid files).
func TestFuzzSeedsImport(t *testing.T) {
	for _, c := range fixtureCases {
		b, err := os.ReadFile(c.path)
		if err != nil {
			t.Fatal(err)
		}
		seed := fuzzSeed(b)
		if len(seed) > 10<<10 {
			t.Errorf("%s: seed of %d bytes", c.path, len(seed))
		}
		if run, err := Import(bytes.NewReader(seed), c.path, ""); err != nil || run.Format != c.format {
			t.Errorf("%s: seed imports as %v, %v", c.path, run, err)
		}
	}
}
