package workload

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"github.com/headroom-sim/headroom/internal/testkit/golden"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/iotest"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/golden")

// fixtures are the trace fixtures under testdata and their formats.
var fixtures = []struct {
	file, format string
	rows         int
	skipped      int
}{
	{"azure_conv.csv", FormatAzure, 20, 0},
	{"azure_code.csv", FormatAzure, 20, 0},
	{"mooncake_conversation.jsonl", FormatMooncake, 20, 0},
	{"mooncake_synthetic.jsonl", FormatMooncake, 20, 0},
	{"llmservingsim_workload.jsonl", FormatLLMServingSim, 5, 0},
	{"llmservingsim_requests.jsonl", FormatLLMServingSim, 20, 0},
	{"llmservingsim_requests.jsonl", FormatJSONL, 20, 0},
	{"burstgpt.csv", FormatBurstGPT, 5, 2},
	{"generic.csv", FormatCSV, 4, 0},
	{"generic.jsonl", FormatJSONL, 3, 0},
}

func readFixture(t testing.TB, file string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", file))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// checkRecords checks the invariants of every parsed trace.
func checkRecords(t testing.TB, recs []TraceRecord) {
	t.Helper()
	if len(recs) == 0 {
		t.Fatal("no records")
	}
	if recs[0].ArrivalS != 0 {
		t.Errorf("first arrival %g, want 0", recs[0].ArrivalS)
	}
	for i, r := range recs {
		if r.InputTokens < 1 || r.OutputTokens < 1 || r.InputTokens > MaxTokens || r.OutputTokens > MaxTokens {
			t.Fatalf("record %d: tokens %d/%d", i, r.InputTokens, r.OutputTokens)
		}
		if !(r.ArrivalS >= 0) || r.ArrivalS > 2*maxAbsTimestamp {
			t.Fatalf("record %d: arrival %g", i, r.ArrivalS)
		}
		if i > 0 && r.ArrivalS < recs[i-1].ArrivalS {
			t.Fatalf("record %d: arrival %g before %g", i, r.ArrivalS, recs[i-1].ArrivalS)
		}
	}
}

// Each fixture parses to its golden records (regenerate with -update).
func TestParseTraceGolden(t *testing.T) {
	for _, fx := range fixtures {
		t.Run(fx.format+"/"+fx.file, func(t *testing.T) {
			tr, err := ParseTraceDetailed(bytes.NewReader(readFixture(t, fx.file)), fx.format, fx.file)
			if err != nil {
				t.Fatal(err)
			}
			checkRecords(t, tr.Records)
			if len(tr.Records) != fx.rows || tr.SkippedFailed != fx.skipped {
				t.Errorf("%d records, %d skipped; want %d, %d", len(tr.Records), tr.SkippedFailed, fx.rows, fx.skipped)
			}
			got, err := json.MarshalIndent(tr, "", " ")
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, '\n')
			golden.Check(t, filepath.Join("testdata", "golden", strings.TrimSuffix(fx.file, filepath.Ext(fx.file))+"."+fx.format+".json"), got, *update)
		})
	}
}

