package api

import (
	"bytes"
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/headroom-sim/headroom/openapi"
)

// TestOpenAPICoversRoutes checks that /openapi.json is the committed spec
// and that it documents every route the server has.
func TestOpenAPICoversRoutes(t *testing.T) {
	s := newTestServer(t, nil)
	r := do(t, s.Handler(), "GET", "/openapi.json", "")
	if !bytes.Equal(r.body, openapi.JSON) {
		t.Fatal("/openapi.json is not openapi/swagger.json")
	}
	var spec struct {
		Paths map[string]map[string]any `json:"paths"`
	}
	r.json(t, &spec)
	param := regexp.MustCompile(`[:*](\w+)`)
	for _, rt := range s.router.Routes() {
		if strings.HasPrefix(rt.Path, "/docs") || isWebPath(rt.Path) {
			continue // the interactive page and the web planner, not part of the API
		}
		path := param.ReplaceAllString(rt.Path, "{$1}")
		if _, ok := spec.Paths[path][strings.ToLower(rt.Method)]; !ok {
			t.Errorf("%s %s is not in openapi/swagger.json (annotate the handler, then go generate ./openapi)", rt.Method, path)
		}
	}
	var doc map[string]any
	if err := json.Unmarshal(openapi.JSON, &doc); err != nil || doc["swagger"] != "2.0" {
		t.Errorf("not a Swagger 2.0 document: %v", err)
	}
}
