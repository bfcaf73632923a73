package api

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/headroom-sim/headroom/sim"
)

// TestCoarsen checks a coarsened series by hand: 10 one-second points into
// at most 4 gives windows of 3 (the last of 1); each point is the window's
// last, with the token rates averaged over the window.
func TestCoarsen(t *testing.T) {
	rep := &sim.Report{}
	for i := range 10 {
		rep.Timeseries = append(rep.Timeseries, sim.TimePoint{TS: float64(i + 1), Running: i, Waiting: 10 - i, KVUsageRatio: float64(i) / 10,
			OutputTokensPerS: float64(100 * i), PromptTokensPerS: float64(i % 2), PreemptionsTotal: int64(i / 3), CompletedTotal: 2 * i})
	}
	if k := coarsen(rep, 4); k != 3 {
		t.Fatalf("k = %d, want 3", k)
	}
	want := []sim.TimePoint{
		{TS: 3, Running: 2, Waiting: 8, KVUsageRatio: 0.2, OutputTokensPerS: 100, PromptTokensPerS: 0.333, PreemptionsTotal: 0, CompletedTotal: 4},
		{TS: 6, Running: 5, Waiting: 5, KVUsageRatio: 0.5, OutputTokensPerS: 400, PromptTokensPerS: 0.667, PreemptionsTotal: 1, CompletedTotal: 10},
		{TS: 9, Running: 8, Waiting: 2, KVUsageRatio: 0.8, OutputTokensPerS: 700, PromptTokensPerS: 0.333, PreemptionsTotal: 2, CompletedTotal: 16},
		{TS: 10, Running: 9, Waiting: 1, KVUsageRatio: 0.9, OutputTokensPerS: 900, PromptTokensPerS: 1, PreemptionsTotal: 3, CompletedTotal: 18},
	}
	if len(rep.Timeseries) != len(want) {
		t.Fatalf("%d points, want %d", len(rep.Timeseries), len(want))
	}
	for i, p := range rep.Timeseries {
		if p != want[i] {
			t.Errorf("point %d: %+v, want %+v", i, p, want[i])
		}
	}
	short := &sim.Report{Timeseries: make([]sim.TimePoint, 4)}
	if k := coarsen(short, 4); k != 1 || len(short.Timeseries) != 4 {
		t.Errorf("a series within the bound changed: k %d, %d points", k, len(short.Timeseries))
	}
}

// bytesRunner answers a result of about n bytes.
func bytesRunner(n int) Runner {
	return func(context.Context, json.RawMessage, func(float64)) (any, error) {
		return map[string]string{"pad": strings.Repeat("x", n)}, nil
	}
}

// TestResultLimits: a result over jobs.max_result_bytes fails its job; the
// results kept together stay within jobs.max_results_bytes, the oldest
// dropped to make room; DELETE frees a result.
func TestResultLimits(t *testing.T) {
	m := NewJobManager(JobOptions{Workers: 1, QueueSize: 8, ResultTTL: time.Hour, MaxFinished: 100, Timeout: time.Minute,
		MaxResultBytes: 2000, MaxResultsBytes: 3000})
	m.Register("big", bytesRunner(2500), nil)
	m.Register("mid", bytesRunner(1200), nil)
	m.Start()
	defer m.Shutdown(context.Background())

	v, _ := m.Submit("big", nil)
	v = waitFinal(t, m, v.ID)
	if v.State != JobFailed || v.Error == nil || v.Error.Status != http.StatusUnprocessableEntity || !strings.Contains(v.Error.Detail, "jobs.max_result_bytes") {
		t.Fatalf("oversized result: %s %+v", v.State, v.Error)
	}
	var ids []string
	for range 3 {
		v, err := m.Submit("mid", nil)
		if err != nil {
			t.Fatal(err)
		}
		waitFinal(t, m, v.ID)
		ids = append(ids, v.ID)
		if n := m.ResultBytes(); n > 3000 {
			t.Fatalf("%d result bytes kept, the limit is 3000", n)
		}
	}
	if _, err := m.Get(ids[0]); !errors.Is(err, ErrNotFound) {
		t.Errorf("the oldest result was not dropped for the newest: %v", err)
	}
	for _, id := range ids[1:] {
		if v, err := m.Get(id); err != nil || v.ResultBytes != int64(len(v.Result)) || len(v.Result) < 1200 {
			t.Errorf("job %s: %+v %v", id, v.ResultBytes, err)
		}
	}
	before := m.ResultBytes()
	v, deleted, err := m.Cancel(ids[2])
	if err != nil || !deleted || m.ResultBytes() != before-v.ResultBytes {
		t.Fatalf("DELETE: deleted %v, %v; %d → %d bytes", deleted, err, before, m.ResultBytes())
	}
}