// Spot checks of values against the fixture files, independent of the golden files.
func TestParseTraceValues(t *testing.T) {
	tests := []struct {
		file, format string
		index        int
		want         TraceRecord
	}{
		// 2023-11-16 18:15:50.9951690 - 18:15:46.6805900
		{"azure_conv.csv", FormatAzure, 1, TraceRecord{ArrivalS: 4.314579, InputTokens: 396, OutputTokens: 109}},
		{"mooncake_conversation.jsonl", FormatMooncake, 3, TraceRecord{ArrivalS: 0, InputTokens: 2290, OutputTokens: 316, HashIDs: []int64{0, 42, 43, 44, 45}}},
		// arrival_time_ns 347938951 - 46926808
		// 1034 prompt token ids: 64 full 16-token blocks hashed.
		{"llmservingsim_workload.jsonl", FormatLLMServingSim, 1, TraceRecord{ArrivalS: 0.301012143, InputTokens: 1034, OutputTokens: 769,
			HashIDs: HashTokenBlocks(fixtureTokenIDs(t, "llmservingsim_workload.jsonl", 1), LLMServingSimBlockTokens)}},
		{"burstgpt.csv", FormatBurstGPT, 1, TraceRecord{ArrivalS: 113, InputTokens: 417, OutputTokens: 276}},
		// unsorted input: 0.25 (b), 0.25 (e) keep their order, then 0.5, 1.0
		{"generic.csv", FormatCSV, 0, TraceRecord{ArrivalS: 0, InputTokens: 256, OutputTokens: 32}},
		{"generic.csv", FormatCSV, 1, TraceRecord{ArrivalS: 0, InputTokens: 100, OutputTokens: 1}},
		{"generic.csv", FormatCSV, 3, TraceRecord{ArrivalS: 0.75, InputTokens: 512, OutputTokens: 16}},
		{"generic.jsonl", FormatJSONL, 2, TraceRecord{ArrivalS: 2, InputTokens: 2000, OutputTokens: 1}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			recs, err := ParseTrace(bytes.NewReader(readFixture(t, tt.file)), tt.format, tt.file)
			if err != nil {
				t.Fatal(err)
			}
			got := recs[tt.index]
			if d := got.ArrivalS - tt.want.ArrivalS; d > 1e-9 || d < -1e-9 || got.InputTokens != tt.want.InputTokens ||
				got.OutputTokens != tt.want.OutputTokens || len(got.HashIDs) != len(tt.want.HashIDs) {
				t.Fatalf("record %d = %+v, want %+v", tt.index, got, tt.want)
			}
			for i := range got.HashIDs {
				if got.HashIDs[i] != tt.want.HashIDs[i] {
					t.Fatalf("hash ids %v, want %v", got.HashIDs, tt.want.HashIDs)
				}
			}
		})
	}
}

