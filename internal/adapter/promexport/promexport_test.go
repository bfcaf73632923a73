package promexport_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"math"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/headroom-sim/headroom/internal/testkit/golden"

	"github.com/headroom-sim/headroom/catalogs"
	"github.com/headroom-sim/headroom/internal/adapter/plot"
	"github.com/headroom-sim/headroom/internal/adapter/promexport"
	"github.com/headroom-sim/headroom/internal/study/scenario"
	"github.com/headroom-sim/headroom/sim"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// smallRun is a hand-made three-second run: two requests, a few token
// gaps, one preemption, and one completion after the last tick.
func smallRun() (*sim.Report, *promexport.Collector) {
	rep := &sim.Report{Model: "meta-llama/Llama-3.1-8B-Instruct", Replicas: 1, Timeseries: []sim.TimePoint{
		{TS: 1, Running: 2, Waiting: 1, KVUsageRatio: 0.125, OutputTokensPerS: 2, PromptTokensPerS: 1024},
		{TS: 2, Running: 1, Waiting: 0, KVUsageRatio: 0.5, OutputTokensPerS: 30, PromptTokensPerS: 512, PreemptionsTotal: 1, CompletedTotal: 1},
		{TS: 3, Running: 0, Waiting: 0, KVUsageRatio: 0, OutputTokensPerS: 10, PromptTokensPerS: 0, PreemptionsTotal: 1, CompletedTotal: 2},
	}}
	c := promexport.NewCollector()
	c.Token(0.9, 20)
	c.Token(1.0, 30) // exactly on a tick: counted in that tick's sample
	c.Token(1.5, 120)
	c.Token(2.2, 9000)
	c.Request(sim.RequestSample{SentS: 0.1, FirstTokenS: 0.15, FinishS: 1.8, TTFTMS: 50, TPOTMS: 16.5, E2EMS: 1700,
		InputTokens: 1024, OutputTokens: 101})
	c.Request(sim.RequestSample{SentS: 0.2, FirstTokenS: 1.2, FinishS: 3.4, TTFTMS: 1000, TPOTMS: 0, E2EMS: 3200,
		InputTokens: 512, OutputTokens: 1})
	return rep, c
}

