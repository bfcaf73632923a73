//go:build full

package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// runServeCmd runs `headroom serve args…` with environ as the environment.
func runServeCmd(t *testing.T, ctx context.Context, environment []string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	old := environ
	environ = func() []string { return environment }
	defer func() { environ = old }()
	getenv := func(k string) string {
		for _, kv := range environment {
			if name, v, ok := strings.Cut(kv, "="); ok && name == k {
				return v
			}
		}
		return ""
	}
	var out, errb bytes.Buffer
	code = run(ctx, append([]string{"serve"}, args...), getenv, strings.NewReader(""), &out, &errb)
	return code, out.String(), errb.String()
}

func TestServePrintConfig(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "headroom.yaml")
	if err := os.WriteFile(file, []byte("listen: 127.0.0.1:9000\njobs:\n  workers: 3\n  queue_size: 5\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte("jobs:\n  worker: 3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		env      []string
		args     []string
		code     int
		want     []string // lines in stdout (code 0) or substrings of stderr
		notWants []string
	}{
		{"defaults", nil, nil, 0, []string{"listen: 127.0.0.1:8080", "  sync_max_requests: 20000", "  sync_timeout: 30s", "  queue_size: 64"}, nil},
		{"file", nil, []string{"--config", file}, 0, []string{"listen: 127.0.0.1:9000", "  workers: 3", "  queue_size: 5"}, nil},
		{"env over file", []string{"HEADROOM_JOBS__WORKERS=7", "HEADROOM_LISTEN=127.0.0.1:9100", "PATH=/bin"}, []string{"--config", file}, 0,
			[]string{"listen: 127.0.0.1:9100", "  workers: 7", "  queue_size: 5"}, nil},
		{"flags over env", []string{"HEADROOM_JOBS__WORKERS=7"}, []string{"--config", file, "--job-workers", "9", "--sync-timeout", "5s"}, 0,
			[]string{"  workers: 9", "  sync_timeout: 5s"}, nil},
		{"unknown file key", nil, []string{"--config", bad}, 2, []string{"jobs.worker is not a configuration key"}, nil},
		{"unknown env key", []string{"HEADROOM_JOBS_WORKERS=2"}, nil, 2, []string{"HEADROOM_JOBS_WORKERS is not a configuration key"}, nil},
		{"bad value", nil, []string{"--job-workers", "many"}, 2, []string{"jobs.workers"}, nil},
		{"invalid value", []string{"HEADROOM_LOG__LEVEL=loud"}, nil, 2, []string{"log.level", "HEADROOM_LOG__LEVEL"}, nil},
		{"missing file", nil, []string{"--config", filepath.Join(dir, "none.yaml")}, 2, []string{"none.yaml"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errs := runServeCmd(t, context.Background(), tt.env, append(tt.args, "--print-config")...)
			if code != tt.code {
				t.Fatalf("exit %d, want %d; stderr %s", code, tt.code, errs)
			}
			for _, w := range tt.want {
				if tt.code == 0 && !strings.Contains("\n"+out, "\n"+w+"\n") {
					t.Errorf("stdout lacks line %q:\n%s", w, out)
				}
				if tt.code != 0 && !strings.Contains(errs, w) {
					t.Errorf("stderr lacks %q: %s", w, errs)
				}
			}
		})
	}
}

// TestServeStartsAndStops runs the server and stops it as SIGINT would.
func TestServeStartsAndStops(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	var errs string
	go func() {
		code, _, e := runServeCmd(t, ctx, nil, "--listen", "127.0.0.1:0", "--shutdown-grace", "1s", "--log-level", "warn")
		errs = e
		done <- code
	}()
	time.Sleep(200 * time.Millisecond)
	cancel()
	select {
	case code := <-done:
		if code != 0 {
			t.Errorf("exit %d: %s", code, errs)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("serve did not stop")
	}
}

func TestServeListenError(t *testing.T) {
	code, _, errs := runServeCmd(t, context.Background(), nil, "--listen", "256.0.0.1:1")
	if code != exitFailure || !strings.Contains(errs, "listen") {
		t.Errorf("exit %d, stderr %q", code, errs)
	}
}