// Malformed input: the error is a *ParseError with the exact message.
func TestParseTraceErrors(t *testing.T) {
	tests := []struct {
		name, format, input string
		want                string
	}{
		{"csv bad int", FormatCSV, "arrival_s,input_tokens,output_tokens\n0,1,1\n1,abc,2\n", `trace.csv:3: field input_tokens: "abc" is not an integer`},
		{"csv fractional", FormatCSV, "arrival_s,input_tokens,output_tokens\n0,1.5,1\n", `trace.csv:2: field input_tokens: "1.5" is not an integer`},
		{"csv zero output", FormatCSV, "arrival_s,input_tokens,output_tokens\n0,1,0\n", `trace.csv:2: field output_tokens: must be >= 1, got 0`},
		{"csv negative input", FormatCSV, "arrival_s,input_tokens,output_tokens\n0,-4,3\n", `trace.csv:2: field input_tokens: must be >= 1, got -4`},
		{"csv huge", FormatCSV, "arrival_s,input_tokens,output_tokens\n0,99999999999,3\n", `trace.csv:2: field input_tokens: 99999999999 exceeds 1073741824`},
		{"csv bad time", FormatCSV, "arrival_s,input_tokens,output_tokens\nsoon,1,1\n", `trace.csv:2: field arrival_s: "soon" is not a number`},
		{"csv NaN time", FormatCSV, "arrival_s,input_tokens,output_tokens\nNaN,1,1\n", `trace.csv:2: field arrival_s: "NaN" is not a number`},
		{"csv time out of range", FormatCSV, "arrival_s,input_tokens,output_tokens\n1e300,1,1\n", `trace.csv:2: field arrival_s: "1e300" is out of range (|t| <= 1e+15 s)`},
		{"csv field count", FormatCSV, "arrival_s,input_tokens,output_tokens\n0,1,1\n\n0,1\n", `trace.csv:4: has 2 fields, the header has 3`},
		{"csv missing column", FormatCSV, "time,input_tokens,output_tokens\n0,1,1\n", `trace.csv:1: field arrival_s: missing column (want one of arrival_s, timestamp_s, arrival_time; the header has "time,input_tokens,output_tokens")`},
		{"csv ambiguous column", FormatCSV, "arrival_s,input_tokens,prompt_tokens,output_tokens\n0,1,1,1\n", `trace.csv:1: field prompt_tokens: ambiguous: both input_tokens and prompt_tokens are present`},
		{"csv duplicate column", FormatCSV, "arrival_s,a,A\n", `trace.csv:1: field A: duplicate column in the header`},
		{"csv bad quote", FormatCSV, "arrival_s,input_tokens,output_tokens\n0,\"1,1\n", `trace.csv:2: malformed CSV: extraneous or missing " in quoted-field`},
		{"csv header only", FormatCSV, "arrival_s,input_tokens,output_tokens\n", `trace.csv: no records`},
		{"csv empty", FormatCSV, "", `trace.csv: no records`},
		{"csv blank", FormatCSV, "\n \r\n", `trace.csv: no records`},
		{"unknown format", "sharegpt", "x", `trace.csv: unknown trace format "sharegpt" (want one of azure, mooncake, burstgpt, csv, jsonl, llmservingsim)`},
		{"azure bad time", FormatAzure, "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.68,374,44\n2023-13-16 18:15:46.68,374,44\n", `trace.csv:3: field TIMESTAMP: "2023-13-16 18:15:46.68" is not a time like "2023-11-16 18:15:46.6805900"`},
		{"azure zero generated", FormatAzure, "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.68,374,0\n", `trace.csv:2: field GeneratedTokens: must be >= 1, got 0`},
		{"azure centuries apart", FormatAzure, "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46,1,1\n2523-11-16 18:15:46,1,1\n", `trace.csv:3: field TIMESTAMP: "2523-11-16 18:15:46" is more than 285 years from the first row`},
		{"azure missing column", FormatAzure, "TIMESTAMP,ContextTokens\n", `trace.csv:1: field GeneratedTokens: missing column (want GeneratedTokens; the header has "TIMESTAMP,ContextTokens")`},
		{"burstgpt bad response", FormatBurstGPT, "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n1,ChatGPT,5,x,5,API log\n", `trace.csv:2: field Response tokens: "x" is not an integer`},
		{"burstgpt zero request", FormatBurstGPT, "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n1,ChatGPT,0,5,5,API log\n", `trace.csv:2: field Request tokens: must be >= 1, got 0`},
		{"burstgpt all failed", FormatBurstGPT, "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n1,ChatGPT,5,0,5,API log\n2,ChatGPT,5,0,5,API log\n", `trace.csv: no records (2 failed requests skipped)`},
		{"jsonl not json", FormatJSONL, "{\"arrival_s\": 0, \"input_tokens\": 1, \"output_tokens\": 1}\n{oops}\n", `trace.csv:2: not a JSON object: invalid character 'o' looking for beginning of object key string`},
		{"jsonl array", FormatJSONL, "[1,2]\n", `trace.csv:1: not a JSON object: json: cannot unmarshal array into Go value of type map[string]json.RawMessage`},
		{"jsonl null", FormatJSONL, "null\n", `trace.csv:1: not a JSON object`},
		{"jsonl string number", FormatJSONL, "{\"arrival_s\": 0, \"input_tokens\": \"12\", \"output_tokens\": 1}\n", `trace.csv:1: field input_tokens: "\"12\"" is a string, want a number`},
		{"jsonl missing output", FormatJSONL, "{\"arrival_s\": 0, \"input_tokens\": 12}\n", `trace.csv:1: field output_tokens: missing (want one of output_tokens, completion_tokens, output_toks)`},
		{"jsonl missing arrival", FormatJSONL, "{\"input_tokens\": 12}\n", `trace.csv:1: field arrival_s: missing (want one of arrival_s, timestamp_s, arrival_time)`},
		{"jsonl null arrival", FormatJSONL, "{\"arrival_s\": null, \"input_tokens\": 12, \"output_tokens\": 1}\n", `trace.csv:1: field arrival_s: is null, want a number`},
		{"jsonl bool tokens", FormatJSONL, "{\"arrival_s\": 1, \"input_tokens\": true, \"output_tokens\": 1}\n", `trace.csv:1: field input_tokens: "true" is not a number`},
		{"jsonl ambiguous", FormatJSONL, "{\"arrival_s\": 1, \"arrival_time\": 1}\n", `trace.csv:1: field arrival_time: ambiguous: both arrival_s and arrival_time are present`},
		{"mooncake zero output", FormatMooncake, "{\"timestamp\": 0, \"input_length\": 600, \"output_length\": 0, \"hash_ids\": [1, 2]}\n", `trace.csv:1: field output_length: must be >= 1, got 0`},
		{"mooncake hash count", FormatMooncake, "{\"timestamp\": 0, \"input_length\": 600, \"output_length\": 5}\n{\"timestamp\": 3, \"input_length\": 600, \"output_length\": 5, \"hash_ids\": [1]}\n", `trace.csv:2: field hash_ids: has 1 ids for 600 input tokens, want 2 (one per 512-token block)`},
		{"mooncake hash not ints", FormatMooncake, "{\"timestamp\": 0, \"input_length\": 600, \"output_length\": 5, \"hash_ids\": [1, \"a\"]}\n", `trace.csv:1: field hash_ids: is not a list of integers`},
		{"mooncake no timestamp", FormatMooncake, "{\"input_length\": 600, \"output_length\": 5}\n", `trace.csv:1: field timestamp: missing`},
		{"llmservingsim mismatch", FormatLLMServingSim, "{\"arrival_time_ns\": 5, \"input_toks\": 3, \"input_tok_ids\": [1, 2], \"output_toks\": 1}\n", `trace.csv:1: field input_toks: is 3 but input_tok_ids has 2 ids`},
		{"llmservingsim no input", FormatLLMServingSim, "{\"arrival_time_ns\": 5, \"output_toks\": 1}\n", `trace.csv:1: field input_toks: missing (want input_toks or input_tok_ids)`},
		{"llmservingsim empty ids", FormatLLMServingSim, "{\"arrival_time_ns\": 5, \"input_tok_ids\": [], \"output_toks\": 1}\n", `trace.csv:1: field input_tok_ids: is empty, want >= 1 token`},
		{"llmservingsim no arrival", FormatLLMServingSim, "{\"input_toks\": 5, \"output_toks\": 1}\n", `trace.csv:1: field arrival_time_ns: missing (want one of arrival_time_ns, arrival_time)`},
		{"llmservingsim zero output", FormatLLMServingSim, "{\"arrival_time\": 5.5, \"input_toks\": 5, \"output_toks\": 0}\n", `trace.csv:1: field output_toks: must be >= 1, got 0`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseTrace(strings.NewReader(tt.input), tt.format, "trace.csv")
			var pe *ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("error %v (%T), want a *ParseError", err, err)
			}
			if err.Error() != tt.want {
				t.Fatalf("error\n%s\nwant\n%s", err, tt.want)
			}
		})
	}
}