func write(t *testing.T, rep *sim.Report, c *promexport.Collector, opts promexport.Options) string {
	t.Helper()
	var buf bytes.Buffer
	if err := promexport.Write(&buf, rep, c, opts); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

func TestWriteGolden(t *testing.T) {
	rep, c := smallRun()
	got := write(t, rep, c, promexport.Options{})
	golden.Check(t, filepath.Join("testdata", "small.om"), []byte(got), *update)
	if _, err := parseOpenMetrics(got); err != nil {
		t.Fatal(err)
	}
}

func family(t *testing.T, fams []*omFamily, name string) *omFamily {
	t.Helper()
	for _, f := range fams {
		if f.name == name {
			return f
		}
	}
	t.Fatalf("no family %s", name)
	return nil
}

// at returns the value of sample name (with le, if given) at ts.
func at(t *testing.T, f *omFamily, name, le string, ts float64) float64 {
	t.Helper()
	for _, s := range f.samples {
		if s.name == name && s.ts == ts && s.labels["le"] == le {
			return s.value
		}
	}
	t.Fatalf("no sample %s le=%q at %v", name, le, ts)
	return 0
}

func TestWriteSmallRunMeansWhatVLLMMeans(t *testing.T) {
	rep, c := smallRun()
	fams, err := parseOpenMetrics(write(t, rep, c, promexport.Options{}))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range fams {
		names = append(names, f.name)
	}
	if !slices.Equal(names, promexport.Names()) {
		t.Errorf("families %v, want %v", names, promexport.Names())
	}
	t0 := 1_700_000_000.0
	for _, f := range fams {
		for _, s := range f.samples {
			if s.labels["model_name"] != rep.Model || s.labels["engine"] != "0" {
				t.Fatalf("%s: labels %v", s.name, s.labels)
			}
		}
	}
	// Gauges and counters, from the time series.
	if v := at(t, family(t, fams, "vllm:kv_cache_usage_perc"), "vllm:kv_cache_usage_perc", "", t0+2); v != 0.5 {
		t.Errorf("kv usage at 2 s = %v, want the 0-1 fraction 0.5", v)
	}
	if v := at(t, family(t, fams, "vllm:generation_tokens"), "vllm:generation_tokens_total", "", t0+3); v != 42 {
		t.Errorf("generation tokens total = %v, want 42", v)
	}
	if v := at(t, family(t, fams, "vllm:prompt_tokens"), "vllm:prompt_tokens_total", "", t0+2); v != 1536 {
		t.Errorf("prompt tokens total at 2 s = %v, want 1536", v)
	}
	succ := family(t, fams, "vllm:request_success")
	if s := succ.samples[len(succ.samples)-1]; s.labels["finished_reason"] != "length" || s.value != 2 {
		t.Errorf("request success: %+v", s)
	}
	// Token gaps: 20 and 30 ms by 1 s, 120 ms by 2 s, 9 s by 3 s.
	itl := family(t, fams, "vllm:inter_token_latency_seconds")
	for _, c := range []struct {
		ts, le string
		want   float64
	}{{"1", "0.025", 1}, {"1", "0.05", 2}, {"1", "+Inf", 2}, {"2", "0.1", 2}, {"2", "0.15", 3}, {"3", "7.5", 3}, {"3", "10.0", 4}} {
		ts := map[string]float64{"1": t0 + 1, "2": t0 + 2, "3": t0 + 3}[c.ts]
		if v := at(t, itl, "vllm:inter_token_latency_seconds_bucket", c.le, ts); v != c.want {
			t.Errorf("ITL bucket le=%s at %s s = %v, want %v", c.le, c.ts, v, c.want)
		}
	}
	if v := at(t, itl, "vllm:inter_token_latency_seconds_sum", "", t0+3); math.Abs(v-9.17) > 1e-9 {
		t.Errorf("ITL sum = %v, want 9.17", v)
	}
	// TTFT is counted at the first token (0.15 s and 1.2 s), E2E at the
	// finish (1.8 s and 3.4 s, after the last tick: in the last sample).
	ttft := family(t, fams, "vllm:time_to_first_token_seconds")
	if a, b := at(t, ttft, "vllm:time_to_first_token_seconds_count", "", t0+1), at(t, ttft, "vllm:time_to_first_token_seconds_count", "", t0+2); a != 1 || b != 2 {
		t.Errorf("TTFT counts %v, %v; want 1, 2", a, b)
	}
	if v := at(t, ttft, "vllm:time_to_first_token_seconds_bucket", "0.04", t0+3); v != 0 {
		t.Errorf("TTFT le=0.04 = %v, want 0 (50 ms is above it)", v)
	}
	if v := at(t, ttft, "vllm:time_to_first_token_seconds_bucket", "0.06", t0+3); v != 1 {
		t.Errorf("TTFT le=0.06 = %v, want 1", v)
	}
	if v := at(t, ttft, "vllm:time_to_first_token_seconds_bucket", "1.0", t0+3); v != 2 {
		t.Errorf("TTFT le=1.0 = %v, want 2 (le is inclusive)", v)
	}
	e2e := family(t, fams, "vllm:e2e_request_latency_seconds")
	if a, b := at(t, e2e, "vllm:e2e_request_latency_seconds_count", "", t0+2), at(t, e2e, "vllm:e2e_request_latency_seconds_count", "", t0+3); a != 1 || b != 2 {
		t.Errorf("E2E counts %v, %v; want 1, 2", a, b)
	}
	// Per-request TPOT leaves out the single-token request.
	if v := at(t, family(t, fams, "vllm:request_time_per_output_token_seconds"), "vllm:request_time_per_output_token_seconds_count", "", t0+3); v != 1 {
		t.Errorf("request TPOT count = %v, want 1", v)
	}
	// Token histograms stop at the first 1-2-5 bound past the longest request.
	pt := family(t, fams, "vllm:request_prompt_tokens")
	var les []string
	for _, s := range pt.samples {
		if s.ts == t0+1 && s.name == "vllm:request_prompt_tokens_bucket" {
			les = append(les, s.labels["le"])
		}
	}
	if want := []string{"1.0", "2.0", "5.0", "10.0", "20.0", "50.0", "100.0", "200.0", "500.0", "1000.0", "2000.0", "+Inf"}; !slices.Equal(les, want) {
		t.Errorf("prompt token buckets %v, want %v", les, want)
	}
}

func TestWriteOptions(t *testing.T) {
	rep, c := smallRun()
	start := time.Date(2026, 3, 1, 12, 0, 0, 250_000_000, time.UTC)
	out := write(t, rep, c, promexport.Options{Start: start, ModelName: `my "model"`, Engine: "7", MaxModelLen: 8192})
	fams, err := parseOpenMetrics(out)
	if err != nil {
		t.Fatal(err)
	}
	s := fams[0].samples[0]
	if s.labels["model_name"] != `my "model"` || s.labels["engine"] != "7" {
		t.Errorf("labels %v", s.labels)
	}
	if want := float64(start.UnixMilli())/1000 + 1; s.ts != want {
		t.Errorf("first timestamp %v, want %v", s.ts, want)
	}
	if !strings.Contains(out, `vllm:request_prompt_tokens_bucket{model_name="my \"model\"",engine="7",le="5000.0"}`) ||
		strings.Contains(out, `le="10000.0"`) {
		t.Error("token buckets should run to max_model_len 8192 and no further")
	}
	// Without a collector, no histograms.
	out = write(t, rep, nil, promexport.Options{})
	if strings.Contains(out, "histogram") {
		t.Error("histograms written without a collector")
	}
	if _, err := parseOpenMetrics(out); err != nil {
		t.Fatal(err)
	}
}

func TestWriteWithoutTimeseriesFailsClearly(t *testing.T) {
	var buf bytes.Buffer
	for _, rep := range []*sim.Report{nil, {Model: "m"}} {
		err := promexport.Write(&buf, rep, promexport.NewCollector(), promexport.Options{})
		if !errors.Is(err, promexport.ErrNoTimeseries) || !strings.Contains(err.Error(), "report.timeseries: true") {
			t.Errorf("err = %v", err)
		}
	}
	if buf.Len() != 0 {
		t.Errorf("wrote %d bytes", buf.Len())
	}
}

type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

func TestWriteReportsWriteErrors(t *testing.T) {
	rep, c := smallRun()
	if err := promexport.Write(failWriter{}, rep, c, promexport.Options{}); err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Errorf("err = %v", err)
	}
}

