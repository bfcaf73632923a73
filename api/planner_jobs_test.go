package api

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// small is a scenario of a few hundred requests that runs in milliseconds.
const small = `{"model":"llama-3.1-8b","gpu":"h100-sxm","workload":{"requests":200,"arrival":{"type":"poisson","rate_rps":10}}}`

// smallSLA is small with an SLA.
// profileSLA is a rate profile of three minutes: 2, 12 and 2 req/s.
const profileSLA = `{"model":"llama-3.1-8b","gpu":"h100-sxm","workload":{"rate_profile":[{"at_s":0,"rate_rps":2},{"at_s":60,"rate_rps":12},{"at_s":120,"rate_rps":2}],"rate_profile_end_s":180},"sla":{"ttft_ms":{"p99":2000}}}`

const smallSLA = `{"model":"llama-3.1-8b","gpu":"h100-sxm","workload":{"requests":200,"arrival":{"type":"poisson","rate_rps":10}},"sla":{"ttft_ms":{"p99":2000}}}`

// progressLog records the progress a kind's runner reports.
type progressLog struct {
	mu sync.Mutex
	v  []float64
}

func (l *progressLog) values() []float64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.v)
}

// recordProgress re-registers kind so that its progress is also logged.
func recordProgress(s *Server, kind string, run Runner, check Check) *progressLog {
	l := &progressLog{}
	s.jobs.Register(kind, func(ctx context.Context, p json.RawMessage, progress func(float64)) (any, error) {
		return run(ctx, p, func(f float64) {
			l.mu.Lock()
			l.v = append(l.v, f)
			l.mu.Unlock()
			progress(f)
		})
	}, check)
	return l
}

// submit posts a job and wants 202.
func submit(t *testing.T, h http.Handler, kind, params string) JobView {
	t.Helper()
	r := do(t, h, "POST", "/v1/jobs", `{"kind":"`+kind+`","params":`+params+`}`)
	if r.status != http.StatusAccepted {
		t.Fatalf("submit %s: HTTP %d: %s", kind, r.status, r.body)
	}
	var v JobView
	r.json(t, &v)
	return v
}

