package sim_test

import (
	"context"
	"encoding/json"
	"flag"
	"github.com/headroom-sim/headroom/internal/testkit/golden"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/headroom-sim/headroom/catalogs"
	"github.com/headroom-sim/headroom/internal/study/scenario"
	"github.com/headroom-sim/headroom/sim"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/golden")

// simulate decodes doc, applies the overrides, resolves and runs it.
func simulate(t *testing.T, doc string, overrides ...string) *sim.Report {
	t.Helper()
	s, err := scenario.Decode(strings.NewReader(doc), "scenario")
	if err != nil {
		t.Fatal(err)
	}
	var ovs []scenario.Override
	for _, o := range overrides {
		ov, err := scenario.ParseOverride(o)
		if err != nil {
			t.Fatal(err)
		}
		ovs = append(ovs, ov)
	}
	if s, err = scenario.With(s, ovs...); err != nil {
		t.Fatal(err)
	}
	cat, err := catalogs.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	res, err := s.Resolve(scenario.Env{Catalog: cat})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := sim.Run(context.Background(), res.Config)
	if err != nil {
		t.Fatal(err)
	}
	if rep.KVCache.NumGPUBlocks != res.Memory.NumGPUBlocks {
		t.Errorf("report kv_cache.num_gpu_blocks %d, memory model %d", rep.KVCache.NumGPUBlocks, res.Memory.NumGPUBlocks)
	}
	return rep
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestReportGolden pins the JSON report of a small fixed run:
// examples/poisson.yaml shortened to 300 requests. It changes whenever
// the simulator's behaviour or the step-time defaults do: rerun with
// -update and review the diff.
func TestReportGolden(t *testing.T) {
	rep := simulate(t, readFile(t, filepath.Join("..", "examples", "poisson.yaml")), "workload.requests=300")
	got, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	got = append(got, '\n')
	golden.Check(t, filepath.Join("testdata", "golden", "poisson-300.json"), got, *update)
	checkReportInvariants(t, rep)
	if rep.Requests.Total != 300 || rep.SLA == nil || rep.GoodputRPS == nil {
		t.Errorf("requests %+v, sla %v, goodput %v", rep.Requests, rep.SLA, rep.GoodputRPS)
	}
}

// checkReportInvariants holds for every report: each request accounted
// for, quantiles in order, goodput at most throughput.
func checkReportInvariants(t *testing.T, rep *sim.Report) {
	t.Helper()
	r := rep.Requests
	// Total is counted as the clients issue requests, the others as they
	// end (or, for unfinished, found in the queues at the end).
	if r.Total != r.Completed+r.Rejected+r.Unfinished || r.Unfinished != 0 {
		t.Errorf("requests %+v: issued is not completed + rejected + unfinished, or some are unfinished", r)
	}
	n := 0
	for _, k := range r.RejectedReasons {
		n += k
	}
	if n != r.Rejected {
		t.Errorf("rejected reasons %v sum to %d, rejected %d", r.RejectedReasons, n, r.Rejected)
	}
	for name, s := range map[string]struct{ v []float64 }{
		"ttft_ms": {[]float64{rep.TTFTMS.P50, rep.TTFTMS.P90, rep.TTFTMS.P95, rep.TTFTMS.P99, rep.TTFTMS.P999, rep.TTFTMS.Max}},
		"tpot_ms": {[]float64{rep.TPOTMS.P50, rep.TPOTMS.P90, rep.TPOTMS.P95, rep.TPOTMS.P99, rep.TPOTMS.P999, rep.TPOTMS.Max}},
		"e2e_ms":  {[]float64{rep.E2EMS.P50, rep.E2EMS.P90, rep.E2EMS.P95, rep.E2EMS.P99, rep.E2EMS.P999, rep.E2EMS.Max}},
		"itl_ms":  {[]float64{rep.ITLMS.P50, rep.ITLMS.P90, rep.ITLMS.P95, rep.ITLMS.P99, rep.ITLMS.P999, rep.ITLMS.Max}},
	} {
		if !sort.Float64sAreSorted(s.v) || s.v[0] <= 0 {
			t.Errorf("%s quantiles %v are not positive and in order", name, s.v)
		}
	}
	if rep.TTFTMS.Count != int64(r.Completed) || rep.E2EMS.Count != int64(r.Completed) {
		t.Errorf("ttft count %d, e2e count %d, completed %d", rep.TTFTMS.Count, rep.E2EMS.Count, r.Completed)
	}
	if rep.E2EMS.Mean < rep.TTFTMS.Mean {
		t.Errorf("mean e2e %v below mean ttft %v", rep.E2EMS.Mean, rep.TTFTMS.Mean)
	}
	if rep.KVCache.PeakUsageRatio < rep.KVCache.MeanUsageRatio || rep.KVCache.PeakUsageRatio > 1 {
		t.Errorf("kv usage %+v", rep.KVCache)
	}
	if rep.CoStartedRatio < 0 || rep.CoStartedRatio > 1 {
		t.Errorf("co_started_ratio %v is not a share of the completed requests", rep.CoStartedRatio)
	}
	if tp := rep.Throughput; tp.TotalTokensPerS <= 0 || tp.TotalTokensPerS-(tp.InputTokensPerS+tp.OutputTokensPerS) > 0.01*tp.TotalTokensPerS {
		t.Errorf("throughput %+v", tp)
	}
	if rep.GoodputRPS != nil && *rep.GoodputRPS > rep.Throughput.RequestsPerS*1.0001 {
		t.Errorf("goodput %v above throughput %v", *rep.GoodputRPS, rep.Throughput.RequestsPerS)
	}
	if len(rep.Stages) > 0 {
		total := 0
		for _, st := range rep.Stages {
			total += st.Requests.Total
		}
		if total != r.Total {
			t.Errorf("stages hold %d requests, the run %d", total, r.Total)
		}
	}
}

// everything is a short run that shows every key of the report: an SLA,
// a network round trip, a staircase, a time series, prompts longer than
// max_model_len (rejections), and speculative decoding.
const everything = `
model: llama-3.1-8b
gpu: h100-sxm
network_rtt_ms: 5
engine:
  max_model_len: 2048
  speculative: {method: ngram, num_speculative_tokens: 2}
workload:
  stages:
    - {duration_s: 4, rate_rps: 5}
    - {duration_s: 4, rate_rps: 10}
  input_tokens: {type: uniform, min: 100, max: 2600}
  output_tokens: {type: fixed, value: 64}
sla:
  ttft_ms: {p99: 1000}
  tpot_ms: {p50: 50}
report:
  timeseries: true
`

// plain is the same without the optional parts.
const plain = `
model: llama-3.1-8b
gpu: h100-sxm
workload:
  requests: 60
  arrival: {rate_rps: 10}
  input_tokens: {type: fixed, value: 256}
  output_tokens: {type: fixed, value: 32}
`

var latencyStats = []string{"mean", "p50", "p90", "p95", "p99", "p999", "max", "count"}

// reportKeys are the keys docs/scenario.md's "The report" table promises
// (and TestReportTable checks it still lists).
var reportKeys = []string{
	"model", "gpu", "tp", "replicas", "seed", "duration_s",
	"ttft_ms", "server_ttft_ms", "tpot_ms", "itl_ms", "e2e_ms", "queue_ms", "prefill_ms", "decode_ms",
	"percentiles.per_request", "percentiles.itl", "percentiles.exact_up_to", "percentiles.histogram_relative_error",
	"percentiles.stages_exact_up_to",
	"throughput.requests_per_s", "throughput.input_tokens_per_s", "throughput.output_tokens_per_s", "throughput.total_tokens_per_s",
	"requests.total", "requests.completed", "requests.rejected", "requests.unfinished", "requests.rejected_reasons",
	"preemptions", "prefix_cache_hit_ratio",
	"kv_cache.num_gpu_blocks", "kv_cache.peak_usage_ratio", "kv_cache.mean_usage_ratio",
	"fluency.itl_cv", "fluency.stalls", "fluency.longest_stall_ms", "fluency.stall_threshold_ms",
	"max_running", "co_started_ratio", "goodput_rps", "sla.met", "sla.checks[]",
	"speculative.method", "speculative.num_speculative_tokens", "speculative.acceptance_source", "speculative.drafts",
	"speculative.draft_tokens", "speculative.accepted_tokens", "speculative.acceptance_rate", "speculative.mean_acceptance_length",
	"speculative.per_position_acceptance_rate[]", "speculative.tokens_per_request_step", "speculative.output_tokens_per_step",
	"speculative.proposer_time_ratio", "speculative.acceptance_warning",
	"stages[]", "timeseries[]",
	"simulation.events", "simulation.steps", "simulation.simulated_s",
}

// Keys of each element of the arrays.
var (
	stageKeys = []string{"ttft_ms", "tpot_ms", "itl_ms", "e2e_ms", "queue_ms", "requests", "throughput", "preemptions", "fluency", "goodput_rps", "sla",
		"per_request_percentiles"}
	pointKeys = []string{"t_s", "running", "waiting", "kv_usage_ratio", "output_tokens_per_s", "prompt_tokens_per_s", "preemptions_total", "completed_total"}
)

// disaggKeys are the keys of a disaggregated run's report (the table
// lists them too).
var disaggKeys = func() []string {
	var out []string
	for _, k := range []string{"prefill_queue_ms", "prefill_ms", "kv_admission_ms", "kv_transfer_ms", "first_decode_ms"} {
		out = append(out, "disaggregation.ttft_breakdown."+k)
	}
	for _, k := range []string{"link", "overlap", "bandwidth_gbps", "latency_us", "transfers", "mb_per_request_per_gpu", "link_busy_ratio"} {
		out = append(out, "disaggregation.kv_transfer."+k)
	}
	for _, pool := range []string{"prefill", "decode"} {
		for _, k := range []string{"gpu", "tp", "dp", "replicas", "gpus", "router", "utilization_ratio", "kv_cache", "prefix_cache_hit_ratio", "steps", "preemptions", "max_running",
			"throughput.requests_per_s", "throughput.prompt_tokens_per_s", "throughput.output_tokens_per_s", "throughput.prompt_tokens_per_s_per_gpu", "throughput.output_tokens_per_s_per_gpu"} {
			out = append(out, "disaggregation."+pool+"."+k)
		}
	}
	return out
}()

// disaggregated is plain on a prefill and a decode pool.
const disaggregated = plain + `
disaggregation:
  decode: {gpu: h200}
`

// TestDisaggReportKeys checks a disaggregated run's report has every
// disaggregation key the report table promises, and a plain one has none.
func TestDisaggReportKeys(t *testing.T) {
	rep := simulate(t, disaggregated)
	checkReportInvariants(t, rep)
	v := reportJSON(t, rep)
	for _, k := range disaggKeys {
		got, ok := lookup(v, k)
		if !ok {
			t.Errorf("the report has no %s", k)
			continue
		}
		if strings.HasSuffix(k, "_ms") {
			checkLatency(t, got, k)
		}
	}
	if _, ok := lookup(reportJSON(t, simulate(t, plain)), "disaggregation"); ok {
		t.Error("an aggregated run reports a disaggregation section")
	}
}

// optionalKeys appear only when asked for (an SLA, stages, a time
// series, speculative decoding) or when there is something to report
// (rejections).
var optionalKeys = []string{"goodput_rps", "sla.met", "sla.checks[]", "stages[]", "timeseries[]", "requests.rejected_reasons",
	"percentiles.stages_exact_up_to",
	"speculative.method", "speculative.num_speculative_tokens", "speculative.acceptance_source", "speculative.drafts",
	"speculative.draft_tokens", "speculative.accepted_tokens", "speculative.acceptance_rate", "speculative.mean_acceptance_length",
	"speculative.per_position_acceptance_rate[]", "speculative.tokens_per_request_step", "speculative.output_tokens_per_step",
	"speculative.proposer_time_ratio", "speculative.acceptance_warning"}

// lookup follows a dotted path ("a.b", "x[]" = a non-empty array, whose
// first element is returned) through decoded JSON.
func lookup(v any, path string) (any, bool) {
	for _, k := range strings.Split(path, ".") {
		arr := strings.HasSuffix(k, "[]")
		m, ok := v.(map[string]any)
		if !ok {
			return nil, false
		}
		if v, ok = m[strings.TrimSuffix(k, "[]")]; !ok {
			return nil, false
		}
		if arr {
			a, ok := v.([]any)
			if !ok || len(a) == 0 {
				return nil, false
			}
			v = a[0]
		}
	}
	return v, true
}

func reportJSON(t *testing.T, rep *sim.Report) map[string]any {
	t.Helper()
	b, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	var v map[string]any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	return v
}

func checkLatency(t *testing.T, v any, where string) {
	t.Helper()
	m, ok := v.(map[string]any)
	if !ok {
		t.Errorf("%s is %T, not a latency summary", where, v)
		return
	}
	for _, k := range latencyStats {
		if _, ok := m[k]; !ok {
			t.Errorf("%s has no %s", where, k)
		}
	}
}

// TestReportKeys checks the report's JSON has every key the report table
// (docs/scenario.md) promises,
// and the optional ones only when asked for.
func TestReportKeys(t *testing.T) {
	full := simulate(t, everything)
	checkReportInvariants(t, full)
	if full.Requests.Rejected == 0 {
		t.Fatal("no request was rejected: the scenario no longer shows requests.rejected_reasons")
	}
	v := reportJSON(t, full)
	for _, k := range reportKeys {
		got, ok := lookup(v, k)
		if !ok {
			t.Errorf("the report has no %s", k)
			continue
		}
		if strings.HasSuffix(k, "_ms") && !strings.Contains(k, ".") {
			checkLatency(t, got, k)
		}
	}
	st, _ := lookup(v, "stages[]")
	for _, k := range stageKeys {
		if got, ok := lookup(st, k); !ok {
			t.Errorf("stages[0] has no %s", k)
		} else if strings.HasSuffix(k, "_ms") {
			checkLatency(t, got, "stages[0]."+k)
		}
	}
	if len(full.Stages) != 2 {
		t.Errorf("%d stages, want 2", len(full.Stages))
	}
	pt, _ := lookup(v, "timeseries[]")
	for _, k := range pointKeys {
		if _, ok := lookup(pt, k); !ok {
			t.Errorf("timeseries[0] has no %s", k)
		}
	}

	p := reportJSON(t, simulate(t, plain))
	for _, k := range reportKeys {
		_, ok := lookup(p, k)
		if want := !slices.Contains(optionalKeys, k); ok != want {
			t.Errorf("plain report: %s present %v, want %v", k, ok, want)
		}
	}
}

// TestReportTable keeps reportKeys, stageKeys and pointKeys in step with
// the report table of docs/scenario.md: every key it lists is checked
// above (the autoscaler's keys are checked against an autoscaled example
// run by cmd/headroom's TestReportDocListsEveryKey).
func TestReportTable(t *testing.T) {
	doc := readFile(t, filepath.Join("..", "docs", "scenario.md"))
	_, section, ok := strings.Cut(doc, "\n## The report\n")
	if !ok {
		t.Fatal(`docs/scenario.md has no "## The report" section`)
	}
	tick := regexp.MustCompile("`([^`]+)`")
	var keys []string
	for _, line := range strings.Split(section, "\n")[1:] {
		if strings.HasPrefix(line, "#") {
			break
		}
		cells := strings.Split(line, "|")
		if len(cells) < 4 || !strings.Contains(cells[1], "`") {
			continue
		}
		var rowKeys []string
		for _, m := range tick.FindAllStringSubmatch(cells[1], -1) {
			rowKeys = append(rowKeys, expandBraces(m[1])...)
		}
		// The autoscaler's keys are checked against an autoscaled
		// example; the error bands' and the speculation verdict's are set
		// by the callers (internal/study/uncertainty, headroom simulate),
		// not sim.Run: cmd/headroom's TestReportDocListsEveryKey checks
		// them all.
		if strings.HasPrefix(rowKeys[0], "autoscale.") || strings.HasPrefix(rowKeys[0], "uncertainty.") || strings.Contains(rowKeys[0], "_interval.") || strings.HasPrefix(rowKeys[0], "speculative.verdict.") {
			continue
		}
		keys = append(keys, rowKeys...)
		// Arrays list their elements' keys in the meaning column.
		if len(rowKeys) == 1 && strings.HasSuffix(rowKeys[0], "[]") {
			want := map[string][]string{"stages[]": stageKeys, "timeseries[]": pointKeys}[rowKeys[0]]
			for _, m := range tick.FindAllStringSubmatch(cells[2], -1) {
				if k := m[1]; !strings.Contains(k, ".") && !slices.Contains(want, k) {
					t.Errorf("docs/scenario.md lists %s.%s; the test does not check it", rowKeys[0], k)
				}
			}
		}
	}
	if len(keys) < 20 {
		t.Fatalf("found %d keys in the report table: %v", len(keys), keys)
	}
	for _, k := range keys {
		if !slices.Contains(reportKeys, k) && !slices.Contains(disaggKeys, k) {
			t.Errorf("docs/scenario.md lists %s; the test does not check it", k)
		}
	}
	for _, k := range disaggKeys {
		if !slices.Contains(keys, k) {
			t.Errorf("the test checks %s, which docs/scenario.md does not list", k)
		}
	}
	for _, k := range reportKeys {
		if !slices.Contains(keys, k) {
			t.Errorf("the test checks %s, which docs/scenario.md does not list", k)
		}
	}
}

// expandBraces turns "a.{b, c}" into a.b, a.c, and "a.{b, c}.{d, e}"
// into a.b.d, a.b.e, a.c.d, a.c.e.
func expandBraces(s string) []string {
	pre, rest, ok := strings.Cut(s, "{")
	if !ok {
		return []string{s}
	}
	inner, post, _ := strings.Cut(rest, "}")
	var out []string
	for _, p := range strings.Split(inner, ",") {
		for _, tail := range expandBraces(post) {
			out = append(out, pre+strings.TrimSpace(p)+tail)
		}
	}
	return out
}