// simulated is a real small run exported together with internal/adapter/plot's
// collector, both fed from one run.
var simulated = sync.OnceValues(func() (*simResult, error) {
	cat, err := catalogs.Builtin()
	if err != nil {
		return nil, err
	}
	s := scenario.Default()
	s.Workload.Requests = 300
	s.Workload.Arrival.RateRPS = 30
	s.Report.Timeseries = true
	res, err := s.Resolve(scenario.Env{Catalog: cat})
	if err != nil {
		return nil, err
	}
	c := promexport.NewCollector()
	d := plot.NewDistributions()
	rep, err := sim.Run(context.Background(), res.Config, sim.WithSinks(c, d))
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if err := promexport.Write(&buf, rep, c, promexport.Options{}); err != nil {
		return nil, err
	}
	return &simResult{rep: rep, text: buf.String(), dists: d}, nil
})

type simResult struct {
	rep   *sim.Report
	text  string
	dists *plot.Distributions
}

func TestSimulatedRunInvariants(t *testing.T) {
	r, err := simulated()
	if err != nil {
		t.Fatal(err)
	}
	rep := r.rep
	fams, err := parseOpenMetrics(r.text)
	if err != nil {
		t.Fatal(err)
	}
	last := 1_700_000_000 + rep.Timeseries[len(rep.Timeseries)-1].TS
	completed := float64(rep.Requests.Completed)
	for _, c := range []struct {
		family, sample string
		want           float64
	}{
		{"vllm:e2e_request_latency_seconds", "vllm:e2e_request_latency_seconds_count", completed},
		{"vllm:time_to_first_token_seconds", "vllm:time_to_first_token_seconds_count", completed},
		{"vllm:request_decode_time_seconds", "vllm:request_decode_time_seconds_count", completed},
		{"vllm:request_generation_tokens", "vllm:request_generation_tokens_count", completed},
		{"vllm:request_success", "vllm:request_success_total", completed},
		{"vllm:inter_token_latency_seconds", "vllm:inter_token_latency_seconds_count", float64(rep.ITLMS.Count)},
		{"vllm:time_per_output_token_seconds", "vllm:time_per_output_token_seconds_count", float64(rep.ITLMS.Count)},
		{"vllm:request_time_per_output_token_seconds", "vllm:request_time_per_output_token_seconds_count", float64(rep.TPOTMS.Count)},
		{"vllm:num_preemptions", "vllm:num_preemptions_total", float64(rep.Preemptions)},
	} {
		if v := at(t, family(t, fams, c.family), c.sample, "", last); v != c.want {
			t.Errorf("%s at the end = %v, want %v", c.sample, v, c.want)
		}
	}
	// Every output token is counted once: the total equals the tokens the
	// requests generated (sum of the per-request histogram).
	gen := at(t, family(t, fams, "vllm:generation_tokens"), "vllm:generation_tokens_total", "", last)
	perReq := at(t, family(t, fams, "vllm:request_generation_tokens"), "vllm:request_generation_tokens_sum", "", last)
	if gen != perReq {
		t.Errorf("generation_tokens_total %v != sum of request_generation_tokens %v", gen, perReq)
	}
	// Mean TTFT from the histogram's sum and count matches the report's.
	ttft := family(t, fams, "vllm:time_to_first_token_seconds")
	mean := at(t, ttft, "vllm:time_to_first_token_seconds_sum", "", last) / completed * 1000
	if math.Abs(mean-rep.TTFTMS.Mean) > 0.001+1e-6*rep.TTFTMS.Mean {
		t.Errorf("mean TTFT %v ms, report %v", mean, rep.TTFTMS.Mean)
	}
	for _, s := range family(t, fams, "vllm:kv_cache_usage_perc").samples {
		if s.value < 0 || s.value > 1 {
			t.Fatalf("kv_cache_usage_perc %v outside 0-1", s.value)
		}
	}
	// One sample per simulated second.
	if n := len(family(t, fams, "vllm:num_requests_running").samples); n != len(rep.Timeseries) {
		t.Errorf("%d running samples for %d seconds", n, len(rep.Timeseries))
	}
	if r.dists.Requests() != rep.Requests.Completed {
		t.Errorf("the plot collector fed from the same run saw %d requests", r.dists.Requests())
	}
}

