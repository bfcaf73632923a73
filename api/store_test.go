package api

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
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

// TestModelLimitAndDelete: POST /v1/models holds at most models.max_added
// models (5000 used to be accepted), and DELETE frees one, removing its
// file from the store; the catalog's own models cannot be deleted.
func TestModelLimitAndDelete(t *testing.T) {
	cfgJSON := readFile(t, "testdata/hf-config.json")
	dir := t.TempDir()
	h := newTestServer(t, func(c *Config) { c.Models.MaxAdded = 2; c.ModelStoreDir = dir }).Handler()
	for _, q := range []string{"id=m-a&hf_id=me/m-a", "id=m-b"} {
		if r := do(t, h, "POST", "/v1/models?"+q, cfgJSON); r.status != http.StatusCreated {
			t.Fatalf("POST %s: HTTP %d: %s", q, r.status, r.body)
		}
	}
	r := do(t, h, "POST", "/v1/models?id=m-c", cfgJSON)
	if p := r.problem(t); p.Status != http.StatusUnprocessableEntity || !strings.Contains(p.Detail, "models.max_added") {
		t.Fatalf("third model: %+v, want 422 naming models.max_added", p)
	}
	if r := do(t, h, "DELETE", "/v1/models/me/m-a", ""); r.status != http.StatusNoContent {
		t.Fatalf("DELETE by Hugging Face id: HTTP %d: %s", r.status, r.body)
	}
	if _, err := os.Stat(filepath.Join(dir, "models", "m-a.yaml")); !os.IsNotExist(err) {
		t.Errorf("the deleted model's file is still in the store: %v", err)
	}
	for _, path := range []string{"/v1/models/m-a", "/v1/models/me/m-a"} {
		if r := do(t, h, "GET", path, ""); r.status != http.StatusNotFound {
			t.Errorf("GET %s after DELETE: HTTP %d", path, r.status)
		}
	}
	if r := do(t, h, "GET", "/v1/models/m-b", ""); r.status != http.StatusOK {
		t.Errorf("the other added model is gone: HTTP %d", r.status)
	}
	if r := do(t, h, "POST", "/v1/models?id=m-c", cfgJSON); r.status != http.StatusCreated {
		t.Errorf("after a DELETE there is room again: HTTP %d: %s", r.status, r.body)
	}
	if p := do(t, h, "DELETE", "/v1/models/llama-3.1-8b", "").problem(t); p.Status != http.StatusConflict {
		t.Errorf("DELETE a built-in model: %+v, want 409", p)
	}
	if r := do(t, h, "GET", "/v1/models/llama-3.1-8b", ""); r.status != http.StatusOK {
		t.Errorf("the built-in model is gone: HTTP %d", r.status)
	}
	if p := do(t, h, "DELETE", "/v1/models/nope", "").problem(t); p.Status != http.StatusNotFound {
		t.Errorf("DELETE an unknown model: %+v, want 404", p)
	}

	// A restart loads the store's two models and counts them.
	h2 := newTestServer(t, func(c *Config) { c.Models.MaxAdded = 2; c.ModelStoreDir = dir }).Handler()
	if r := do(t, h2, "GET", "/v1/models/m-a", ""); r.status != http.StatusNotFound {
		t.Errorf("the deleted model came back after a restart: HTTP %d", r.status)
	}
	if r := do(t, h2, "POST", "/v1/models?id=m-d", cfgJSON); r.status != http.StatusUnprocessableEntity {
		t.Errorf("the store's models are not counted: HTTP %d", r.status)
	}
	if r := do(t, h2, "DELETE", "/v1/models/m-b", ""); r.status != http.StatusNoContent {
		t.Errorf("DELETE a model loaded from the store: HTTP %d: %s", r.status, r.body)
	}
	off := newTestServer(t, func(c *Config) { c.Models.MaxAdded = 0 }).Handler()
	if r := do(t, off, "POST", "/v1/models?id=m-e", cfgJSON); r.status != http.StatusUnprocessableEntity {
		t.Errorf("max_added 0 accepts a model: HTTP %d", r.status)
	}
}