func TestParseTraceSentinels(t *testing.T) {
	tests := []struct {
		name, format, input string
		want                error
	}{
		{"empty", FormatMooncake, "", ErrEmptyTrace},
		{"unknown format", "tsv", "a", ErrUnknownFormat},
		{"long line", FormatJSONL, "{\"arrival_s\": 0, \"input_tokens\": 1, \"output_tokens\": 1}\n" + strings.Repeat(" ", MaxLineBytes+1) + "\n", ErrLineTooLong},
		{"long last line", FormatCSV, "arrival_s,input_tokens,output_tokens\n" + strings.Repeat("9", MaxLineBytes+1), ErrLineTooLong},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseTrace(strings.NewReader(tt.input), tt.format, "x")
			if !errors.Is(err, tt.want) {
				t.Fatalf("error %v, want %v", err, tt.want)
			}
		})
	}
	_, err := ParseTrace(strings.NewReader("{}\n"+strings.Repeat("x", 3<<20)), FormatJSONL, "big.jsonl")
	if err == nil || err.Error() != "big.jsonl:1: field arrival_s: missing (want one of arrival_s, timestamp_s, arrival_time)" {
		t.Fatalf("error %v: the first line is reported before the long one is read", err)
	}
	_, err = ParseTrace(strings.NewReader("arrival_s,input_tokens,output_tokens\n"+strings.Repeat("x", 3<<20)), FormatCSV, "big.csv")
	if err == nil || err.Error() != "big.csv:2: line longer than 1 MiB" {
		t.Fatalf("error %v, want big.csv:2: line longer than 1 MiB", err)
	}
}

