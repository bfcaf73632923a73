package api

import (
	"net/http"
	"os"
	"path/filepath"
	"testing"
)

// TestAddModel adds a model from a config.json: it is served at once, and
// with a model store it is written there and loaded by the next server.
func TestAddModel(t *testing.T) {
	cfgJSON := readFile(t, "testdata/hf-config.json")
	t.Run("in memory", func(t *testing.T) {
		h := newTestServer(t, nil).Handler()
		r := do(t, h, "POST", "/v1/models?id=my-qwen&hf_id=me/my-qwen", cfgJSON)
		if r.status != http.StatusCreated {
			t.Fatalf("HTTP %d: %s", r.status, r.body)
		}
		var im ImportedModel
		r.json(t, &im)
		if im.Model.ID != "my-qwen" || im.Persisted || im.Params.Total == 0 || r.header.Get("Location") != "/v1/models/my-qwen" {
			t.Errorf("answer %+v, Location %q", im, r.header.Get("Location"))
		}
		for _, path := range []string{"/v1/models/my-qwen", "/v1/models/me/my-qwen"} {
			if r := do(t, h, "GET", path, ""); r.status != http.StatusOK {
				t.Errorf("GET %s: HTTP %d", path, r.status)
			}
		}
		if r := do(t, h, "POST", "/v1/capacity", `{"model":"my-qwen","gpu":"l40s"}`); r.status != http.StatusOK {
			t.Errorf("capacity of the new model: HTTP %d: %s", r.status, r.body)
		}
		if r := do(t, h, "POST", "/v1/models?id=other&hf_id=me/my-qwen", cfgJSON); r.status != http.StatusConflict {
			t.Errorf("taken hf_id: HTTP %d", r.status)
		}
	})
	t.Run("persisted", func(t *testing.T) {
		dir := t.TempDir()
		h := newTestServer(t, func(c *Config) { c.ModelStoreDir = dir }).Handler()
		r := do(t, h, "POST", "/v1/models?id=stored-qwen", cfgJSON)
		if r.status != http.StatusCreated {
			t.Fatalf("HTTP %d: %s", r.status, r.body)
		}
		if _, err := os.Stat(filepath.Join(dir, "models", "stored-qwen.yaml")); err != nil {
			t.Fatal(err)
		}
		h2 := newTestServer(t, func(c *Config) { c.ModelStoreDir = dir }).Handler()
		if r := do(t, h2, "GET", "/v1/models/stored-qwen", ""); r.status != http.StatusOK {
			t.Errorf("a new server does not load the stored model: HTTP %d", r.status)
		}
	})
}
