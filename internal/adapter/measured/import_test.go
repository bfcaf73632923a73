package measured

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/headroom-sim/headroom/internal/testkit/golden"
	"github.com/headroom-sim/headroom/internal/testkit/refdata"

	"github.com/headroom-sim/headroom/sim/stats"
)

var update = flag.Bool("update", false, "rewrite testdata/golden")

// sharedData is the reference data folder beside the project (absent in a
// bare checkout: those tests skip).
var sharedData = refdata.Location() + "/measured"

// importCase is one file read by the golden tests.
type importCase struct {
	golden string // golden file name (without .json)
	path   string // from the package folder
	format string // the format Detect must find
}

// fixtureCases are the files under testdata: excerpts of real files and
// fixtures reconstructed from the tools' source (see the READMEs there).
var fixtureCases = []importCase{
	{"fixture-aiperf", "testdata/aiperf/profile_export.jsonl", "aiperf"},
	{"fixture-aiperf-newer-fields", "testdata/aiperf/profile_export-newer-fields.jsonl", "aiperf"},
	{"fixture-aiperf-summary", "testdata/aiperf-summary/profile_export_aiperf.json", "aiperf-summary"},
	{"fixture-aiperf-summary-csv", "testdata/aiperf-summary/profile_export_aiperf.csv", "aiperf-summary-csv"},
	{"fixture-genai-perf-summary", "testdata/aiperf-summary/profile_export_genai_perf.json", "aiperf-summary"},
	{"fixture-genai-perf", "testdata/genai-perf/profile_export.json", "genai-perf"},
	{"fixture-guidellm-0.6", "testdata/guidellm/benchmarks-0.6-excerpt.json", "guidellm"},
	{"fixture-guidellm-0.3", "testdata/guidellm/benchmarks-0.3.json", "guidellm"},
	{"fixture-guidellm-csv", "testdata/guidellm-csv/guidellm_requests.csv", "guidellm-csv"},
	{"fixture-inference-perf", "testdata/inference-perf/per_request_lifecycle_metrics.json", "inference-perf"},
	{"fixture-llmperf-summary", "testdata/llmperf-summary/meta-llama-Llama-2-7b-chat-hf_550_150_summary.json", "llmperf-summary"},
	{"fixture-llmservingsim", "testdata/llmservingsim/requests.jsonl", "llmservingsim"},
	{"fixture-sglang-bench", "testdata/sglang-bench/results.jsonl", "sglang-bench"},
	{"fixture-vllm-serve-detailed", "testdata/vllm-bench/serve-detailed.json", "vllm-bench"},
	{"fixture-vllm-serve-summary", "testdata/vllm-bench/serve-summary.json", "vllm-bench"},
	{"fixture-vllm-benchmark-serving-old", "testdata/vllm-bench/benchmark_serving-old.json", "vllm-bench"},
	{"fixture-vllm-appended", "testdata/vllm-bench/appended.jsonl", "vllm-bench"},
	{"fixture-csv", "testdata/csv/requests.csv", "csv"},
	{"fixture-blis-trace", "testdata/blis-trace/run/trace.csv", "blis-trace"},
	{"fixture-vllm-seconds-keys", "testdata/vllm-bench/benchmark_serving_random-seconds.json", "vllm-bench"},
	{"fixture-vllm-metadata", "testdata/vllm-bench/serve-metadata.json", "vllm-bench"},
	{"fixture-aiperf-0.10-summary", "testdata/aiperf-0.10/profile_export_aiperf.json", "aiperf-summary"},
	{"fixture-aiperf-0.10-summary-csv", "testdata/aiperf-0.10/profile_export_aiperf.csv", "aiperf-summary-csv"},
	// Whole real files, copied from the reference data's formats/ (see the
	// folders' READMEs), and fixtures of layouts no real file shows.
	{"fixture-genai-perf-csv", "testdata/genai-perf-csv/profile_export_genai_perf.csv", "aiperf-summary-csv"},
	{"fixture-llmperf-responses", "testdata/llmperf/vllm-cur1-01-ai-Yi-1-5-34B-Chat_550_150_individual_responses.json", "llmperf"},
	{"fixture-llmperf-summary-yi", "testdata/llmperf/vllm-cur1-01-ai-Yi-1-5-34B-Chat_550_150_summary.json", "llmperf-summary"},
	{"fixture-sglang-bench-appended", "testdata/sglang-bench/datacrunch-llama_3_3_70b_online_output.jsonl", "sglang-bench"},
	{"fixture-vllm-hf-cache-model", "testdata/vllm-bench/inferencex-gpt-oss-120b-concurrency-4.json", "vllm-bench"},
	{"fixture-vllm-all-failed", "testdata/vllm-bench/all-failed.json", "vllm-bench"},
	{"fixture-vllm-sweep-summary", "testdata/vllm-sweep/SERVE--max_num_seqs-32-BENCH--max_concurrency-8/summary.json", "vllm-bench"},
	{"fixture-vllm-sweep-run", "testdata/vllm-sweep/SERVE--max_num_seqs-32-BENCH--max_concurrency-8/run=1.json", "vllm-bench"},
	{"fixture-inference-perf-stage", projectData + "/inference-perf/vllm+v0_engine/results/stage_3_lifecycle_metrics.json", "inference-perf-report"},
	{"fixture-inference-perf-summary", projectData + "/inference-perf/vllm+v0_engine/results/summary_lifecycle_metrics.json", "inference-perf-report"},
}