// A line of exactly MaxLineBytes is accepted, with "\r\n" or without.
func TestParseTraceLineAtLimit(t *testing.T) {
	for _, eol := range []string{"", "\n", "\r\n"} {
		obj := `{"arrival_s": 0, "input_tokens": 1, "output_tokens": 1, "pad": ""}`
		line := obj[:len(obj)-2] + strings.Repeat("p", MaxLineBytes-len(obj)) + `"}`
		if len(line) != MaxLineBytes {
			t.Fatalf("line is %d bytes", len(line))
		}
		if _, err := ParseTrace(strings.NewReader(line+eol), FormatJSONL, "x"); err != nil {
			t.Fatalf("eol %q: %v", eol, err)
		}
	}
}

func TestParseTraceReadError(t *testing.T) {
	r := io.MultiReader(strings.NewReader("arrival_s,input_tokens,output_tokens\n0,1,1\n"), iotest.ErrReader(errors.New("disk on fire")))
	_, err := ParseTrace(r, FormatCSV, "t.csv")
	if err == nil || err.Error() != "t.csv:3: read: disk on fire" {
		t.Fatalf("error %v", err)
	}
}

// The parsers read one byte at a time as well as in blocks.
func TestParseTraceOneByteReader(t *testing.T) {
	for _, fx := range fixtures {
		b := readFixture(t, fx.file)
		want, err := ParseTrace(bytes.NewReader(b), fx.format, fx.file)
		if err != nil {
			t.Fatal(err)
		}
		got, err := ParseTrace(iotest.OneByteReader(bytes.NewReader(b)), fx.format, fx.file)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(want) {
			t.Fatalf("%s: %d records one byte at a time, %d at once", fx.file, len(got), len(want))
		}
	}
}

func TestParseTraceSortIsStable(t *testing.T) {
	in := "arrival_s,input_tokens,output_tokens\n5,1,1\n3,2,1\n5,3,1\n3,4,1\n-1,5,1\n"
	recs, err := ParseTrace(strings.NewReader(in), FormatCSV, "s.csv")
	if err != nil {
		t.Fatal(err)
	}
	var order []int
	var times []float64
	for _, r := range recs {
		order = append(order, r.InputTokens)
		times = append(times, r.ArrivalS)
	}
	if want := []int{5, 2, 4, 1, 3}; !slices.Equal(order, want) {
		t.Errorf("order %v, want %v", order, want)
	}
	if want := []float64{0, 4, 4, 6, 6}; !slices.Equal(times, want) {
		t.Errorf("times %v, want %v", times, want)
	}
}

func TestParseAzureTime(t *testing.T) {
	tests := []struct {
		in        string
		sec, nsec int64
		ok        bool
	}{
		{"2023-11-16 18:15:46.6805900", 1700158546, 680590000, true},
		{"2023-11-16 18:15:46", 1700158546, 0, true},
		{"2023-11-16T18:15:46.5", 1700158546, 500000000, true},
		{"2023-11-16 18:15:46.123456789123", 1700158546, 123456789, true},
		{"2023-11-16 18:15:46.25Z", 1700158546, 250000000, true},
		{"2023-11-16 20:15:46.25+02:00", 1700158546, 250000000, true},
		{"2023-11-16 16:15:46-02:00", 1700158546, 0, true},
		{" 2023-11-16 18:15:46 ", 1700158546, 0, true},
		{"2023-11-16 18:15:46.", 0, 0, false},
		{"2023-11-16 18:15:46.12x", 0, 0, false},
		{"2023-11-16 18:15", 0, 0, false},
		{"2023-11-16 25:15:46", 0, 0, false},
		{"16/11/2023 18:15:46", 0, 0, false},
		{"2023-11-16 18:15:46+0200", 0, 0, false},
		{"1700158546", 0, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			sec, nsec, reason := parseAzureTime(tt.in)
			if ok := reason == ""; ok != tt.ok || sec != tt.sec || nsec != tt.nsec {
				t.Fatalf("parseAzureTime = %d, %d, %q; want %d, %d, ok %v", sec, nsec, reason, tt.sec, tt.nsec, tt.ok)
			}
		})
	}
}

