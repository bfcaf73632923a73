package api

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

const testToken = "s3cret-token-0123456789"

// doAuth sends a request with an Authorization header ("" for none).
func doAuth(t *testing.T, h http.Handler, method, path, auth string) response {
	t.Helper()
	req := httptest.NewRequest(method, path, nil)
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return response{status: rec.Code, header: rec.Header(), body: rec.Body.Bytes()}
}

func TestBearerToken(t *testing.T) {
	h := newTestServer(t, func(c *Config) { c.AuthToken = testToken }).Handler()
	for _, c := range []struct {
		name, method, path, auth string
		status                   int
	}{
		{"health without token", "GET", "/healthz", "", 200},
		{"ready without token", "GET", "/readyz", "", 200},
		{"api without token", "GET", "/v1/gpus", "", 401},
		{"metrics without token", "GET", "/metrics", "", 401},
		{"docs without token", "GET", "/openapi.json", "", 401},
		{"unknown route without token", "GET", "/v1/nope", "", 401},
		{"wrong token", "GET", "/v1/gpus", "Bearer " + testToken + "x", 401},
		{"prefix of the token", "GET", "/v1/gpus", "Bearer " + testToken[:10], 401},
		{"basic scheme", "GET", "/v1/gpus", "Basic " + testToken, 401},
		{"token without scheme", "GET", "/v1/gpus", testToken, 401},
		{"right token", "GET", "/v1/gpus", "Bearer " + testToken, 200},
		{"scheme in lower case", "GET", "/v1/models", "bearer " + testToken, 200},
		{"right token, unknown route", "GET", "/v1/nope", "Bearer " + testToken, 404},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := doAuth(t, h, c.method, c.path, c.auth)
			if r.status != c.status {
				t.Fatalf("HTTP %d, want %d: %s", r.status, c.status, r.body)
			}
			if c.status == 401 {
				p := r.problem(t)
				if p.Type != "urn:headroom:problem:unauthorized" || !strings.Contains(p.Detail, "Authorization: Bearer") {
					t.Errorf("problem %+v", p)
				}
				if r.header.Get("WWW-Authenticate") == "" {
					t.Error("no WWW-Authenticate header")
				}
			}
		})
	}
}

func TestNoTokenNoAuthentication(t *testing.T) {
	h := newTestServer(t, nil).Handler()
	if r := doAuth(t, h, "GET", "/v1/gpus", ""); r.status != 200 {
		t.Fatalf("HTTP %d without a configured token", r.status)
	}
}