// waitFinal polls a job until it is final.
func waitFinal(t *testing.T, m *JobManager, id string) JobView {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		v, err := m.Get(id)
		if err != nil {
			t.Fatal(err)
		}
		if v.State.final() {
			return v
		}
		if time.Now().After(deadline) {
			t.Fatalf("job %s still %s", id, v.State)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// getAccept sends GET path with an Accept header.
func getAccept(t testing.TB, h http.Handler, path, accept string) response {
	t.Helper()
	req := httptest.NewRequest("GET", path, nil)
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return response{status: rec.Code, header: rec.Header(), body: rec.Body.Bytes()}
}

// TestPlannerJobs runs each planner kind end to end: submission, progress,
// the result's shape, and its chart.
func TestPlannerJobs(t *testing.T) {
	s := newTestServer(t, nil)
	s.jobs.Start()
	defer s.jobs.Shutdown(context.Background())
	h := s.Handler()
	tests := []struct {
		kind, params string
		run          Runner
		check        Check
		chart        bool
		result       func(t *testing.T, body []byte)
	}{
		{"sweep", `{"scenario":` + small + `,"axes":[{"path":"engine.max_num_seqs","values":[16,64]},{"path":"tp","values":[1,3]}]}`,
			s.runSweepJob, s.checkSweepJob, true, func(t *testing.T, b []byte) {
				var r struct {
					Result struct {
						Axes    []string `json:"axes"`
						Columns []string `json:"columns"`
						Points  []struct {
							Values  []any     `json:"values"`
							Metrics []float64 `json:"metrics"`
							Error   string    `json:"error"`
						} `json:"points"`
					} `json:"result"`
				}
				mustJSON(t, b, &r)
				res := r.Result
				if !slices.Equal(res.Axes, []string{"engine.max_num_seqs", "tp"}) || len(res.Points) != 4 || !slices.Contains(res.Columns, "ttft_ms.p99") {
					t.Fatalf("sweep result: %s", b)
				}
				for _, p := range res.Points {
					if bad := p.Values[1] == 3.0; bad != (p.Error != "") || bad == (len(p.Metrics) == len(res.Columns)) {
						t.Errorf("point %v: error %q, %d metrics (tp 3 does not divide the heads: only it fails)", p.Values, p.Error, len(p.Metrics))
					}
				}
			}},
		{"plan", `{"scenario":` + smallSLA + `,"gpus":["H100","l40s"],"tps":[1],"max_replicas":4,"headroom":1.2,"price_per_gpu_hour_usd":{"h100":3}}`,
			s.runPlanJob, s.checkPlanJob, true, func(t *testing.T, b []byte) {
				var r struct {
					Result struct {
						Dimension      string  `json:"dimension"`
						TargetLoad     float64 `json:"target_load"`
						Simulations    int     `json:"simulations"`
						Recommendation *struct {
							Headroom float64 `json:"headroom"`
							Sentence string  `json:"sentence"`
						} `json:"recommendation"`
						RequiredHeadroom float64 `json:"required_headroom"`
						Candidates       []struct {
							GPU                string  `json:"gpu"`
							Replicas           int     `json:"replicas"`
							MeetsSLA           bool    `json:"meets_sla"`
							PricePerGPUHourUSD float64 `json:"price_per_gpu_hour_usd"`
							Headroom           float64 `json:"headroom"`
						} `json:"candidates"`
					} `json:"result"`
				}
				mustJSON(t, b, &r)
				res := r.Result
				if res.Dimension != "rate_rps" || res.TargetLoad != 10 || res.Simulations < 2 || len(res.Candidates) == 0 {
					t.Fatalf("plan result: %s", b)
				}
				for _, c := range res.Candidates {
					if !c.MeetsSLA || c.Replicas < 1 || !(c.Headroom > 0) || (c.GPU == "h100-sxm") != (c.PricePerGPUHourUSD == 3) {
						t.Errorf("candidate %+v (the price override names h100-sxm by its alias)", c)
					}
				}
				if res.Recommendation == nil || res.Recommendation.Headroom < 1.2 || !strings.Contains(res.Recommendation.Sentence, "within the SLA") || res.RequiredHeadroom != 1.2 {
					t.Errorf("recommendation %+v (required %g)", res.Recommendation, res.RequiredHeadroom)
				}
			}},
		{"plan", `{"scenario":` + profileSLA + `,"gpus":["h100"],"tps":[1],"window_s":60,"target_utilization":0.6}`,
			s.runPlanJob, s.checkPlanJob, true, func(t *testing.T, b []byte) {
				var r struct {
					Result struct {
						Recommendation *struct{ Replicas int } `json:"recommendation"`
						Day            *struct {
							Windows []struct {
								RateRPS float64 `json:"rate_rps"`
							} `json:"windows"`
							Autoscaler struct {
								TargetUtilization float64 `json:"target_utilization"`
							} `json:"autoscaler"`
							Autoscaled, Static struct {
								GPUHoursPerDay float64 `json:"gpu_hours_per_day"`
							}
						} `json:"day"`
					} `json:"result"`
				}
				mustJSON(t, b, &r)
				d := r.Result.Day
				if r.Result.Recommendation == nil || d == nil || len(d.Windows) != 3 || d.Windows[1].RateRPS != 12 || d.Autoscaler.TargetUtilization != 0.6 || !(d.Static.GPUHoursPerDay > 0) {
					t.Fatalf("plan of a rate profile: %s", b)
				}
			}},
		{"curve", `{"scenario":` + small + `,"rates_rps":[2,8],"step_duration_s":20}`,
			s.runCurveJob, s.checkCurveJob, true, func(t *testing.T, b []byte) {
				var r struct {
					Result struct {
						Dimension string `json:"dimension"`
						Points    []struct {
							Load          float64 `json:"load"`
							ThroughputRPS float64 `json:"throughput_rps"`
						} `json:"points"`
						Knee int `json:"knee"`
					} `json:"result"`
				}
				mustJSON(t, b, &r)
				res := r.Result
				if res.Dimension != "rate_rps" || len(res.Points) != 2 || res.Points[1].Load != 8 || !(res.Points[0].ThroughputRPS > 0) || res.Knee < 0 {
					t.Fatalf("curve result: %s", b)
				}
			}},
		{"maxload", `{"scenario":` + smallSLA + `,"max_probes":6,"min_duration_s":10,"tolerance":0.1}`,
			s.runMaxLoadJob, s.checkMaxLoadJob, true, func(t *testing.T, b []byte) {
				var r struct {
					Result struct {
						Dimension string  `json:"dimension"`
						MaxLoad   float64 `json:"max_load"`
						Band      *struct {
							P80 [2]float64 `json:"p80"`
						} `json:"max_load_interval"`
						Probes []struct {
							Load float64 `json:"load"`
							Met  bool    `json:"met"`
						} `json:"probes"`
					} `json:"result"`
				}
				mustJSON(t, b, &r)
				res := r.Result
				// 6 probes for the search, at most 4 for each of the band's
				// four ends.
				if res.Dimension != "rate_rps" || !(res.MaxLoad >= 10) || len(res.Probes) < 2 || len(res.Probes) > 6+4*4 || res.Band == nil || !(res.Band.P80[0] <= res.Band.P80[1]) {
					t.Fatalf("maxload result: %s", b)
				}
			}},
		{"compare", `{"a":` + small + `,"b":{"model":"llama-3.1-8b","gpu":"h100-sxm","engine":{"max_num_seqs":8}},"name_b":"small batch"}`,
			s.runCompareJob, s.checkCompareJob, false, func(t *testing.T, b []byte) {
				var r struct {
					Result struct {
						NameA       string `json:"name_a"`
						NameB       string `json:"name_b"`
						Differences []struct {
							Path string `json:"path"`
						} `json:"differences"`
						Metrics []struct {
							Name string `json:"name"`
						} `json:"metrics"`
						ReportA struct {
							Requests struct{ Total int } `json:"requests"`
						} `json:"report_a"`
						ReportB struct {
							Requests struct{ Total int } `json:"requests"`
						} `json:"report_b"`
					} `json:"result"`
				}
				mustJSON(t, b, &r)
				res := r.Result
				if res.NameA != "A" || res.NameB != "small batch" || len(res.Differences) != 1 || res.Differences[0].Path != "engine.max_num_seqs" ||
					len(res.Metrics) == 0 || res.ReportA.Requests.Total != 200 || res.ReportB.Requests.Total != 200 {
					t.Fatalf("compare result (B runs A's 200 requests): %s", b)
				}
			}},
	}
	for _, tt := range tests {
		t.Run(tt.kind, func(t *testing.T) {
			log := recordProgress(s, tt.kind, tt.run, tt.check)
			v := submit(t, h, tt.kind, tt.params)
			if v.Kind != tt.kind || v.State != JobQueued {
				t.Errorf("submitted %+v", v)
			}
			got := waitFinal(t, s.jobs, v.ID)
			if got.State != JobSucceeded || got.Progress != 1 {
				t.Fatalf("job %s: %+v (error %+v)", tt.kind, got, got.Error)
			}
			p := log.values()
			if len(p) == 0 {
				t.Errorf("no progress reported")
			}
			for i, f := range p {
				if f < 0 || f > 1 || (i > 0 && f < p[i-1]) {
					t.Errorf("progress %v is not increasing within [0, 1]", p)
					break
				}
			}
			r := do(t, h, "GET", "/v1/jobs/"+v.ID, "")
			if r.status != http.StatusOK || !strings.Contains(r.header.Get("Content-Type"), "json") || r.header.Get("Vary") != "Accept" {
				t.Fatalf("GET: HTTP %d %q: %s", r.status, r.header.Get("Content-Type"), r.body)
			}
			tt.result(t, r.body)

			r = getAccept(t, h, "/v1/jobs/"+v.ID, "image/svg+xml")
			if !tt.chart {
				if r.status != http.StatusNotAcceptable {
					t.Fatalf("SVG of a %s job: HTTP %d, want 406: %s", tt.kind, r.status, r.body)
				}
				r.problem(t)
				return
			}
			if r.status != http.StatusOK || r.header.Get("Content-Type") != "image/svg+xml" {
				t.Fatalf("SVG: HTTP %d %q: %.300s", r.status, r.header.Get("Content-Type"), r.body)
			}
			if tt.kind == "plan" {
				day := getAccept(t, h, "/v1/jobs/"+v.ID+"?chart=day", "image/svg+xml")
				want := http.StatusNotAcceptable // a plan without a rate profile has no day
				if strings.Contains(tt.params, "rate_profile") {
					want = http.StatusOK
				}
				if day.status != want || want == http.StatusOK && !bytes.Contains(day.body, []byte("through the rate profile")) {
					t.Errorf("?chart=day: HTTP %d, want %d: %.300s", day.status, want, day.body)
				}
				if bad := getAccept(t, h, "/v1/jobs/"+v.ID+"?chart=gantt", "image/svg+xml"); bad.status != http.StatusBadRequest {
					t.Errorf("?chart=gantt: HTTP %d, want 400", bad.status)
				}
			}
			if b := bytes.TrimSpace(r.body); !bytes.HasPrefix(b, []byte("<?xml")) && !bytes.HasPrefix(b, []byte("<svg")) || !bytes.Contains(b, []byte("</svg>")) {
				t.Errorf("not an SVG document: %.200s", r.body)
			}
			// JSON stays the default, and wins when listed first.
			if r := getAccept(t, h, "/v1/jobs/"+v.ID, "application/json, image/svg+xml"); !strings.Contains(r.header.Get("Content-Type"), "json") {
				t.Errorf("Accept json first: Content-Type %q", r.header.Get("Content-Type"))
			}
			if r := getAccept(t, h, "/v1/jobs/"+v.ID, "text/html,*/*;q=0.8"); !strings.Contains(r.header.Get("Content-Type"), "json") {
				t.Errorf("a browser's Accept: Content-Type %q", r.header.Get("Content-Type"))
			}
		})
	}
}

func mustJSON(t *testing.T, b []byte, v any) {
	t.Helper()
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%v: %s", err, b)
	}
}

// TestJobChartStates: a chart needs a succeeded job (409 before, and for a
// failed one), an existing job (404), and a result that has a chart (406).
func TestJobChartStates(t *testing.T) {
	s := newTestServer(t, nil) // workers not started: jobs stay queued
	h := s.Handler()
	v := submit(t, h, "curve", `{"scenario":`+small+`,"rates_rps":[1]}`)
	r := getAccept(t, h, "/v1/jobs/"+v.ID, "image/svg+xml")
	if r.status != http.StatusConflict {
		t.Fatalf("queued job: HTTP %d, want 409: %s", r.status, r.body)
	}
	if p := r.problem(t); !strings.Contains(p.Detail, "queued") {
		t.Errorf("detail %q", p.Detail)
	}
	if r := getAccept(t, h, "/v1/jobs/nope", "image/svg+xml"); r.status != http.StatusNotFound {
		t.Errorf("unknown job: HTTP %d", r.status)
	}

	s2 := newTestServer(t, nil)
	s2.jobs.Register("fail", func(context.Context, json.RawMessage, func(float64)) (any, error) { return nil, ErrOverLimit }, nil)
	s2.jobs.Start()
	defer s2.jobs.Shutdown(context.Background())
	h2 := s2.Handler()
	failed := submit(t, h2, "fail", `{}`)
	waitFinal(t, s2.jobs, failed.ID)
	if r := getAccept(t, h2, "/v1/jobs/"+failed.ID, "image/svg+xml"); r.status != http.StatusConflict {
		t.Errorf("failed job: HTTP %d, want 409", r.status)
	}
	sim := submit(t, h2, "simulate", small)
	waitFinal(t, s2.jobs, sim.ID)
	if r := getAccept(t, h2, "/v1/jobs/"+sim.ID, "image/svg+xml"); r.status != http.StatusNotAcceptable {
		t.Errorf("simulate without a time series: HTTP %d, want 406: %s", r.status, r.body)
	} else if p := r.problem(t); p.Type != "urn:headroom:problem:not-acceptable" {
		t.Errorf("problem %+v", p)
	}
	ts := submit(t, h2, "simulate", `{"model":"llama-3.1-8b","gpu":"h100-sxm","workload":{"requests":100},"report":{"timeseries":true}}`)
	waitFinal(t, s2.jobs, ts.ID)
	if r := getAccept(t, h2, "/v1/jobs/"+ts.ID, "image/svg+xml"); r.status != http.StatusOK || r.header.Get("Content-Type") != "image/svg+xml" {
		t.Errorf("simulate with a time series draws its timeline: HTTP %d", r.status)
	}
}

// TestPlannerJobErrors: bad params are 4xx of POST /v1/jobs, naming the
// field by its path in the request body.
func TestPlannerJobErrors(t *testing.T) {
	h := newTestServer(t, nil).Handler()
	sla := `"sla":{"ttft_ms":{"p99":1000}}`
	tests := []struct {
		name, kind, params string
		status             int
		problem, field     string
	}{
		{"sweep unknown axis", "sweep", `{"scenario":` + small + `,"axes":[{"path":"engine.max_num_seq","values":[1]}]}`, 400, "invalid-request", "params.axes[0].path"},
		{"sweep bad value", "sweep", `{"scenario":` + small + `,"axes":[{"path":"engine.max_num_seqs","values":[1,"many"]}]}`, 400, "invalid-request", "params.axes[0].values[1]"},
		{"sweep invalid value", "sweep", `{"scenario":` + small + `,"axes":[{"path":"router","values":["random"]}]}`, 400, "invalid-request", "params.axes[0].values[0]"},
		{"sweep no axes", "sweep", `{"scenario":` + small + `,"axes":[]}`, 400, "invalid-request", "params.axes"},
		{"sweep no values", "sweep", `{"scenario":` + small + `,"axes":[{"path":"tp","values":[]}]}`, 400, "invalid-request", "params.axes[0].values"},
		{"sweep list lengths", "sweep", `{"scenario":` + small + `,"list":true,"axes":[{"path":"tp","values":[1,2]},{"path":"replicas","values":[1]}]}`, 400, "invalid-request", "params.axes[1].values"},
		{"sweep too many points", "sweep", `{"scenario":` + small + `,"axes":[{"path":"tp","values":[` + strings.Repeat("1,", 200) + `1]},{"path":"replicas","values":[` + strings.Repeat("1,", 100) + `1]}]}`, 400, "invalid-request", "params.axes"},
		{"sweep unknown params key", "sweep", `{"scenario":` + small + `,"axis":[]}`, 400, "invalid-request", "params.axis"},
		{"sweep scenario unknown key", "sweep", `{"scenario":{"model":"llama-3.1-8b","gpu":"h100-sxm","engine":{"max_num_seq":8}},"axes":[{"path":"tp","values":[1]}]}`, 400, "invalid-request", "params.scenario.engine.max_num_seq"},
		{"sweep scenario not an object", "sweep", `{"scenario":"x","axes":[{"path":"tp","values":[1]}]}`, 400, "invalid-request", "params.scenario"},
		{"sweep missing scenario", "sweep", `{"axes":[{"path":"tp","values":[1]}]}`, 400, "invalid-request", "params.scenario"},
		{"sweep unknown model", "sweep", `{"scenario":{"model":"nope","gpu":"h100-sxm"},"axes":[{"path":"tp","values":[1]}]}`, 404, "not-found", ""},
		{"sweep file reference", "sweep", `{"scenario":{"model":"llama-3.1-8b","gpu":"h100-sxm","workload":{"trace":{"file":"/etc/passwd","format":"csv"}}},"axes":[{"path":"tp","values":[1]}]}`, 400, "invalid-request", "params.scenario.workload.trace.file"},
		{"sweep unknown gpu value", "sweep", `{"scenario":` + small + `,"axes":[{"path":"gpu","values":["h100","h1000"]}]}`, 404, "not-found", ""},
		{"sweep unknown calibration", "sweep", `{"scenario":{"model":"llama-3.1-8b","gpu":"h100-sxm","calibration":"nope"},"axes":[{"path":"tp","values":[1]}]}`, 404, "not-found", ""},
		{"sweep over the request limit", "sweep", `{"scenario":{"model":"llama-3.1-8b","gpu":"h100-sxm","workload":{"requests":2000000}},"axes":[{"path":"tp","values":[1]}]}`, 422, "over-limit", ""},
		{"plan no sla", "plan", `{"scenario":` + small + `}`, 400, "invalid-request", "params.scenario.sla"},
		{"plan unknown gpu", "plan", `{"scenario":` + smallSLA + `,"gpus":["h1000"]}`, 404, "not-found", ""},
		{"plan unknown price gpu", "plan", `{"scenario":` + smallSLA + `,"price_per_gpu_hour_usd":{"h1000":2}}`, 404, "not-found", ""},
		{"plan negative price", "plan", `{"scenario":` + smallSLA + `,"price_per_gpu_hour_usd":{"h100":-2}}`, 400, "invalid-request", "params.price_per_gpu_hour_usd[h100]"},
		{"plan tp range", "plan", `{"scenario":` + smallSLA + `,"tps":[0]}`, 400, "invalid-request", "params.tps[0]"},
		{"plan pareto metric", "plan", `{"scenario":` + smallSLA + `,"pareto_metric":"ttft"}`, 400, "invalid-request", "params.pareto_metric"},
		{"plan nothing fits", "plan", `{"scenario":{"model":"llama-3.1-70b","gpu":"l4",` + sla + `},"gpus":["l4"],"tps":[1]}`, 422, "infeasible", ""},
		{"plan config gpu", "plan", `{"scenario":` + smallSLA + `,"configs":[{"gpu":"x","tp":1}]}`, 404, "not-found", ""},
		{"plan headroom below 1", "plan", `{"scenario":` + smallSLA + `,"headroom":0.5}`, 400, "invalid-request", "params.headroom"},
		{"plan utilization above 1", "plan", `{"scenario":` + smallSLA + `,"target_utilization":1.5}`, 400, "invalid-request", "params.target_utilization"},
		{"plan window", "plan", `{"scenario":` + profileSLA + `,"window_s":0.5}`, 400, "invalid-request", "params.window_s"},
		{"plan old headroom knob", "plan", `{"scenario":` + smallSLA + `,"headroom_requests":200}`, 400, "invalid-request", "params.headroom_requests"},
		{"plan profile out of order", "plan", `{"scenario":{"model":"llama-3.1-8b","gpu":"h100-sxm",` + sla + `,"workload":{"rate_profile":[{"at_s":0,"rate_rps":1},{"at_s":0,"rate_rps":2}]}}}`, 400, "invalid-request", "params.scenario.workload.rate_profile[1].at_s"},
		{"plan profile over the request limit", "plan", `{"scenario":{"model":"llama-3.1-8b","gpu":"h100-sxm",` + sla + `,"workload":{"rate_profile":[{"at_s":0,"rate_rps":50},{"at_s":43200,"rate_rps":60}]}},"gpus":["h100"],"tps":[1]}`, 422, "over-limit", ""},
		{"plan autoscale metric", "plan", `{"scenario":{"model":"llama-3.1-8b","gpu":"h100-sxm",` + sla + `,"autoscale":{"metric":"cpu"}}}`, 400, "invalid-request", "params.scenario.autoscale.metric"},
		{"curve both loads", "curve", `{"scenario":` + small + `,"rates_rps":[1],"concurrencies":[1]}`, 400, "invalid-request", "params.rates_rps"},
		{"curve no load", "curve", `{"scenario":` + small + `}`, 400, "invalid-request", "params.rates_rps"},
		{"curve bad rate", "curve", `{"scenario":` + small + `,"rates_rps":[1,-2]}`, 400, "invalid-request", "params.rates_rps[1]"},
		{"curve over the request limit", "curve", `{"scenario":` + small + `,"rates_rps":[1000],"step_duration_s":86400}`, 422, "over-limit", ""},
		{"curve infeasible", "curve", `{"scenario":{"model":"llama-3.1-70b","gpu":"h100-sxm"},"rates_rps":[1]}`, 422, "infeasible", ""},
		{"maxload no sla", "maxload", `{"scenario":` + small + `}`, 400, "invalid-request", "params.scenario.sla"},
		{"maxload staged", "maxload", `{"scenario":{"model":"llama-3.1-8b","gpu":"h100-sxm",` + sla + `,"workload":{"stages":[{"duration_s":2,"rate_rps":5}]}}}`, 400, "invalid-request", "params.scenario.workload.stages"},
		{"maxload tolerance", "maxload", `{"scenario":` + smallSLA + `,"tolerance":2}`, 400, "invalid-request", "params.tolerance"},
		{"maxload tp", "maxload", `{"scenario":{"model":"llama-3.1-8b","gpu":"h100-sxm","tp":3,` + sla + `}}`, 400, "invalid-request", "params.scenario.tp"},
		{"compare b unknown key", "compare", `{"a":` + small + `,"b":{"model":"llama-3.1-8b","gpu":"h100-sxm","wat":1}}`, 400, "invalid-request", "params.b.wat"},
		{"compare missing b", "compare", `{"a":` + small + `}`, 400, "invalid-request", "params.b"},
		{"compare infeasible a", "compare", `{"a":{"model":"llama-3.1-70b","gpu":"h100-sxm"},"b":` + small + `}`, 422, "infeasible", ""},
		{"compare unknown gpu b", "compare", `{"a":` + small + `,"b":{"model":"llama-3.1-8b","gpu":"nope"}}`, 404, "not-found", ""},
		{"params not an object", "plan", `[1]`, 400, "malformed-request", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := do(t, h, "POST", "/v1/jobs", `{"kind":"`+tt.kind+`","params":`+tt.params+`}`)
			if r.status != tt.status {
				t.Fatalf("HTTP %d, want %d: %s", r.status, tt.status, r.body)
			}
			r.wantProblem(t, tt.problem, tt.field)
		})
	}
}