// projectData is the project's own example runs (testdata/ at the root).
const projectData = "../../../testdata"

// realCases are whole files of the reference data.
var realCases = []importCase{
	{"real-aiperf-example-run1", sharedData + "/aiperf-example-run1/profile_export.jsonl", "aiperf"},
	{"real-aiperf-example-run1-summary", sharedData + "/aiperf-example-run1/profile_export_aiperf.json", "aiperf-summary"},
	{"real-aiperf-example-run1-summary-csv", sharedData + "/aiperf-example-run1/profile_export_aiperf.csv", "aiperf-summary-csv"},
	{"real-guidellm-jan20-codellama-prefill-1", sharedData + "/inference-sim-eval-ground-truth/jan20-codellama-prefill-1/guidellm-results.json", "guidellm"},
	{"real-guidellm-jan20-prefill-llama7b-tp1-1", sharedData + "/inference-sim-eval-ground-truth/jan20-prefill-llama7b-tp1-1/guidellm-results.json", "guidellm"},
	{"real-guidellm-csv-jan20-codellama-prefill-1", sharedData + "/inference-sim-eval-ground-truth/jan20-codellama-prefill-1/guidellm_requests.csv", "guidellm-csv"},
	{"real-guidellm-csv-jan20-prefill-llama7b-tp1-1", sharedData + "/inference-sim-eval-ground-truth/jan20-prefill-llama7b-tp1-1/guidellm_requests.csv", "guidellm-csv"},
	{"real-llmservingsim-RTX4090_Llama-3.1-8B", sharedData + "/llmservingsim/RTX4090_Llama-3.1-8B/requests.jsonl", "llmservingsim"},
	{"real-llmservingsim-RTXPRO6000_Llama-3.1-8B", sharedData + "/llmservingsim/RTXPRO6000_Llama-3.1-8B/requests.jsonl", "llmservingsim"},
	{"real-llmservingsim-RTXPRO6000_Qwen3-32B", sharedData + "/llmservingsim/RTXPRO6000_Qwen3-32B/requests.jsonl", "llmservingsim"},
	{"real-llmservingsim-RTXPRO6000_Qwen3-30B-A3B", sharedData + "/llmservingsim/RTXPRO6000_Qwen3-30B-A3B-Instruct-2507/requests.jsonl", "llmservingsim"},
	{"real-inference-perf-quantization-stage6", sharedData + "/inference-perf-kubecon/vllm+quantization/results/stage_6_lifecycle_metrics.json", "inference-perf-report"},
}

// readCase reads a case's file, skipping the test when reference data is
// absent.
func readCase(t testing.TB, c importCase) []byte {
	t.Helper()
	b, err := os.ReadFile(c.path)
	if err != nil {
		if strings.HasPrefix(c.path, sharedData) && os.IsNotExist(err) {
			t.Skipf("reference data not present: %s", c.path)
		}
		t.Fatal(err)
	}
	return b
}

