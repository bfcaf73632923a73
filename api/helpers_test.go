package api

import (
	"encoding/json"
	"flag"
	goldenfile "github.com/headroom-sim/headroom/internal/testkit/golden"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/headroom-sim/headroom/catalogs"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/golden")

// testConfig is the default configuration with small, fast limits.
func testConfig() Config {
	c := DefaultConfig()
	c.Listen = "127.0.0.1:0"
	c.Jobs.Workers = 2
	c.Jobs.QueueSize = 4
	c.Simulate.SyncTimeout = 20 * time.Second
	c.ShutdownDrain = 0
	c.CalibrationStore = "" // in memory: tests that persist set a t.TempDir() file
	return c
}

// newTestServer builds a server over the built-in catalog.
func newTestServer(t testing.TB, mutate func(*Config)) *Server {
	t.Helper()
	cfg := testConfig()
	if mutate != nil {
		mutate(&cfg)
	}
	base, err := catalogs.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	dom, err := NewDomain(base, cfg.ModelStoreDir, nil)
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(cfg, Options{Engine: dom})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// response is a recorded answer.
type response struct {
	status int
	header http.Header
	body   []byte
}

func (r response) json(t testing.TB, v any) {
	t.Helper()
	if err := json.Unmarshal(r.body, v); err != nil {
		t.Fatalf("response is not JSON: %v\n%s", err, r.body)
	}
}

func (r response) problem(t testing.TB) Problem {
	t.Helper()
	if ct := r.header.Get("Content-Type"); ct != ProblemContentType {
		t.Fatalf("Content-Type = %q, want %s; body %s", ct, ProblemContentType, r.body)
	}
	var p Problem
	r.json(t, &p)
	if p.Status != r.status || p.Type == "" || p.Title == "" {
		t.Fatalf("incomplete problem (HTTP %d): %s", r.status, r.body)
	}
	return p
}

// wantProblem checks r is a problem of the given type (the last part of
// its urn:headroom:problem: URI) and, when field is not "", that its first
// error names field. It returns the problem for further checks.
func (r response) wantProblem(t testing.TB, typ, field string) Problem {
	t.Helper()
	p := r.problem(t)
	if want := "urn:headroom:problem:" + typ; p.Type != want {
		t.Errorf("type %q, want %q: %s", p.Type, want, r.body)
	}
	if field != "" && (len(p.Errors) == 0 || p.Errors[0].Field != field) {
		t.Errorf("errors %+v, want field %q first", p.Errors, field)
	}
	return p
}

// do sends one request to h.
func do(t testing.TB, h http.Handler, method, path, body string) response {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req := httptest.NewRequest(method, path, rd)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return response{status: rec.Code, header: rec.Header(), body: rec.Body.Bytes()}
}

// golden compares got with testdata/golden/name, rewriting it with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	goldenfile.Check(t, filepath.Join("testdata", "golden", name), got, *update)
}