// fixtureTokenIDs is the input_tok_ids of line i (0-based) of a fixture.
func fixtureTokenIDs(t *testing.T, file string, i int) []int64 {
	t.Helper()
	lines := bytes.Split(readFixture(t, file), []byte("\n"))
	var v struct {
		IDs []int64 `json:"input_tok_ids"`
	}
	if err := json.Unmarshal(lines[i], &v); err != nil || len(v.IDs) == 0 {
		t.Fatalf("%s line %d: %v (%d ids)", file, i+1, err, len(v.IDs))
	}
	return v.IDs
}

// TestHashTokenBlocks: FNV-1a over each full block's ids (eight
// little-endian bytes each), halved; values computed independently.
func TestHashTokenBlocks(t *testing.T) {
	seq := func(a, b int64) []int64 {
		var s []int64
		for i := a; i < b; i++ {
			s = append(s, i)
		}
		return s
	}
	sevens := make([]int64, 16)
	for i := range sevens {
		sevens[i] = 7
	}
	for _, c := range []struct {
		name  string
		ids   []int64
		block int
		want  []int64
	}{
		{"one block", seq(0, 16), 16, []int64{2285855913485205394}},
		{"two blocks and a partial one", seq(0, 40), 16, []int64{2285855913485205394, 1289136698041403282}},
		{"repeated ids", sevens, 16, []int64{6100347598197914898}},
		{"block of two", []int64{1, 2}, 2, []int64{4290747377652101171}},
		{"no full block", seq(0, 15), 16, nil},
		{"no block size", seq(0, 16), 0, nil},
	} {
		if got := HashTokenBlocks(c.ids, c.block); !slices.Equal(got, c.want) {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
	// The same content at two places of a prompt hashes alike (the
	// simulator chains the blocks into prefix hashes itself).
	ids := append(seq(0, 16), seq(0, 16)...)
	if h := HashTokenBlocks(ids, 16); len(h) != 2 || h[0] != h[1] {
		t.Errorf("repeated block: %v", h)
	}
}

// TestParseTraceInOrder keeps the file's order, times from the earliest.
func TestParseTraceInOrder(t *testing.T) {
	in := "arrival_s,input_tokens,output_tokens\n1.0,10,1\n0.5,20,2\n2.0,30,3\n"
	recs, err := ParseTraceInOrder(strings.NewReader(in), FormatCSV, "t.csv")
	if err != nil {
		t.Fatal(err)
	}
	want := []TraceRecord{{ArrivalS: 0.5, InputTokens: 10, OutputTokens: 1}, {ArrivalS: 0, InputTokens: 20, OutputTokens: 2}, {ArrivalS: 1.5, InputTokens: 30, OutputTokens: 3}}
	if !slices.EqualFunc(recs, want, func(a, b TraceRecord) bool {
		return a.ArrivalS == b.ArrivalS && a.InputTokens == b.InputTokens && a.OutputTokens == b.OutputTokens
	}) {
		t.Errorf("%+v, want %+v", recs, want)
	}
	if _, err := ParseTraceInOrder(strings.NewReader("arrival_s,input_tokens,output_tokens\n"), FormatCSV, "e.csv"); !errors.Is(err, ErrEmptyTrace) {
		t.Errorf("empty: %v", err)
	}
	if _, err := ParseTraceInOrder(strings.NewReader(in), "nope", "t.csv"); !errors.Is(err, ErrUnknownFormat) {
		t.Errorf("unknown format: %v", err)
	}
}
