package main

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestServeRunsServer: `headroom serve` runs headroom-server with its
// arguments, streams and exit code, and without one says how to get it.
func TestServeRunsServer(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("the stand-in server is a shell script")
	}
	dir := t.TempDir()
	fake := filepath.Join(dir, "headroom-server")
	script := "#!/bin/sh\necho \"server: $*\"\necho to-stderr >&2\nexit 3\n"
	if err := os.WriteFile(fake, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	envWith := func(vars map[string]string) func(string) string {
		return func(k string) string { return vars[k] }
	}
	var out, errb bytes.Buffer
	code := run(t.Context(), []string{"serve", "--listen", "127.0.0.1:0"}, envWith(map[string]string{"HEADROOM_SERVER_BINARY": fake}), strings.NewReader(""), &out, &errb)
	if code != 3 || out.String() != "server: --listen 127.0.0.1:0\n" || errb.String() != "to-stderr\n" {
		t.Errorf("exit %d, stdout %q, stderr %q", code, out.String(), errb.String())
	}

	errb.Reset()
	code = run(t.Context(), []string{"serve"}, envWith(map[string]string{"HEADROOM_SERVER_BINARY": filepath.Join(dir, "missing")}), strings.NewReader(""), &out, &errb)
	if code != exitFailure || !strings.Contains(errb.String(), "HEADROOM_SERVER_BINARY: ") {
		t.Errorf("missing HEADROOM_SERVER_BINARY: exit %d, %q", code, errb.String())
	}

	// Found on PATH (nothing named headroom-server sits beside the test binary).
	t.Setenv("PATH", dir)
	out.Reset()
	errb.Reset()
	if code := run(t.Context(), []string{"serve", "--print-config"}, envWith(nil), strings.NewReader(""), &out, &errb); code != 3 || out.String() != "server: --print-config\n" {
		t.Errorf("on PATH: exit %d, stdout %q, stderr %q", code, out.String(), errb.String())
	}

	t.Setenv("PATH", t.TempDir())
	errb.Reset()
	if code := run(t.Context(), []string{"serve"}, envWith(nil), strings.NewReader(""), &out, &errb); code != exitFailure || !strings.Contains(errb.String(), "go run ./cmd/headroom-server") {
		t.Errorf("no server: exit %d, %q", code, errb.String())
	}
}
