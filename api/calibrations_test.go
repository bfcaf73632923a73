package api

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/headroom-sim/headroom/catalogs"
	"github.com/headroom-sim/headroom/internal/study/calibrate"
)

// calibFixture is a real LLMServingSim run (see testdata/calibration): 120
// requests of Llama-3.1-8B on an RTX PRO 6000, a file that names neither.
const calibFixture = "testdata/calibration/requests.jsonl"

// calibFields are the form fields the fixture needs, with a short fit.
var calibFields = map[string]string{"model": "meta-llama/Llama-3.1-8B", "gpu": "rtx-pro-6000", "max_num_seqs": "128",
	"max_num_batched_tokens": "2048", "max_evaluations": "40"}

// form is a multipart body: fields, then the file (when name is not "").
func form(t testing.TB, fields map[string]string, name string, file []byte) (body []byte, contentType string) {
	t.Helper()
	var b bytes.Buffer
	w := multipart.NewWriter(&b)
	for k, v := range fields {
		if err := w.WriteField(k, v); err != nil {
			t.Fatal(err)
		}
	}
	if name != "" {
		fw, err := w.CreateFormFile("file", name)
		if err != nil {
			t.Fatal(err)
		}
		fw.Write(file)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes(), w.FormDataContentType()
}

// upload posts a multipart body.
func upload(t testing.TB, h http.Handler, path string, body []byte, contentType string) response {
	t.Helper()
	req := httptest.NewRequest("POST", path, bytes.NewReader(body))
	req.Header.Set("Content-Type", contentType)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return response{status: rec.Code, header: rec.Header(), body: rec.Body.Bytes()}
}

// with returns fields with changes ("" deletes a field).
func with(fields map[string]string, kv ...string) map[string]string {
	out := map[string]string{}
	for k, v := range fields {
		out[k] = v
	}
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] == "" {
			delete(out, kv[i])
		} else {
			out[kv[i]] = kv[i+1]
		}
	}
	return out
}

// calibrateOK uploads the fixture and wants 201.
func calibrateOK(t *testing.T, h http.Handler) calibrate.File {
	t.Helper()
	body, ct := form(t, calibFields, "requests.jsonl", []byte(readFile(t, calibFixture)))
	r := upload(t, h, "/v1/calibrations", body, ct)
	if r.status != http.StatusCreated {
		t.Fatalf("HTTP %d: %s", r.status, r.body)
	}
	var f calibrate.File
	r.json(t, &f)
	if loc := r.header.Get("Location"); loc != "/v1/calibrations/"+f.ID || f.ID == "" {
		t.Errorf("Location %q, id %q", loc, f.ID)
	}
	return f
}

