package measured

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"math"
	"path"
	"slices"
	"strings"
)

// Limits on what Import reads: a file over MaxImportBytes or a line (of a
// JSON Lines or CSV file) over MaxLineBytes is refused with an
// *ImportError wrapping ErrTooLarge.
const (
	MaxImportBytes = 512 << 20
	MaxLineBytes   = 64 << 20
)

// detectHeadBytes is how much of the input Import shows Detect.
const detectHeadBytes = 1 << 20

// Sentinel errors an *ImportError may wrap (match with errors.Is).
var (
	ErrUnknownFormat   = errors.New("unknown format")
	ErrAmbiguousFormat = errors.New("ambiguous format")
	ErrTooLarge        = errors.New("input too large")
	// ErrRunTable is a file that holds many runs, one per row (the
	// aiconfigurator-silicon table): ReadSilicon reads it, Import does not.
	ErrRunTable = errors.New("a table of runs")
)

// ImportError is a bad or unreadable benchmark file: the file's name, the
// format Import read it as ("" when it could not tell), the 1-based record
// (a request, a line or a benchmark, as each format says; 0 = the whole
// file), the field, and what is wrong.
type ImportError struct {
	Format string
	Name   string
	Record int
	Field  string
	Reason string
	// Err is a sentinel (ErrUnknownFormat, ErrAmbiguousFormat,
	// ErrTooLarge, ErrRunTable) or nil.
	Err error
}

// Error reads like
// `results.json (vllm-bench): record 17: field ttfts: "abc" is not a number`.
func (e *ImportError) Error() string {
	var b strings.Builder
	b.WriteString(e.Name)
	if e.Format != "" {
		fmt.Fprintf(&b, " (%s)", e.Format)
	}
	b.WriteString(": ")
	if e.Record > 0 {
		fmt.Fprintf(&b, "record %d: ", e.Record)
	}
	if e.Field != "" {
		fmt.Fprintf(&b, "field %s: ", e.Field)
	}
	b.WriteString(e.Reason)
	return b.String()
}

func (e *ImportError) Unwrap() error { return e.Err }

// importFormat is one importable result format.
type importFormat struct {
	name string
	// what the format reads, for DescribeFormat.
	what string
	// sniff reports whether the start of a file looks like this format.
	sniff func(s *shape) bool
	// files are base names (or, starting with "." or "_", suffixes) that
	// this format's files usually have; used when the content says nothing.
	files []string
	parse func(p *parser) (*Run, error)
}

// importTable is the formats, in the order Formats lists them; each
// format's file holds its sniff and parse functions.
var importTable = []importFormat{
	{"vllm-bench", "vLLM `bench serve --save-result [--save-detailed]` / benchmark_serving.py JSON, and `vllm bench sweep serve` run=N.json and summary.json", sniffVLLM, nil, parseVLLMBench},
	{"sglang-bench", "SGLang `bench_serving --output-file` JSONL (with --output-details for per-request data)", sniffSGLang, nil, parseSGLangBench},
	{"genai-perf", "GenAI-Perf / perf_analyzer profile_export.json", sniffGenAIPerf, []string{"profile_export.json"}, parseGenAIPerf},
	{"aiperf", "AIPerf profile_export.jsonl (per-request records)", sniffAIPerf, []string{"profile_export.jsonl"}, parseAIPerf},
	{"aiperf-summary", "AIPerf profile_export_aiperf.json or GenAI-Perf profile_export_genai_perf.json (aggregates)", sniffPerfSummary, []string{"profile_export_aiperf.json", "profile_export_genai_perf.json"}, parsePerfSummary},
	{"aiperf-summary-csv", "AIPerf profile_export_aiperf.csv or GenAI-Perf profile_export_genai_perf.csv (aggregates)", sniffPerfSummaryCSV, []string{"profile_export_aiperf.csv", "profile_export_genai_perf.csv"}, parsePerfSummaryCSV},
	{"guidellm", "guidellm benchmarks.json (0.3 and 0.6 report layouts)", sniffGuidellm, []string{"benchmarks.json", "guidellm-results.json"}, parseGuidellm},
	{"guidellm-csv", "compact per-request CSV derived from a guidellm report (reference data guidellm_requests.csv)", sniffGuidellmCSV, []string{"guidellm_requests.csv"}, parseGuidellmCSV},
	{"inference-perf", "inference-perf per-request lifecycle metrics JSON", sniffInferencePerf, []string{"per_request_lifecycle_metrics.json"}, parseInferencePerf},
	{"inference-perf-report", "inference-perf stage_N_lifecycle_metrics.json or summary_lifecycle_metrics.json (aggregates; a results folder reads every stage)", sniffInferencePerfReport, []string{"summary_lifecycle_metrics.json", "_lifecycle_metrics.json"}, parseInferencePerfReport},
	{"llmservingsim", "LLMServingSim bench requests.jsonl", sniffLLMServingSim, []string{"requests.jsonl"}, parseLLMServingSimJSONL},
	{"llmperf", "llmperf *_individual_responses.json (per-request records; the folder with its summary gives the concurrency)", sniffLLMPerfResponses, []string{"_individual_responses.json"}, parseLLMPerfResponses},
	{"llmperf-summary", "llmperf *_summary.json (aggregates)", sniffLLMPerf, []string{"_summary.json", "summary.json"}, parseLLMPerfSummary},
	{FormatBlisTrace, "inference-sim `blis observe` trace v3: trace.csv (one row a request; the folder adds trace.yaml, trace.itl.csv and a server_config.json above it)", sniffBlisTrace, []string{"trace.csv"}, parseBlisTrace},
	{"csv", "Headroom's plain per-request CSV (see csv.go)", sniffPlainCSV, []string{".csv"}, parsePlainCSV},
}