// TestLongTimeseriesJobIsBounded is the 200k-request probe made small: a
// run whose time series spans the simulator's whole 1e6 s used to keep a
// result of hundreds of MB; it is now coarsened to limits.timeseries_points,
// says so, and the result served is exactly the bytes kept.
func TestLongTimeseriesJobIsBounded(t *testing.T) {
	s := newTestServer(t, func(c *Config) { c.Limits.TimeseriesPoints = 1000 })
	s.jobs.Start()
	defer s.jobs.Shutdown(context.Background())
	h := s.Handler()
	const sc = `{"model":"llama-3.1-8b","gpu":"h100-sxm","workload":{"requests":400,"arrival":{"type":"constant","rate_rps":0.0005}},"report":{"timeseries":true}}`
	v := waitFinal(t, s.jobs, submit(t, h, "simulate", sc).ID)
	if v.State != JobSucceeded {
		t.Fatalf("job %s: %+v", v.State, v.Error)
	}
	if len(v.Notes) != 1 || !strings.Contains(v.Notes[0], "limits.timeseries_points") {
		t.Errorf("notes %q", v.Notes)
	}
	// 1000 points of about 200 bytes, and the rest of the report.
	if v.ResultBytes > 400<<10 || s.jobs.ResultBytes() != v.ResultBytes {
		t.Errorf("result %d bytes (kept in all %d), want under 400 KiB", v.ResultBytes, s.jobs.ResultBytes())
	}
	r := do(t, h, "GET", "/v1/jobs/"+v.ID, "")
	var got struct {
		ResultBytes int64           `json:"result_bytes"`
		Result      json.RawMessage `json:"result"`
		Notes       []string        `json:"notes"`
	}
	r.json(t, &got)
	if string(got.Result) != string(v.Result) || got.ResultBytes != v.ResultBytes || len(got.Notes) != 1 {
		t.Fatalf("served result differs from the kept bytes (%d vs %d bytes)", len(got.Result), len(v.Result))
	}
	if cl, _ := strconv.Atoi(r.header.Get("Content-Length")); cl != len(r.body) {
		t.Errorf("Content-Length %d, body %d bytes", cl, len(r.body))
	}
	var rep sim.Report
	if err := json.Unmarshal(got.Result, &rep); err != nil {
		t.Fatal(err)
	}
	n := len(rep.Timeseries)
	if n > 1000 || n < 900 || rep.Timeseries[n-1].CompletedTotal != rep.Requests.Completed {
		t.Errorf("%d points, last %+v; want at most 1000 ending with every request completed", n, rep.Timeseries[n-1])
	}
	if r := getAccept(t, h, "/v1/jobs/"+v.ID, "image/svg+xml"); r.status != http.StatusOK || !strings.HasPrefix(string(r.body), "<?xml") && !strings.HasPrefix(string(r.body), "<svg") {
		t.Errorf("chart of the coarsened report: HTTP %d %.80s", r.status, r.body)
	}

	// The same scenario synchronously: coarsened, with the step in a header.
	r = do(t, h, "POST", "/v1/simulate", sc)
	if r.status != http.StatusOK {
		t.Fatalf("sync: HTTP %d: %s", r.status, r.body)
	}
	var srep sim.Report
	r.json(t, &srep)
	if step, _ := strconv.Atoi(r.header.Get(TimeseriesStepHeader)); step < 2 || len(srep.Timeseries) > 1000 {
		t.Errorf("sync: step %q, %d points", r.header.Get(TimeseriesStepHeader), len(srep.Timeseries))
	}
}