// TestCalibrations creates, reads, lists, uses and deletes a calibration.
func TestCalibrations(t *testing.T) {
	s := newTestServer(t, nil)
	h := s.Handler()
	f := calibrateOK(t, h)
	if f.Kind != calibrate.FileKind || f.SchemaVersion != calibrate.FileSchemaVersion || f.Model != "llama-3.1-8b" || f.GPU != "rtx-pro-6000" || f.TP != 1 ||
		f.Source.File != "requests.jsonl" || f.Source.Format != "llmservingsim" || f.Source.Requests != 120 || len(f.Source.SHA256) != 64 ||
		f.Fit == nil || f.Fit.Evaluations < 10 || len(f.Fit.Fitted) == 0 || f.Profile.Validate() != nil {
		t.Fatalf("calibration %+v", f)
	}
	if f.Fit.After.Loss > f.Fit.Before.Loss {
		t.Errorf("the fit made the loss worse: %g → %g", f.Fit.Before.Loss, f.Fit.After.Loss)
	}

	r := do(t, h, "GET", "/v1/calibrations/"+f.ID, "")
	if r.status != http.StatusOK {
		t.Fatalf("GET: HTTP %d: %s", r.status, r.body)
	}
	// The answer is a calibration file the CLI reads.
	got, err := calibrate.Read(bytes.NewReader(r.body), "answer")
	if err != nil || got.ID != f.ID || !reflect.DeepEqual(got.Profile, f.Profile) {
		t.Errorf("GET answer: %v, %+v", err, got)
	}

	r = do(t, h, "GET", "/v1/calibrations", "")
	var l CalibrationList
	r.json(t, &l)
	if len(l.Calibrations) != 1 || l.Persistent {
		t.Fatalf("list: %s", r.body)
	}
	if c := l.Calibrations[0]; c.ID != f.ID || c.Model != "llama-3.1-8b" || c.GPU != "rtx-pro-6000" || c.FitLoss == nil || c.MedianAPEPct["ttft_ms"] == 0 || c.Requests != 120 || c.CreatedAt.IsZero() {
		t.Errorf("list entry %+v", c)
	}

	// Scenarios name it: simulate, a job, a planner job.
	sc := `{"model":"llama-3.1-8b","gpu":"rtx-pro-6000","calibration":"` + f.ID + `","workload":{"requests":100}}`
	if r := do(t, h, "POST", "/v1/simulate", sc); r.status != http.StatusOK {
		t.Errorf("simulate with the calibration: HTTP %d: %s", r.status, r.body)
	}
	plain := do(t, h, "POST", "/v1/simulate", strings.Replace(sc, `"calibration":"`+f.ID+`",`, "", 1))
	calibrated := do(t, h, "POST", "/v1/simulate", sc)
	if bytes.Equal(plain.body, calibrated.body) {
		t.Errorf("the calibration changes nothing")
	}
	if r := do(t, h, "POST", "/v1/capacity", `{"model":"llama-3.1-8b","gpu":"rtx-pro-6000","calibration":"`+f.ID+`"}`); r.status != http.StatusOK {
		t.Errorf("capacity with the calibration: HTTP %d: %s", r.status, r.body)
	}
	if r := do(t, h, "POST", "/v1/jobs", `{"kind":"compare","params":{"a":`+sc+`,"b":{"model":"llama-3.1-8b","gpu":"rtx-pro-6000"}}}`); r.status != http.StatusAccepted {
		t.Errorf("compare job with the calibration: HTTP %d: %s", r.status, r.body)
	}
	for _, bad := range []struct{ method, path, body string }{
		{"POST", "/v1/simulate", `{"model":"llama-3.1-8b","gpu":"h100-sxm","calibration":"nope"}`},
		{"POST", "/v1/jobs", `{"kind":"simulate","params":{"model":"llama-3.1-8b","gpu":"h100-sxm","calibration":"nope"}}`},
		{"POST", "/v1/jobs", `{"kind":"maxload","params":{"scenario":{"model":"llama-3.1-8b","gpu":"h100-sxm","calibration":"nope","sla":{"ttft_ms":{"p99":100}}}}}`},
		{"POST", "/v1/capacity", `{"model":"llama-3.1-8b","gpu":"h100-sxm","calibration":"nope"}`},
		{"GET", "/v1/calibrations/nope", ""},
		{"DELETE", "/v1/calibrations/nope", ""},
	} {
		r := do(t, h, bad.method, bad.path, bad.body)
		if r.status != http.StatusNotFound {
			t.Errorf("%s %s %s: HTTP %d, want 404: %s", bad.method, bad.path, bad.body, r.status, r.body)
			continue
		}
		if p := r.problem(t); bad.path != "/v1/calibrations/nope" && !strings.Contains(p.Detail, "calibration") {
			t.Errorf("detail %q", p.Detail)
		}
	}

	if r := do(t, h, "DELETE", "/v1/calibrations/"+f.ID, ""); r.status != http.StatusNoContent || len(r.body) != 0 {
		t.Fatalf("DELETE: HTTP %d: %s", r.status, r.body)
	}
	if r := do(t, h, "GET", "/v1/calibrations/"+f.ID, ""); r.status != http.StatusNotFound {
		t.Errorf("GET after DELETE: HTTP %d", r.status)
	}
	if r := do(t, h, "POST", "/v1/simulate", sc); r.status != http.StatusNotFound {
		t.Errorf("simulate with a deleted calibration: HTTP %d", r.status)
	}
	r = do(t, h, "GET", "/v1/calibrations", "")
	if !strings.Contains(string(r.body), `"calibrations": []`) {
		t.Errorf("empty list: %s", r.body)
	}
}