func importCaseRun(t *testing.T, c importCase) *Run {
	t.Helper()
	run, err := Import(bytes.NewReader(readCase(t, c)), c.path, "")
	if err != nil {
		t.Fatalf("Import: %v", err)
	}
	if run.Format != c.format {
		t.Fatalf("format %q, want %q", run.Format, c.format)
	}
	return run
}

func TestImportGolden(t *testing.T) {
	for _, c := range append(append([]importCase(nil), fixtureCases...), realCases...) {
		t.Run(c.golden, func(t *testing.T) {
			run := importCaseRun(t, c)
			checkRunInvariants(t, run)
			got := goldenJSON(t, run)
			golden.Check(t, filepath.Join("testdata", "golden", c.golden+".json"), got, *update)
		})
	}
}

// checkRunInvariants checks what Import promises of every run.
func checkRunInvariants(t *testing.T, run *Run) {
	t.Helper()
	const eps = 1e-6
	stages := map[int]bool{}
	for _, s := range run.Stages {
		if stages[s.Index] {
			t.Errorf("stage %d listed twice", s.Index)
		}
		stages[s.Index] = true
	}
	minSend := math.Inf(1)
	for i, q := range run.Requests {
		if i > 0 {
			if p := run.Requests[i-1]; p.Stage > q.Stage || (p.Stage == q.Stage && p.SendS > q.SendS) {
				t.Errorf("request %d (stage %d, send %v) after stage %d, send %v", i, q.Stage, q.SendS, p.Stage, p.SendS)
			}
		}
		minSend = math.Min(minSend, q.SendS)
		if q.SendS < 0 || math.IsNaN(q.SendS) {
			t.Errorf("request %d: send %v", i, q.SendS)
		}
		if len(run.Stages) > 0 && !stages[q.Stage] {
			t.Errorf("request %d: stage %d not in Stages", i, q.Stage)
		}
		if q.InputTokens < 0 || q.OutputTokens < 0 {
			t.Errorf("request %d: tokens %d/%d", i, q.InputTokens, q.OutputTokens)
		}
		if q.Error != "" {
			if !math.IsNaN(q.TTFTS) || !math.IsNaN(q.E2ES) || q.ChunkTimesS != nil {
				t.Errorf("request %d: failed (%s) but has timings", i, q.Error)
			}
			continue
		}
		if !(q.TTFTS >= 0 && q.TTFTS <= q.E2ES+eps) {
			t.Errorf("request %d: ttft %v, e2e %v", i, q.TTFTS, q.E2ES)
		}
		prev := q.TTFTS
		for k, c := range q.ChunkTimesS {
			if c < prev-eps {
				t.Fatalf("request %d: chunk %d at %v before %v", i, k, c, prev)
			}
			prev = c
		}
		if n := len(q.ChunkTimesS); n > 0 && math.Abs(q.ChunkTimesS[n-1]-q.E2ES) > 1e-3 {
			t.Errorf("request %d: last chunk %v, e2e %v", i, q.ChunkTimesS[n-1], q.E2ES)
		}
	}
	if len(run.Requests) > 0 && minSend != 0 {
		t.Errorf("first send at %v, want 0", minSend)
	}
	if len(run.Requests) == 0 && run.Aggregate == nil && !slices.ContainsFunc(run.Stages, func(s StageInfo) bool { return s.Aggregate != nil }) {
		t.Errorf("no requests and no aggregate")
	}
	for _, a := range append([]*Aggregate{run.Aggregate}, stageAggregates(run)...) {
		if a != nil && a.Completed == 0 && a.Failed > 0 && (len(a.TTFTMS) > 0 || len(a.TPOTMS) > 0 || len(a.ITLMS) > 0 || len(a.E2EMS) > 0) {
			t.Errorf("aggregate with no completed request has latency statistics: %+v", a)
		}
	}
}

func stageAggregates(run *Run) []*Aggregate {
	var out []*Aggregate
	for _, s := range run.Stages {
		out = append(out, s.Aggregate)
	}
	return out
}

// goldenRequests is how many requests a golden file keeps.
const goldenRequests = 5

// goldenChunks is how many chunk times a golden request keeps.
const goldenChunks = 6

