package api

import (
	"bytes"
	"errors"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/headroom-sim/headroom/catalogs"
	"github.com/headroom-sim/headroom/internal/study/calibrate"
	"github.com/headroom-sim/headroom/sim/steptime"
)

// TestStoredYAMLKeepsUserTextQuoted (issue 23, item 4): a config.json key
// with a line break, ignored with ignore_unknown, can neither break the
// stored file (the next start loads it) nor inject a key: llama-3.1-70b
// still names the built-in model after a restart.
func TestStoredYAMLKeepsUserTextQuoted(t *testing.T) {
	dir := t.TempDir()
	h := newTestServer(t, func(c *Config) { c.ModelStoreDir = dir }).Handler()
	cfg := strings.TrimSuffix(tinyConfig, "}") + `,"x\naliases: [llama-3.1-70b]\n# \"": 1}`
	if r := do(t, h, "POST", "/v1/models?id=tiny&ignore_unknown=true", cfg); r.status != http.StatusCreated {
		t.Fatalf("POST: HTTP %d %s", r.status, r.body)
	}
	raw, err := os.ReadFile(filepath.Join(dir, "models", "tiny.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		t.Fatalf("the stored file is not YAML: %v\n%s", err, raw)
	}
	if _, ok := doc["aliases"]; ok {
		t.Errorf("the ignored key injected aliases:\n%s", raw)
	}
	if !bytes.Contains(raw, []byte(`"x\naliases: [llama-3.1-70b]\n# \""`)) {
		t.Errorf("the ignored key is not listed quoted:\n%s", raw)
	}
	if !bytes.Contains(raw, []byte(`id: "tiny"`)) {
		t.Errorf("string values are not double-quoted:\n%s", raw)
	}
	// After a restart: the model is there, llama-3.1-70b is the built-in.
	h2 := newTestServer(t, func(c *Config) { c.ModelStoreDir = dir }).Handler()
	var m struct{ Model struct{ ID string } }
	r := do(t, h2, "GET", "/v1/models/tiny", "")
	r.json(t, &m)
	if r.status != http.StatusOK || m.Model.ID != "tiny" {
		t.Errorf("GET tiny after the restart: HTTP %d %s", r.status, r.body)
	}
	r = do(t, h2, "GET", "/v1/models/llama-3.1-70b", "")
	r.json(t, &m)
	if m.Model.ID != "llama-3.1-70b" {
		t.Errorf("llama-3.1-70b names %q after the restart", m.Model.ID)
	}
	if matches, _ := filepath.Glob(filepath.Join(dir, "models", ".tmp-*")); len(matches) > 0 {
		t.Errorf("temporary files left: %v", matches)
	}
}

// TestModelStoreLoadsEntryByEntry (issue 23, smaller items and item 5):
// an empty, a truncated and a non-YAML file, and an entry whose alias is
// another model's id, are each logged and skipped; the server starts with
// the good entries.
func TestModelStoreLoadsEntryByEntry(t *testing.T) {
	dir := t.TempDir()
	h := newTestServer(t, func(c *Config) { c.ModelStoreDir = dir }).Handler()
	if r := do(t, h, "POST", "/v1/models?id=good", tinyConfig); r.status != http.StatusCreated {
		t.Fatalf("POST: HTTP %d %s", r.status, r.body)
	}
	models := filepath.Join(dir, "models")
	good, err := os.ReadFile(filepath.Join(models, "good.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	shadow := bytes.Replace(good, []byte(`id: "good"`), []byte("id: \"shadow\"\naliases: [\"llama-3.1-70b\"]"), 1)
	for name, data := range map[string][]byte{
		"empty.yaml":     nil,
		"truncated.yaml": good[:len(good)/2],
		"garbage.yaml":   []byte("\x00\x01{{{ not yaml"),
		"shadow.yaml":    shadow,
	} {
		if err := os.WriteFile(filepath.Join(models, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	base, err := catalogs.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	dom, err := NewDomain(base, dir, slog.New(slog.NewTextHandler(&log, nil)))
	if err != nil {
		t.Fatalf("the store does not load: %v", err)
	}
	if _, err := dom.Model("good"); err != nil {
		t.Errorf("the good entry is lost: %v", err)
	}
	if m, _ := dom.Model("llama-3.1-70b"); m == nil || m.ID != "llama-3.1-70b" {
		t.Errorf("llama-3.1-70b names %v", m)
	}
	if _, err := dom.Model("shadow"); err == nil {
		t.Errorf("the entry shadowing llama-3.1-70b was loaded")
	}
	for _, f := range []string{"empty.yaml", "truncated.yaml", "garbage.yaml", "shadow.yaml"} {
		if !strings.Contains(log.String(), f) {
			t.Errorf("%s skipped without a word: %s", f, log.String())
		}
	}
}

// TestDamagedCalibrationStoreIsAnError (issue 23, smaller items): a store
// file cut short, or overwritten, is an error naming calibration_store at
// start, not a SIGBUS.
func TestDamagedCalibrationStoreIsAnError(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cals.db")
	st, err := openCalibrationStore(path, 0)
	if err != nil {
		t.Fatal(err)
	}
	g, err := mustBuiltin(t).GPU("h100-sxm")
	if err != nil {
		t.Fatal(err)
	}
	f := &calibrate.File{Kind: calibrate.FileKind, SchemaVersion: calibrate.FileSchemaVersion, Model: "llama-3.1-8b", GPU: "h100-sxm", TP: 1,
		Profile: steptime.DefaultProfile(g)}
	f.EngineVersion = strings.Repeat("x", 4000) // a few pages of data
	for range 300 {
		if err := st.create(f, time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	st.close()
	whole, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string][]byte{
		"cut in half":                        whole[:len(whole)/2],
		"cut to one page":                    whole[:4096],
		"overwritten":                        bytes.Repeat([]byte{0xAB}, len(whole)),
		"a few bytes left":                   whole[:100],
		"pages overwritten, meta pages kept": append(append([]byte{}, whole[:8192]...), bytes.Repeat([]byte{0xAB}, len(whole)-8192)...),
	} {
		t.Run(name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "cals.db")
			if err := os.WriteFile(p, data, 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := openCalibrationStore(p, 0)
			var ce *ConfigError
			if !errors.As(err, &ce) || ce.Key != "calibration_store" || !errors.Is(err, errDamagedStore) {
				t.Fatalf("open = %v, want a calibration_store error saying the file is damaged", err)
			}
		})
	}
	// The intact file still opens, with what it held.
	p := filepath.Join(t.TempDir(), "cals.db")
	if err := os.WriteFile(p, whole, 0o644); err != nil {
		t.Fatal(err)
	}
	st, err = openCalibrationStore(p, 0)
	if err != nil {
		t.Fatalf("the intact copy: %v", err)
	}
	defer st.close()
	if l, err := st.list(); err != nil || len(l) != 300 {
		t.Errorf("list: %d, %v", len(l), err)
	}
}