// TestCalibrationAsync fits as a job: with ?async=true, when the run is over
// the synchronous limit (which answers 422 without it), and through POST
// /v1/jobs with the file in base64.
func TestCalibrationAsync(t *testing.T) {
	s := newTestServer(t, func(c *Config) { c.Calibrations.SyncMaxRequests = 100 })
	s.jobs.Start()
	defer s.jobs.Shutdown(context.Background())
	h := s.Handler()
	file := []byte(readFile(t, calibFixture))
	body, ct := form(t, calibFields, "requests.jsonl", file)
	r := upload(t, h, "/v1/calibrations", body, ct)
	if r.status != http.StatusUnprocessableEntity {
		t.Fatalf("120 requests over a synchronous limit of 100: HTTP %d: %s", r.status, r.body)
	}
	if p := r.problem(t); p.Type != "urn:headroom:problem:over-limit" || !strings.Contains(p.Detail, "async=true") {
		t.Errorf("problem %+v", p)
	}

	r = upload(t, h, "/v1/calibrations?async=true", body, ct)
	if r.status != http.StatusAccepted {
		t.Fatalf("async: HTTP %d: %s", r.status, r.body)
	}
	var v JobView
	r.json(t, &v)
	if v.Kind != "calibrate" || r.header.Get("Location") != "/v1/jobs/"+v.ID {
		t.Errorf("job %+v, Location %q", v, r.header.Get("Location"))
	}
	check := func(v JobView) string {
		t.Helper()
		got := waitFinal(t, s.jobs, v.ID)
		if got.State != JobSucceeded || got.Progress != 1 {
			t.Fatalf("calibrate job: %+v (error %+v)", got, got.Error)
		}
		r := do(t, h, "GET", "/v1/jobs/"+v.ID, "")
		var res struct {
			Result calibrate.File `json:"result"`
		}
		r.json(t, &res)
		if res.Result.ID == "" || res.Result.Model != "llama-3.1-8b" || res.Result.Fit == nil {
			t.Fatalf("job result: %s", r.body)
		}
		if r := do(t, h, "GET", "/v1/calibrations/"+res.Result.ID, ""); r.status != http.StatusOK {
			t.Errorf("the job's calibration is not stored: HTTP %d", r.status)
		}
		if r := getAccept(t, h, "/v1/jobs/"+v.ID, "image/svg+xml"); r.status != http.StatusNotAcceptable {
			t.Errorf("SVG of a calibrate job: HTTP %d, want 406", r.status)
		}
		return res.Result.ID
	}
	id1 := check(v)

	params, _ := json.Marshal(map[string]any{"file": base64.StdEncoding.EncodeToString(file), "file_name": "requests.jsonl",
		"model": "llama-3.1-8b", "gpu": "rtx-pro-6000", "max_evaluations": 20})
	id2 := check(submit(t, h, "calibrate", string(params)))
	if id1 == id2 {
		t.Errorf("two calibrations share id %s", id1)
	}
	// A bad file is refused at submission, naming the field from the body.
	r = do(t, h, "POST", "/v1/jobs", `{"kind":"calibrate","params":{"file":"`+base64.StdEncoding.EncodeToString(file)+`","max_evaluations":20}}`)
	if r.status != http.StatusBadRequest {
		t.Fatalf("no model: HTTP %d: %s", r.status, r.body)
	}
	if p := r.problem(t); len(p.Errors) == 0 || p.Errors[0].Field != "params.model" {
		t.Errorf("problem %+v", p)
	}
	r = upload(t, h, "/v1/calibrations?async=true", append([]byte(nil), body[:len(body)/2]...), ct)
	if r.status != http.StatusBadRequest {
		t.Errorf("a cut body, async: HTTP %d: %s", r.status, r.body)
	}
}