type goldenRequest struct {
	SendS        float64   `json:"send_s"`
	InputTokens  int       `json:"input_tokens"`
	OutputTokens int       `json:"output_tokens"`
	TTFTS        *float64  `json:"ttft_s"`
	E2ES         *float64  `json:"e2e_s"`
	Chunks       int       `json:"chunks,omitempty"`
	ChunkTimesS  []float64 `json:"chunk_times_s,omitempty"`
	Error        string    `json:"error,omitempty"`
	Stage        int       `json:"stage"`
}

type goldenStage struct {
	Index    int     `json:"index"`
	Requests int     `json:"requests"`
	Summary  Summary `json:"summary"`
}

func goldenJSON(t *testing.T, run *Run) []byte {
	t.Helper()
	head := *run
	head.Requests = nil
	// The first requests, and the first completed one if none of those is.
	keep := run.Requests[:min(len(run.Requests), goldenRequests)]
	if !slices.ContainsFunc(keep, func(q Request) bool { return q.OK() }) {
		if i := slices.IndexFunc(run.Requests, func(q Request) bool { return q.OK() }); i >= 0 {
			keep = append(slices.Clip(keep), run.Requests[i])
		}
	}
	var reqs []goldenRequest
	for _, q := range keep {
		g := goldenRequest{SendS: q.SendS, InputTokens: q.InputTokens, OutputTokens: q.OutputTokens, Error: q.Error, Stage: q.Stage, Chunks: len(q.ChunkTimesS)}
		if !math.IsNaN(q.TTFTS) {
			g.TTFTS = &q.TTFTS
		}
		if !math.IsNaN(q.E2ES) {
			g.E2ES = &q.E2ES
		}
		g.ChunkTimesS = q.ChunkTimesS[:min(len(q.ChunkTimesS), goldenChunks)]
		reqs = append(reqs, g)
	}
	var stages []goldenStage
	if len(run.Stages) > 1 {
		for _, s := range run.Stages {
			sr := run.Stage(s.Index)
			stages = append(stages, goldenStage{Index: s.Index, Requests: len(sr.Requests), Summary: sr.Summarize()})
		}
	}
	v := struct {
		Run           Run             `json:"run"`
		RequestsTotal int             `json:"requests_total"`
		FirstRequests []goldenRequest `json:"first_requests"` // the first goldenRequests, plus the first completed
		Summary       *Summary        `json:"summary,omitempty"`
		StageSummary  []goldenStage   `json:"stage_summaries,omitempty"`
	}{Run: head, RequestsTotal: len(run.Requests), FirstRequests: reqs, StageSummary: stages}
	if len(run.Requests) > 0 {
		s := run.Summarize()
		v.Summary = &s
	}
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	// Round floats to 9 significant digits so the files do not depend on
	// the last bits of a platform's arithmetic.
	var tree map[string]any
	if err := json.Unmarshal(b, &tree); err != nil {
		t.Fatal(err)
	}
	delete(tree["run"].(map[string]any), "requests") // in first_requests
	out, err := json.MarshalIndent(round9(tree), "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return append(out, '\n')
}

func round9(v any) any {
	switch x := v.(type) {
	case float64:
		r, _ := strconv.ParseFloat(strconv.FormatFloat(x, 'g', 9, 64), 64)
		return r
	case []any:
		for i := range x {
			x[i] = round9(x[i])
		}
	case map[string]any:
		for k := range x {
			x[k] = round9(x[k])
		}
	}
	return v
}

// near reports whether a and b agree to rel (relative) or 1e-9.
func near(a, b, rel float64) bool {
	return math.Abs(a-b) <= rel*math.Max(math.Abs(a), math.Abs(b))+1e-9
}

// TestImportMatchesToolAggregates checks the importers' timings against the
// summaries the tools wrote themselves in the same files.
func TestImportMatchesToolAggregates(t *testing.T) {
	check := func(t *testing.T, what string, got stats.Summary, want map[string]float64, rel float64, keys ...string) {
		t.Helper()
		for _, k := range keys {
			w, ok := want[k]
			if !ok {
				t.Errorf("%s: tool aggregate has no %s", what, k)
				continue
			}
			g, _ := got.At(k)
			if !near(g, w, rel) {
				t.Errorf("%s %s: imported %v, tool %v", what, k, g, w)
			}
		}
	}
	t.Run("aiperf", func(t *testing.T) {
		run := importCaseRun(t, realCases[0])
		agg := importCaseRun(t, realCases[1]).Aggregate
		s := run.Summarize()
		if s.Completed != 89 || s.Failed != 11 || agg.Completed != 89 || agg.Failed != 11 {
			t.Errorf("completed %d failed %d, aggregate %d/%d, want 89/11", s.Completed, s.Failed, agg.Completed, agg.Failed)
		}
		check(t, "ttft", s.TTFTMS, agg.TTFTMS, 1e-9, "mean", "p50", "p90", "p95", "p99", "max")
		check(t, "e2e", s.E2EMS, agg.E2EMS, 1e-9, "mean", "p50", "p99", "max")
		check(t, "tpot", s.TPOTMS, agg.TPOTMS, 1e-9, "mean", "p50", "p99")
		csv := importCaseRun(t, realCases[2]).Aggregate
		check(t, "csv ttft", s.TTFTMS, csv.TTFTMS, 1e-5, "mean", "p50", "p99")
		if !near(csv.RequestsPerS, agg.RequestsPerS, 1e-3) || !near(csv.OutputTokensPerS, agg.OutputTokensPerS, 1e-3) {
			t.Errorf("csv throughput %v/%v, json %v/%v", csv.RequestsPerS, csv.OutputTokensPerS, agg.RequestsPerS, agg.OutputTokensPerS)
		}
	})
	// The 0.6 excerpt keeps 3 requests of 40 a stage: its aggregates are
	// the whole run's, so it is not compared.
	for _, c := range []importCase{fixtureCases[7], realCases[3], realCases[4]} {
		t.Run(c.golden, func(t *testing.T) {
			run := importCaseRun(t, c)
			if len(run.Stages) < 2 {
				t.Fatalf("%d stages", len(run.Stages))
			}
			for _, st := range run.Stages {
				s := run.Stage(st.Index).Summarize()
				if st.Aggregate == nil {
					t.Fatalf("stage %d: no aggregate", st.Index)
				}
				// All requests are kept in these files, so the means agree; E2E
				// differs by the close of the response (request_end vs last
				// token, under a millisecond). guidellm weights its
				// inter-token distribution by each request's output tokens − 1.
				check(t, "ttft", s.TTFTMS, st.Aggregate.TTFTMS, 1e-6, "mean", "max")
				check(t, "e2e", s.E2EMS, st.Aggregate.E2EMS, 5e-3, "mean")
				var decode, gaps float64
				for _, q := range run.Stage(st.Index).Requests {
					if q.OK() && q.OutputTokens > 1 {
						decode += q.E2ES - q.TTFTS
						gaps += float64(q.OutputTokens - 1)
					}
				}
				if w := st.Aggregate.TPOTMS["mean"]; !near(decode/gaps*1e3, w, 1e-6) {
					t.Errorf("stage %d: token-weighted tpot %v, tool %v", st.Index, decode/gaps*1e3, w)
				}
			}
		})
	}
	for _, c := range []importCase{fixtureCases[13], fixtureCases[15], fixtureCases[12]} {
		t.Run(c.golden, func(t *testing.T) {
			run := importCaseRun(t, c)
			for _, st := range append([]StageInfo{{Index: 0, Aggregate: run.Aggregate}}, run.Stages...) {
				sub := run.Stage(st.Index)
				a := st.Aggregate
				if a == nil {
					continue
				}
				s := sub.Summarize()
				check(t, "ttft", s.TTFTMS, a.TTFTMS, 1e-9, "mean", "p50", "p99")
				check(t, "tpot", s.TPOTMS, a.TPOTMS, 1e-9, "mean", "p50", "p99")
				if s.Completed != a.Completed {
					t.Errorf("completed %d, file %d", s.Completed, a.Completed)
				}
			}
		})
	}
}

// TestImportSameRunTwoFormats reads one run through two files.
func TestImportSameRunTwoFormats(t *testing.T) {
	pairs := [][2]importCase{{realCases[3], realCases[5]}, {realCases[4], realCases[6]}}
	for _, p := range pairs {
		t.Run(p[0].golden, func(t *testing.T) {
			a, b := importCaseRun(t, p[0]), importCaseRun(t, p[1])
			if len(a.Stages) != len(b.Stages) || len(a.Requests) != len(b.Requests) {
				t.Fatalf("stages %d/%d requests %d/%d", len(a.Stages), len(b.Stages), len(a.Requests), len(b.Requests))
			}
			for _, st := range a.Stages {
				sa, sb := a.Stage(st.Index).Summarize(), b.Stage(st.Index).Summarize()
				if !near(sa.TTFTMS.Mean, sb.TTFTMS.Mean, 1e-9) || !near(sa.E2EMS.P99, sb.E2EMS.P99, 1e-9) || sa.Completed != sb.Completed {
					t.Errorf("stage %d: json %+v, csv %+v", st.Index, sa, sb)
				}
			}
		})
	}
	t.Run("llmservingsim", func(t *testing.T) {
		c := realCases[7]
		run := importCaseRun(t, c)
		dir, err := LoadLLMServingSim(os.DirFS(filepath.Dir(filepath.Dir(c.path))), filepath.Base(filepath.Dir(c.path)))
		if err != nil {
			t.Fatal(err)
		}
		if len(dir.Requests) != len(run.Requests) {
			t.Fatalf("%d vs %d requests", len(dir.Requests), len(run.Requests))
		}
		for i := range run.Requests {
			x, y := run.Requests[i], dir.Requests[i]
			if x.SendS != y.SendS || x.TTFTS != y.TTFTS || x.E2ES != y.E2ES || x.InputTokens != y.InputTokens || x.OutputTokens != y.OutputTokens {
				t.Fatalf("request %d: %+v vs %+v", i, x, y)
			}
		}
	})
}

func TestDetect(t *testing.T) {
	for _, c := range append(append([]importCase(nil), fixtureCases...), realCases...) {
		t.Run(c.golden, func(t *testing.T) {
			b := readCase(t, c)
			// Content alone decides: the name is no help.
			got, err := Detect(b[:min(len(b), detectHeadBytes)], "upload.bin")
			if err != nil || got != c.format {
				t.Errorf("Detect = %q, %v; want %q", got, err, c.format)
			}
			// A short head (a truncated first record) still works for JSON.
			if n := 4096; len(b) > n && b[0] != 'M' && !strings.HasSuffix(c.path, ".csv") {
				if got, err := Detect(b[:n], "upload.bin"); err != nil || got != c.format {
					t.Errorf("Detect(first %d bytes) = %q, %v; want %q", n, got, err, c.format)
				}
			}
		})
	}
	for _, tc := range []struct {
		name, head, file, want string
		err                    error
	}{
		{"name fallback jsonl", `{}`, "runs/profile_export.jsonl", "aiperf", nil},
		{"name fallback summary", `{"x": 1}`, "llama_550_150_summary.json", "llmperf-summary", nil},
		{"name fallback csv", "a,b\n1,2\n", "data.CSV", "csv", nil},
		{"unknown json", `{"foo": 1, "bar": [1, 2]}`, "results.json", "", ErrUnknownFormat},
		{"unknown text", "hello world", "notes.txt", "", ErrUnknownFormat},
		{"empty", "", "empty.json", "", ErrUnknownFormat},
		{"ambiguous", `{"benchmarks": [], "experiments": []}`, "x.json", "", ErrAmbiguousFormat},
		{"vllm over sglang keys", `{"mean_ttft_ms": 1, "mean_e2e_latency_ms": 2}`, "x.json", "sglang-bench", nil},
		{"python literals", `{"request_rate": Infinity, "mean_ttft_ms": NaN, "ttfts": []}`, "x.json", "vllm-bench", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Detect([]byte(tc.head), tc.file)
			if tc.err != nil {
				var ie *ImportError
				if !errors.As(err, &ie) || !errors.Is(err, tc.err) || !strings.HasPrefix(err.Error(), tc.file+": ") {
					t.Fatalf("Detect = %q, %v; want %v starting with the name", got, err, tc.err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Errorf("Detect = %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}