func TestSimulatedRunIsDeterministic(t *testing.T) {
	r, err := simulated()
	if err != nil {
		t.Fatal(err)
	}
	cat, err := catalogs.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	s := scenario.Default()
	s.Workload.Requests = 300
	s.Workload.Arrival.RateRPS = 30
	s.Report.Timeseries = true
	res, err := s.Resolve(scenario.Env{Catalog: cat})
	if err != nil {
		t.Fatal(err)
	}
	c := promexport.NewCollector()
	rep, err := sim.Run(t.Context(), res.Config, c.Options()...)
	if err != nil {
		t.Fatal(err)
	}
	if again := write(t, rep, c, promexport.Options{}); again != r.text {
		t.Error("the same run exported different bytes")
	}
	// Writing does not consume the collector.
	if again := write(t, rep, c, promexport.Options{}); again != r.text {
		t.Error("a second write of the same collector differs")
	}
}

// TestPromtoolBackfill loads the export with Prometheus' own tool, as
// docs/prometheus.md tells users to, where promtool is installed.
func TestPromtoolBackfill(t *testing.T) {
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		t.Skip("promtool not installed")
	}
	r, err := simulated()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	in := filepath.Join(dir, "run.om")
	if err := os.WriteFile(in, []byte(r.text), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.CommandContext(t.Context(), promtool, "tsdb", "create-blocks-from", "openmetrics", in, filepath.Join(dir, "data")).CombinedOutput()
	if err != nil {
		t.Fatalf("promtool: %v\n%s", err, out)
	}
	blocks, _ := filepath.Glob(filepath.Join(dir, "data", "*", "meta.json"))
	if len(blocks) == 0 {
		t.Fatalf("promtool made no block:\n%s", out)
	}
}

