// Package refdata locates the public reference data (measured runs, kernel
// tables, traces) that tests and benchmarks compare Headroom with. The data
// sit beside the project checkout, at ../shared/data from the module root;
// HEADROOM_SHARED_DATA overrides the location. Nothing in the product reads
// them: tests that need them skip, saying so, when they are absent.
package refdata

import (
	"os"
	"path/filepath"
	"testing"
)

// Dir returns the reference data directory ("" when it is absent).
func Dir() string {
	d := Location()
	if st, err := os.Stat(d); err == nil && st.IsDir() {
		return d
	}
	return ""
}

// Location is where the reference data are expected, present or not:
// HEADROOM_SHARED_DATA, else ../shared/data beside the module root.
func Location() string {
	if d := os.Getenv("HEADROOM_SHARED_DATA"); d != "" {
		return d
	}
	wd, err := os.Getwd()
	if err != nil {
		return filepath.Join("..", "shared", "data")
	}
	for dir := wd; ; dir = filepath.Dir(dir) {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return filepath.Join(dir, "..", "shared", "data")
		}
		if filepath.Dir(dir) == dir {
			return filepath.Join(wd, "..", "shared", "data")
		}
	}
}

// Path returns the reference data path rel (slash-separated, relative to the
// data directory), or skips t when it is absent.
func Path(t testing.TB, rel string) string {
	t.Helper()
	d := Dir()
	if d == "" {
		t.Skip("reference data (../shared/data beside the checkout, or HEADROOM_SHARED_DATA) not found: skipping")
	}
	p := filepath.Join(d, filepath.FromSlash(rel))
	if _, err := os.Stat(p); err != nil {
		t.Skipf("reference data %s not found: skipping", p)
	}
	return p
}