// TestCalibrationErrors: the upload's error paths.
func TestCalibrationErrors(t *testing.T) {
	h := newTestServer(t, func(c *Config) { c.Calibrations.UploadLimitBytes = 16 << 10 }).Handler()
	file := []byte(readFile(t, calibFixture))
	lines := strings.SplitAfter(string(file), "\n")
	small := []byte(strings.Join(lines[:60], ""))  // 60 requests, under the upload limit
	tooFew := []byte(strings.Join(lines[:10], "")) // 10 requests
	bad := []byte(strings.Join(lines[:3], "") + `{"request_id": "bench-3", "input_toks": "many", "output_toks": 5, "arrival_time": 1, "queued_ts": 1, "first_token_ts": 2, "last_token_ts": 3}` + "\n")
	tests := []struct {
		name    string
		path    string
		fields  map[string]string
		file    []byte
		noFile  bool
		ct      string // overrides the multipart content type
		status  int
		problem string
		field   string
		detail  string
	}{
		{"fits", "", calibFields, small, false, "", 201, "", "", ""},
		{"no file", "", calibFields, nil, true, "", 400, "invalid-request", "file", ""},
		{"unknown field", "", with(calibFields, "temperature", "1"), small, false, "", 400, "invalid-request", "temperature", ""},
		{"bad integer", "", with(calibFields, "tp", "two"), small, false, "", 400, "invalid-request", "tp", ""},
		{"tp range", "", with(calibFields, "tp", "0"), small, false, "", 201, "", "", ""}, // 0 is "not given"
		{"negative max_num_seqs", "", with(calibFields, "max_num_seqs", "-1"), small, false, "", 400, "invalid-request", "max_num_seqs", ""},
		{"evaluations range", "", with(calibFields, "max_evaluations", "100000"), small, false, "", 400, "invalid-request", "max_evaluations", ""},
		{"unknown format", "", with(calibFields, "format", "vllm"), small, false, "", 400, "invalid-request", "format", ""},
		{"no model", "", with(calibFields, "model", ""), small, false, "", 400, "invalid-request", "model", "does not name its model"},
		{"no gpu", "", with(calibFields, "gpu", ""), small, false, "", 400, "invalid-request", "gpu", ""},
		{"unknown model", "", with(calibFields, "model", "llama-9"), small, false, "", 404, "not-found", "", ""},
		{"unknown gpu", "", with(calibFields, "gpu", "rtx-9090"), small, false, "", 404, "not-found", "", ""},
		{"stage of a single benchmark", "", with(calibFields, "stage", "1"), small, false, "", 400, "invalid-request", "stage", ""},
		{"not a benchmark file", "", calibFields, []byte("hello\n"), false, "", 400, "invalid-file", "file", ""},
		{"bad record", "", with(calibFields, "format", "llmservingsim"), bad, false, "", 400, "invalid-file", "file", "record 4"},
		{"wrong format", "", with(calibFields, "format", "guidellm"), small, false, "", 400, "invalid-file", "file", "guidellm"},
		{"record without a send time", "", calibFields, []byte(strings.Replace(string(small), `"arrival_time"`, `"arrival_tim"`, 1)), false, "", 400, "invalid-file", "file", "field arrival_time: is missing"},
		{"too few requests", "", calibFields, tooFew, false, "", 422, "too-few-requests", "", "10 completed"},
		{"infeasible", "", with(calibFields, "model", "llama-3.1-70b", "gpu", "l4"), small, false, "", 422, "infeasible", "", ""},
		{"too large", "", calibFields, file, false, "", 413, "body-too-large", "", ""},
		{"not multipart", "", calibFields, small, false, "application/json", 415, "unsupported-media-type", "", ""},
		{"bad async", "?async=maybe", calibFields, small, false, "", 400, "invalid-request", "async", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			name := "requests.jsonl"
			if tt.noFile {
				name = ""
			}
			body, ct := form(t, tt.fields, name, tt.file)
			if tt.ct != "" {
				ct = tt.ct
			}
			r := upload(t, h, "/v1/calibrations"+tt.path, body, ct)
			if r.status != tt.status {
				t.Fatalf("HTTP %d, want %d: %s", r.status, tt.status, r.body)
			}
			if tt.problem == "" {
				return
			}
			p := r.wantProblem(t, tt.problem, tt.field)
			if !strings.Contains(p.Detail, tt.detail) {
				t.Errorf("detail %q lacks %q", p.Detail, tt.detail)
			}
		})
	}
}

