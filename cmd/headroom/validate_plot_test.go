package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestValidatePlot: --plot writes the closed-loop runs' predicted-vs-measured
// chart, one legend entry per model.
func TestValidatePlot(t *testing.T) {
	file := filepath.Join(t.TempDir(), "accuracy.svg")
	code, _, stderr := runCLI(t, "validate", "--run", exampleSilicon, "--plot", file)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"<svg", "Predicted vs measured mean TTFT and TPOT, 7 closed-loop runs", "gpt-oss-120b (1)", "qwen3-235b-a22b-fp8 (2)", "within ±20%"} {
		if !bytes.Contains(b, []byte(want)) {
			t.Errorf("chart lacks %q", want)
		}
	}
	code, _, stderr = runCLI(t, "validate", "--run", exampleSilicon, "--plot", filepath.Join(t.TempDir(), "no", "such", "dir.svg"))
	if code != exitUsage || !strings.Contains(stderr, "--plot: ") || !strings.Contains(stderr, "no such directory") {
		t.Errorf("unwritable --plot: exit %d: %s", code, stderr)
	}
}
