// Package golden compares test output with golden files under testdata/
// and rewrites them when the tests run with -update (each test package
// declares its own flag and passes its value). It is used by tests only.
package golden

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// Check compares got with the golden file at path, or, with update,
// writes got there (creating the directory).
func Check(t testing.TB, path string, got []byte, update bool) {
	t.Helper()
	if update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run the test with -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the output (run the test with -update and review the diff):\n%s", path, truncate(got, 4000))
	}
}

func truncate(b []byte, n int) []byte {
	if len(b) <= n {
		return b
	}
	return append(append([]byte{}, b[:n]...), "\n…"...)
}
