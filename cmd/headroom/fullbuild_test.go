//go:build !full

package main

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

func TestNeedsFull(t *testing.T) {
	for _, c := range []struct {
		args []string
		want bool
	}{
		{[]string{"serve"}, true},
		{[]string{"serve", "--print-config"}, true},
		{[]string{"simulate"}, false},
		{[]string{"simulate", "--plot-dir", "x"}, true},
		{[]string{"sweep", "--axis", "tp=1", "--plot-dir=x"}, true},
		{[]string{"plan", "-plot-dir", "x"}, true},
		{[]string{"simulate", "--set", "plot-dir=x"}, false},
		{[]string{"simulate", "--metrics-out", "m.om"}, false},
		{[]string{"calibrate", "--", "--plot-dir"}, false},
		{[]string{"validate", "--runs-from", "d", "--plot", "a.svg"}, true},
		{[]string{"validate", "-plot=a.svg"}, true},
		{[]string{"simulate", "--plot", "a.svg"}, false},
		{nil, false},
	} {
		if got := needsFull(c.args); got != c.want {
			t.Errorf("needsFull(%q) = %v, want %v", c.args, got, c.want)
		}
	}
}

// TestRunFull: a command line the slim build cannot run goes to the full
// build with its arguments, streams and exit code.
func TestRunFull(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("the stand-in full build is a shell script")
	}
	dir := t.TempDir()
	fake := filepath.Join(dir, "headroom-full")
	script := "#!/bin/sh\necho \"full build: $*\"\necho to-stderr >&2\nexit 3\n"
	if err := os.WriteFile(fake, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	getenv := func(k string) string {
		if k == "HEADROOM_FULL_BINARY" {
			return fake
		}
		return ""
	}
	code := run(t.Context(), []string{"serve", "--listen", "127.0.0.1:0"}, getenv, strings.NewReader(""), &out, &errb)
	if code != 3 || out.String() != "full build: serve --listen 127.0.0.1:0\n" || errb.String() != "to-stderr\n" {
		t.Errorf("exit %d, stdout %q, stderr %q", code, out.String(), errb.String())
	}
	getenv = func(k string) string {
		if k == "HEADROOM_FULL_BINARY" {
			return filepath.Join(dir, "missing")
		}
		return ""
	}
	errb.Reset()
	if code := run(t.Context(), []string{"simulate", "--plot-dir", dir}, getenv, strings.NewReader(""), &out, &errb); code != exitFailure || !strings.Contains(errb.String(), "HEADROOM_FULL_BINARY: ") {
		t.Errorf("missing full build: exit %d, %q", code, errb.String())
	}
}