// Formats lists the format names Import accepts.
func Formats() []string {
	fs := importTable
	out := make([]string, len(fs))
	for i, f := range fs {
		out[i] = f.name
	}
	return out
}

// DescribeFormat says in a line what files a format name reads ("" for an
// unknown name).
func DescribeFormat(name string) string {
	f, _ := lookupFormat(name)
	return f.what
}

func lookupFormat(name string) (importFormat, bool) {
	for _, f := range importTable {
		if f.name == name {
			return f, true
		}
	}
	return importFormat{}, false
}

// Import reads one benchmark result file. format is one of Formats(), or
// "" to detect it (see Detect). name is the file's name: it is used in
// errors and as Run.Name, and its extension helps detection.
//
// What every importer guarantees: Run.Format is the format read; SendS is
// seconds from the run's first send; TTFTS and E2ES are seconds from the
// request's send to its first and last streamed chunk (NaN for failed
// requests); ChunkTimesS, where the tool records them, are the arrival times
// of the chunks after the first, relative to the send (a chunk may carry
// several tokens); token counts are as the tool counted them; failed
// requests keep an Error. A file that holds several benchmarks (a guidellm
// sweep, appended vLLM or SGLang results) becomes one Run whose Requests
// carry their benchmark's index in Stage, described by Run.Stages. Files
// with only aggregates give a Run with no Requests and Run.Aggregate set.
// TP and DP are 0 (unknown) unless the file states them. Assumptions a
// format forces (reconstructed send times, token counts not in the file)
// are written to Run.Engine.Extra. Requests are in stage order, then send
// order.
//
// Every error is an *ImportError.
func Import(r io.Reader, name, format string) (*Run, error) {
	return importLimited(r, name, format, MaxImportBytes, MaxLineBytes)
}

func importLimited(r io.Reader, name, format string, maxBytes, maxLine int) (*Run, error) {
	if name == "" {
		name = "input"
	}
	data, err := io.ReadAll(io.LimitReader(r, int64(maxBytes)+1))
	if err != nil {
		return nil, &ImportError{Format: format, Name: name, Reason: "read: " + err.Error()}
	}
	if len(data) > maxBytes {
		return nil, &ImportError{Format: format, Name: name, Reason: fmt.Sprintf("larger than %d MiB", maxBytes>>20), Err: ErrTooLarge}
	}
	if format == "" {
		if format, err = Detect(data[:min(len(data), detectHeadBytes)], name); err != nil {
			return nil, err
		}
	}
	f, ok := lookupFormat(format)
	if !ok {
		return nil, &ImportError{Name: name, Reason: fmt.Sprintf("unknown format %q (known: %s)", format, strings.Join(Formats(), ", ")), Err: ErrUnknownFormat}
	}
	p := &parser{format: f.name, name: name, data: data, maxLine: maxLine}
	run, err := f.parse(p)
	if err != nil {
		var ie *ImportError
		if errors.As(err, &ie) {
			return nil, ie
		}
		return nil, p.errf(0, "", "%v", err)
	}
	run.Name, run.Format = baseName(name), f.name
	run.normaliseModel()
	run.tidyIgnored()
	if err := p.check(run); err != nil {
		return nil, err
	}
	return run, nil
}

