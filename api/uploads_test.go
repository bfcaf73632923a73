package api

import (
	"net/http"
	"testing"
)

// TestAsyncUploadsHeldAgainstTheBudget (issue 23, item 10): an
// ?async=true upload reserves its size before it is read and holds it,
// once (the imported run: the job's params keep no copy of the file), until
// its job is final; an upload past the budget is a 429 with Retry-After,
// and a cancelled job gives its share back.
func TestAsyncUploadsHeldAgainstTheBudget(t *testing.T) {
	body, ct := form(t, calibFields, "requests.jsonl", []byte(readFile(t, calibFixture)))
	n := int64(len(body))
	s := newTestServer(t, func(c *Config) {
		c.Calibrations.UploadLimitBytes = n + 1024
		c.Calibrations.UploadBudgetBytes = 2*n + n/2 // two uploads, not three
	})
	h := s.Handler() // the workers are not started: jobs stay queued
	var ids []string
	for i := range 2 {
		r := upload(t, h, "/v1/calibrations?async=true", body, ct)
		if r.status != http.StatusAccepted {
			t.Fatalf("upload %d: HTTP %d %s", i, r.status, r.body)
		}
		var v JobView
		r.json(t, &v)
		ids = append(ids, v.ID)
	}
	if held := s.uploads.held(); held <= n || held > 2*n {
		t.Errorf("two queued uploads of %d bytes hold %d bytes", n, held)
	}
	s.jobs.mu.Lock()
	for _, id := range ids {
		if j := s.jobs.jobs[id]; len(j.params) > 1024 || j.held == nil {
			t.Errorf("job %s keeps %d bytes of params (the file again?), held %T", id, len(j.params), j.held)
		}
	}
	s.jobs.mu.Unlock()
	r := upload(t, h, "/v1/calibrations?async=true", body, ct)
	if r.status != http.StatusTooManyRequests || r.header.Get("Retry-After") == "" {
		t.Fatalf("a third upload: HTTP %d (Retry-After %q), want 429", r.status, r.header.Get("Retry-After"))
	}
	r.wantProblem(t, "busy", "")
	// A synchronous upload is held against the same budget.
	if r := upload(t, h, "/v1/calibrations", body, ct); r.status != http.StatusTooManyRequests {
		t.Errorf("a synchronous upload past the budget: HTTP %d, want 429", r.status)
	}
	if r := do(t, h, "DELETE", "/v1/jobs/"+ids[0], ""); r.status != http.StatusOK {
		t.Fatalf("DELETE a queued job: HTTP %d", r.status)
	}
	if held := s.uploads.held(); held > n {
		t.Errorf("after the cancel, %d bytes held, want one upload's", held)
	}
	if r := upload(t, h, "/v1/calibrations?async=true", body, ct); r.status != http.StatusAccepted {
		t.Errorf("an upload once room is made: HTTP %d %s", r.status, r.body)
	}
}

// TestAsyncUploadRunsFromWhatItHolds: a queued upload's job fits from the
// run imported at submission, and gives its share back when it ends.
func TestAsyncUploadRunsFromWhatItHolds(t *testing.T) {
	s := newTestServer(t, nil)
	s.jobs.Start()
	defer s.jobs.Shutdown(t.Context())
	body, ct := form(t, calibFields, "requests.jsonl", []byte(readFile(t, calibFixture)))
	r := upload(t, s.Handler(), "/v1/calibrations?async=true", body, ct)
	if r.status != http.StatusAccepted {
		t.Fatalf("HTTP %d %s", r.status, r.body)
	}
	var v JobView
	r.json(t, &v)
	if v = waitFinal(t, s.jobs, v.ID); v.State != JobSucceeded {
		t.Fatalf("job %s: %+v", v.State, v.Error)
	}
	if held := s.uploads.held(); held != 0 {
		t.Errorf("%d bytes still held after the job", held)
	}
}

// TestStoredCalibrationsAreBounded: calibrations.max_stored bounds the
// store (422 beyond).
func TestStoredCalibrationsAreBounded(t *testing.T) {
	s := newTestServer(t, func(c *Config) { c.Calibrations.MaxStored = 1 })
	h := s.Handler()
	calibrateOK(t, h)
	body, ct := form(t, calibFields, "requests.jsonl", []byte(readFile(t, calibFixture)))
	r := upload(t, h, "/v1/calibrations", body, ct)
	if r.status != http.StatusUnprocessableEntity {
		t.Fatalf("a second calibration past max_stored 1: HTTP %d %s", r.status, r.body)
	}
	r.wantProblem(t, "over-limit", "")
}