// TestDashboardUsesExportedMetrics checks every vllm: series the shipped
// Grafana dashboard queries is one Write exports.
func TestDashboardUsesExportedMetrics(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "..", "docs", "grafana", "vllm-simulated.json"))
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Title  string `json:"title"`
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
		Templating struct {
			List []struct {
				Name string `json:"name"`
				Type string `json:"type"`
			} `json:"list"`
		} `json:"templating"`
	}
	if err := json.Unmarshal(b, &dash); err != nil {
		t.Fatal(err)
	}
	r, err := simulated()
	if err != nil {
		t.Fatal(err)
	}
	fams, err := parseOpenMetrics(r.text)
	if err != nil {
		t.Fatal(err)
	}
	exported := map[string]bool{}
	for _, f := range fams {
		for _, s := range f.samples {
			exported[s.name] = true
		}
	}
	hasDS := false
	for _, v := range dash.Templating.List {
		hasDS = hasDS || v.Type == "datasource"
	}
	if !hasDS {
		t.Error("the dashboard has no datasource variable")
	}
	name := regexp.MustCompile(`vllm:[a-zA-Z0-9_:]+`)
	queried := map[string]bool{}
	exprs := 0
	for _, p := range dash.Panels {
		for _, tg := range p.Targets {
			exprs++
			for _, m := range name.FindAllString(tg.Expr, -1) {
				queried[m] = true
				if !exported[m] {
					t.Errorf("panel %q queries %s, which the export lacks", p.Title, m)
				}
			}
		}
	}
	if exprs == 0 {
		t.Fatal("the dashboard has no queries")
	}
	for _, want := range []string{"vllm:num_requests_running", "vllm:num_requests_waiting", "vllm:kv_cache_usage_perc",
		"vllm:time_to_first_token_seconds_bucket", "vllm:inter_token_latency_seconds_bucket",
		"vllm:e2e_request_latency_seconds_bucket", "vllm:num_preemptions_total", "vllm:generation_tokens_total"} {
		if !queried[want] {
			t.Errorf("the dashboard does not show %s", want)
		}
	}
}

// TestDashboardQueriesOnPrometheus backfills a run into a real Prometheus
// (where promtool and prometheus are installed), serves it on loopback and
// checks every query of the shipped dashboard returns data.
func TestDashboardQueriesOnPrometheus(t *testing.T) {
	promtool, err1 := exec.LookPath("promtool")
	prometheus, err2 := exec.LookPath("prometheus")
	if err1 != nil || err2 != nil {
		t.Skip("promtool or prometheus not installed")
	}
	if testing.Short() {
		t.Skip("starts a Prometheus server")
	}
	r, err := simulated()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	in, data := filepath.Join(dir, "run.om"), filepath.Join(dir, "data")
	if err := os.WriteFile(in, []byte(r.text), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.CommandContext(t.Context(), promtool, "tsdb", "create-blocks-from", "openmetrics", in, data).CombinedOutput(); err != nil {
		t.Fatalf("promtool: %v\n%s", err, out)
	}
	cfg := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(cfg, []byte("scrape_configs: []\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	var logs bytes.Buffer
	cmd := exec.CommandContext(ctx, prometheus, "--config.file="+cfg, "--storage.tsdb.path="+data,
		"--storage.tsdb.retention.time=100y", "--web.listen-address="+addr)
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		cancel()
		_ = cmd.Wait()
	}()
	base := "http://" + addr
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		resp, err := http.Get(base + "/-/ready")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("prometheus not ready:\n%s", logs.String())
		}
	}
	b, err := os.ReadFile(filepath.Join("..", "..", "..", "docs", "grafana", "vllm-simulated.json"))
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(b, &dash); err != nil {
		t.Fatal(err)
	}
	end := promexport.DefaultStart.Unix() + int64(r.rep.Timeseries[len(r.rep.Timeseries)-1].TS)
	for _, p := range dash.Panels {
		for _, tg := range p.Targets {
			expr := strings.NewReplacer("$__rate_interval", "4s", "$model_name", ".*").Replace(tg.Expr)
			q := url.Values{"query": {expr}, "start": {strconv.FormatInt(promexport.DefaultStart.Unix(), 10)},
				"end": {strconv.FormatInt(end, 10)}, "step": {"2"}}
			resp, err := http.Get(base + "/api/v1/query_range?" + q.Encode())
			if err != nil {
				t.Fatal(err)
			}
			var res struct {
				Status string `json:"status"`
				Error  string `json:"error"`
				Data   struct {
					Result []struct {
						Values [][2]any `json:"values"`
					} `json:"result"`
				} `json:"data"`
			}
			err = json.NewDecoder(resp.Body).Decode(&res)
			resp.Body.Close()
			if err != nil {
				t.Fatal(err)
			}
			if res.Status != "success" || len(res.Data.Result) == 0 || len(res.Data.Result[0].Values) == 0 {
				t.Errorf("panel %q: %s returned no data (%s %s)", p.Title, expr, res.Status, res.Error)
			}
		}
	}
}