// TestCalibrationStorePersists: calibrations survive a restart (the store
// closed and reopened); the file exists from the start.
func TestCalibrationStorePersists(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "cal.db")
	s1 := newTestServer(t, func(c *Config) { c.CalibrationStore = path })
	if r := do(t, s1.Handler(), "GET", "/v1/calibrations", ""); r.status != http.StatusOK || !strings.Contains(string(r.body), `"persistent": true`) {
		t.Fatalf("list: HTTP %d: %s", r.status, r.body)
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("the store file is not created at start: %v", err)
	}
	f := calibrateOK(t, s1.Handler())
	gone := calibrateOK(t, s1.Handler())
	if r := do(t, s1.Handler(), "DELETE", "/v1/calibrations/"+gone.ID, ""); r.status != http.StatusNoContent {
		t.Fatalf("DELETE: HTTP %d", r.status)
	}
	if err := s1.Close(); err != nil {
		t.Fatal(err)
	}
	if r := do(t, s1.Handler(), "GET", "/v1/calibrations/"+f.ID, ""); r.status != http.StatusServiceUnavailable {
		t.Errorf("GET after Close: HTTP %d, want 503", r.status)
	}

	s2 := newTestServer(t, func(c *Config) { c.CalibrationStore = path })
	h := s2.Handler()
	r := do(t, h, "GET", "/v1/calibrations/"+f.ID, "")
	if r.status != http.StatusOK {
		t.Fatalf("after a restart: HTTP %d: %s", r.status, r.body)
	}
	var got calibrate.File
	r.json(t, &got)
	if !reflect.DeepEqual(got.Profile, f.Profile) || got.ID != f.ID {
		t.Errorf("stored %+v, read back %+v", f.Profile, got.Profile)
	}
	var l CalibrationList
	do(t, h, "GET", "/v1/calibrations", "").json(t, &l)
	if len(l.Calibrations) != 1 || l.Calibrations[0].ID != f.ID {
		t.Errorf("list after a restart: %+v (the deleted one must stay deleted)", l)
	}
	if r := do(t, h, "POST", "/v1/simulate", `{"model":"llama-3.1-8b","gpu":"rtx-pro-6000","calibration":"`+f.ID+`","workload":{"requests":50}}`); r.status != http.StatusOK {
		t.Errorf("simulate with the stored calibration: HTTP %d: %s", r.status, r.body)
	}
}

// TestCalibrationStoreConfig: a store in a missing directory, or a
// directory as the store, is refused at start.
func TestCalibrationStoreConfig(t *testing.T) {
	dir := t.TempDir()
	for _, path := range []string{filepath.Join(dir, "missing", "cal.db"), dir} {
		cfg := testConfig()
		cfg.CalibrationStore = path
		dom, err := NewDomain(mustBuiltin(t), "", nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := New(cfg, Options{Engine: dom}); err == nil || !strings.Contains(err.Error(), "calibration_store") {
			t.Errorf("store %s: %v, want an error naming calibration_store", path, err)
		}
	}
	bad := filepath.Join(dir, "bad.db")
	if err := os.WriteFile(bad, []byte("not a database"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := testConfig()
	cfg.CalibrationStore = bad
	dom, _ := NewDomain(mustBuiltin(t), "", nil)
	if _, err := New(cfg, Options{Engine: dom}); err == nil {
		t.Errorf("a file that is not a store opens")
	}
}

// TestCalibrationStoreLockedFailsAtStart: two servers on a store that does
// not exist yet: the first creates and locks it, the second fails to start
// naming the lock (it used to start, report persistent, and lose its first
// calibration to a 500 after the lock timeout).
func TestCalibrationStoreLockedFailsAtStart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "new.db")
	s1 := newTestServer(t, func(c *Config) { c.CalibrationStore = path })
	cfg := testConfig()
	cfg.CalibrationStore = path
	dom, _ := NewDomain(mustBuiltin(t), "", nil)
	start := time.Now()
	s2, err := New(cfg, Options{Engine: dom})
	if err == nil {
		s2.Close()
		t.Fatal("a second server started on a locked store")
	}
	if !strings.Contains(err.Error(), "locked by another process") || !strings.Contains(err.Error(), path) {
		t.Errorf("err %v, want one naming the store and its lock", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("start-up took %s to fail", d)
	}
	calibrateOK(t, s1.Handler()) // the first one still works
}

func TestCalibrationConfigKeys(t *testing.T) {
	c, err := LoadConfig(ConfigSources{Environ: []string{"HEADROOM_CALIBRATION_STORE=", "HEADROOM_CALIBRATIONS__UPLOAD_LIMIT_BYTES=2048",
		"HEADROOM_CALIBRATIONS__SYNC_TIMEOUT=5s"}})
	if err != nil {
		t.Fatal(err)
	}
	if c.CalibrationStore != "" || c.Calibrations.UploadLimitBytes != 2048 || c.Calibrations.SyncMaxRequests != 1000 || c.Calibrations.SyncTimeout.String() != "5s" {
		t.Errorf("config %+v", c)
	}
	if d := DefaultConfig(); d.Calibrations.UploadLimitBytes != 64<<20 {
		t.Errorf("defaults %+v", d)
	}
	if _, err := LoadConfig(ConfigSources{Flags: map[string]string{"calibrations.sync_max_requests": "0"}}); err == nil {
		t.Error("sync_max_requests 0 accepted")
	}
}

func mustBuiltin(t *testing.T) *catalogs.Catalog {
	t.Helper()
	c, err := catalogs.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	return c
}
