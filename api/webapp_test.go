package api

import (
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
)

// The web planner's shell: every page path answers the app, its assets
// answer with their types and validators, and it asks only /v1.

func TestWebAppPages(t *testing.T) {
	h := newTestServer(t, nil).Handler()
	for _, p := range append([]string{}, webPages...) {
		r := do(t, h, "GET", p+"?model=llama-3.1-70b", "")
		if r.status != 200 {
			t.Fatalf("GET %s: HTTP %d", p, r.status)
		}
		if ct := r.header.Get("Content-Type"); ct != "text/html; charset=utf-8" {
			t.Errorf("GET %s: Content-Type %q", p, ct)
		}
		if !strings.Contains(string(r.body), `<div id="app">`) {
			t.Errorf("GET %s: not the app's index.html:\n%s", p, r.body)
		}
		csp := r.header.Get("Content-Security-Policy")
		for _, want := range []string{"script-src 'self'", "connect-src 'self'", "frame-ancestors 'none'"} {
			if !strings.Contains(csp, want) {
				t.Errorf("GET %s: Content-Security-Policy %q lacks %q", p, csp, want)
			}
		}
	}
	if r := do(t, h, "HEAD", "/plan", ""); r.status != 200 {
		t.Errorf("HEAD /plan: HTTP %d", r.status)
	}
	// Paths beside the pages stay the API's 404 problem.
	do(t, h, "GET", "/plans", "").wantProblem(t, "not-found", "")
	do(t, h, "GET", "/assets/nope.js", "").wantProblem(t, "not-found", "")
	if r := do(t, h, "POST", "/plan", "{}"); r.status != http.StatusMethodNotAllowed {
		t.Errorf("POST /plan: HTTP %d, want 405", r.status)
	}
}

// assetRefs are the /assets/ files index.html loads.
var assetRefs = regexp.MustCompile(`(?:src|href)="(/assets/[^"]+)"`)

func TestWebAppAssets(t *testing.T) {
	h := newTestServer(t, nil).Handler()
	idx := do(t, h, "GET", "/", "")
	refs := assetRefs.FindAllStringSubmatch(string(idx.body), -1)
	if len(refs) < 2 {
		t.Fatalf("index.html loads %d assets, want the script and the style sheet:\n%s", len(refs), idx.body)
	}
	types := map[string]string{".js": "text/javascript; charset=utf-8", ".css": "text/css; charset=utf-8"}
	for _, m := range refs {
		path := m[1]
		r := do(t, h, "GET", path, "")
		if r.status != 200 || len(r.body) == 0 {
			t.Fatalf("GET %s: HTTP %d, %d bytes", path, r.status, len(r.body))
		}
		ext := path[strings.LastIndex(path, "."):]
		if ct := r.header.Get("Content-Type"); ct != types[ext] {
			t.Errorf("GET %s: Content-Type %q, want %q", path, ct, types[ext])
		}
		if r.header.Get("X-Content-Type-Options") != "nosniff" || r.header.Get("Cache-Control") != "no-cache" {
			t.Errorf("GET %s: headers %v", path, r.header)
		}
		etag := r.header.Get("ETag")
		if etag == "" {
			t.Fatalf("GET %s: no ETag", path)
		}
		for _, inm := range []string{etag, "W/" + etag, `"other", ` + etag, "*"} {
			req := httptest.NewRequest("GET", path, nil)
			req.Header.Set("If-None-Match", inm)
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != http.StatusNotModified || rec.Body.Len() != 0 {
				t.Errorf("GET %s If-None-Match %s: HTTP %d, %d bytes, want 304 and none", path, inm, rec.Code, rec.Body.Len())
			}
		}
		req := httptest.NewRequest("GET", path, nil)
		req.Header.Set("If-None-Match", `"stale"`)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != 200 {
			t.Errorf("GET %s with a stale tag: HTTP %d, want 200", path, rec.Code)
		}
	}
}

// With a token, the shell opens without one (a browser sends none when it
// opens a page) and every API call still needs it.
func TestWebAppWithToken(t *testing.T) {
	h := newTestServer(t, func(c *Config) { c.AuthToken = testToken }).Handler()
	for _, c := range []struct {
		method, path, auth string
		status             int
	}{
		{"GET", "/", "", 200},
		{"GET", "/validate?x=1", "", 200},
		{"HEAD", "/step", "", 200},
		{"GET", "/assets/app.js", "", 200},
		{"GET", "/assets/nope.js", "", 404},
		{"GET", "/v1/models", "", 401},
		{"POST", "/plan", "", 401},
		{"GET", "/docs/index.html", "", 401},
		{"GET", "/v1/models", "Bearer " + testToken, 200},
	} {
		if r := doAuth(t, h, c.method, c.path, c.auth); r.status != c.status {
			t.Errorf("%s %s (auth %q): HTTP %d, want %d", c.method, c.path, c.auth, r.status, c.status)
		}
	}
}

// apiPaths are the server paths the bundle names in string literals.
var apiPaths = regexp.MustCompile(`["'` + "`" + `](/(?:v1|api|internal|debug|metrics|healthz|readyz|openapi)[^"'` + "`" + `]*)`)

// The app asks only the public /v1 API: every server path its bundle
// names is under /v1/ (the page links to /docs are pages, not calls).
func TestWebAppUsesOnlyV1(t *testing.T) {
	app, err := embeddedWebApp()
	if err != nil {
		t.Fatal(err)
	}
	js := string(app.assets["app.js"].body)
	found := apiPaths.FindAllStringSubmatch(js, -1)
	if len(found) == 0 {
		t.Fatal("the bundle names no /v1 path: has the API client moved?")
	}
	for _, m := range found {
		if !strings.HasPrefix(m[1], "/v1/") {
			t.Errorf("the bundle names %q, which is not under /v1/", m[1])
		}
	}
}