// check enforces the guarantees Import documents on a parsed run.
func (p *parser) check(run *Run) error {
	if len(run.Requests) == 0 && run.Aggregate == nil && !slices.ContainsFunc(run.Stages, func(s StageInfo) bool { return s.Aggregate != nil }) {
		return p.errf(0, "", "no requests and no aggregate metrics")
	}
	for i := range run.Requests {
		q := &run.Requests[i]
		if math.IsNaN(q.SendS) || math.IsInf(q.SendS, 0) {
			return p.errf(i+1, "", "no send time")
		}
		if q.Error == "" && (math.IsNaN(q.TTFTS) || math.IsNaN(q.E2ES)) {
			q.Error = "no timings"
		}
		if q.Error != "" {
			q.TTFTS, q.E2ES, q.ChunkTimesS = math.NaN(), math.NaN(), nil
		}
	}
	slices.SortStableFunc(run.Requests, func(a, b Request) int {
		if a.Stage != b.Stage {
			return a.Stage - b.Stage
		}
		return cmp.Compare(a.SendS, b.SendS)
	})
	run.normalise()
	return nil
}

// baseName is the last element of a slash- or backslash-separated name.
func baseName(name string) string {
	return path.Base(strings.ReplaceAll(name, `\`, "/"))
}

// Detect names the format of a file from its first bytes (head; Import
// passes the first MiB) and, when the content does not say, from its name.
// Content rules, on the first JSON value (the first line of JSON Lines,
// the first element of an array) or the CSV header:
//
//	vllm-bench        object (or array of them: a sweep summary) with mean_ttft_ms / ttfts / mean_e2el_ms / model_id+request_throughput, and none of SGLang's keys
//	sglang-bench      object with mean_e2e_latency_ms / total_output_tokens_retokenized / sharegpt_output_len
//	genai-perf        object with top-level experiments
//	aiperf            object with top-level metadata and metrics
//	aiperf-summary    object with top-level records, or input_config beside metric objects (ttft, time_to_first_token, request_latency)
//	guidellm          object with top-level benchmarks
//	inference-perf    array or JSON Lines of objects with start_time, end_time and info
//	inference-perf-report  object with top-level load_summary and successes
//	llmperf           array of objects with ttft_s, end_to_end_latency_s and number_output_tokens or error_code
//	llmservingsim     object with arrival_time and first_token_ts or queued_ts
//	llmperf-summary   object with results_ttft_s_* or results_end_to_end_latency_s_* keys
//	aiperf-summary-csv  CSV whose header starts with Metric
//	guidellm-csv      CSV with benchmark_index and first_token_iteration columns
//	blis-trace        CSV with send_time_us, first_chunk_time_us, last_chunk_time_us and output_tokens columns
//	csv               CSV with send_s (or send_time_s), input_tokens, output_tokens, ttft_ms, e2e_ms columns
//
// More than one match is an ErrAmbiguousFormat error; none falls back to
// the name (profile_export.jsonl, benchmarks.json, requests.jsonl,
// *_summary.json, *.csv …), then to an ErrUnknownFormat error.
func Detect(head []byte, name string) (string, error) {
	if name == "" {
		name = "input"
	}
	s := sniff(head)
	var hits []string
	for _, f := range importTable {
		if f.sniff(s) {
			hits = append(hits, f.name)
		}
	}
	switch len(hits) {
	case 1:
		return hits[0], nil
	case 0:
		if s.kind == kindCSV && IsSiliconHeader(s.header) {
			return "", &ImportError{Format: FormatSilicon, Name: name, Reason: "a table of closed-loop runs, one per row, not one benchmark's result (validate replays it)", Err: ErrRunTable}
		}
	default:
		return "", &ImportError{Name: name, Reason: "content matches several formats (" + strings.Join(hits, ", ") + "); name one", Err: ErrAmbiguousFormat}
	}
	base := strings.ToLower(baseName(name))
	for _, f := range importTable {
		for _, n := range f.files {
			if base == n {
				return f.name, nil
			}
		}
	}
	for _, f := range importTable {
		for _, n := range f.files {
			if strings.HasPrefix(n, ".") || strings.HasPrefix(n, "_") {
				if strings.HasSuffix(base, n) {
					return f.name, nil
				}
			}
		}
	}
	what := "content"
	switch s.kind {
	case kindEmpty:
		what = "empty input"
	case kindJSONObject, kindJSONArray, kindJSONLines:
		what = "JSON"
		if len(s.keys) > 0 {
			what += " with keys " + s.keyList(8)
		}
	case kindCSV:
		what = "CSV with header " + strings.Join(s.header[:min(len(s.header), 8)], ",")
	}
	return "", &ImportError{Name: name, Reason: fmt.Sprintf("cannot tell the format of %s; known formats: %s", what, strings.Join(Formats(), ", ")), Err: ErrUnknownFormat}
}

// trimBOM drops a UTF-8 byte order mark.
func trimBOM(b []byte) []byte {
	return bytes.TrimPrefix(b, []byte("\xef\xbb\xbf"))
}
