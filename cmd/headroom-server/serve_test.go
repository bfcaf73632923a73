package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/headroom-sim/headroom/api"
	"github.com/headroom-sim/headroom/cmd/internal/cli"
)

// runServeCmd runs `headroom-server args…` with environ as the
// environment, after a HOME of its own (for the calibration store's
// default).
func runServeCmd(t *testing.T, ctx context.Context, environment []string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	environment = append([]string{"HOME=" + t.TempDir()}, environment...)
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
	code = run(ctx, args, getenv, &out, &errb)
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
		{"remote without token", nil, []string{"--listen", "0.0.0.0:8080"}, 2, []string{"not a loopback address", "HEADROOM_AUTH_TOKEN", "--allow-remote-without-token"}, nil},
		{"remote allowed", nil, []string{"--listen", "0.0.0.0:8080", "--allow-remote-without-token"}, 0, []string{"listen: 0.0.0.0:8080", "allow_remote_without_token: true"}, nil},
		{"token redacted", []string{"HEADROOM_AUTH_TOKEN=0123456789abcdefXYZ"}, []string{"--listen", "0.0.0.0:8080"}, 0, []string{"auth_token: <redacted>"}, []string{"0123456789abcdefXYZ"}},
		{"calibration flags", nil, []string{"--calibration-store", "", "--calibration-upload-limit-bytes", "4096", "--calibration-sync-max-requests", "50", "--calibration-sync-timeout", "5s"}, 0,
			[]string{`calibration_store: ""`, "  upload_limit_bytes: 4096", "  sync_max_requests: 50", "  sync_timeout: 5s"}, nil},
		{"bad bool", nil, []string{"--allow-remote-without-token=maybe"}, 2, []string{"allow-remote-without-token"}, nil},
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
			for _, w := range tt.notWants {
				if strings.Contains(out+errs, w) {
					t.Errorf("output shows %q:\n%s%s", w, out, errs)
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
		code, _, e := runServeCmd(t, ctx, nil, "--listen", "127.0.0.1:0", "--shutdown-grace", "1s", "--log-level", "warn", "--calibration-store", filepath.Join(t.TempDir(), "cal.db"))
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

// TestServeStateDir: without calibration_store the server keeps its
// calibrations in the user's state directory, creating it, and writes
// nothing in the working directory.
func TestServeStateDir(t *testing.T) {
	state := filepath.Join(t.TempDir(), "xdg-state")
	env := []string{"XDG_STATE_HOME=" + state}
	code, out, errs := runServeCmd(t, context.Background(), env, "--print-config")
	want := "calibration_store: " + filepath.Join(state, "headroom", "calibrations.db") + "\n"
	if code != 0 || !strings.Contains(out, want) {
		t.Fatalf("exit %d, stdout lacks %q:\n%s%s", code, want, out, errs)
	}
	if _, err := os.Stat(state); err == nil {
		t.Error("--print-config created the state directory")
	}
	wd := t.TempDir()
	t.Chdir(wd)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	go func() {
		code, _, e := runServeCmd(t, ctx, env, "--listen", "127.0.0.1:0", "--shutdown-drain", "0s", "--log-level", "warn")
		errs = e
		done <- code
	}()
	db := filepath.Join(state, "headroom", "calibrations.db")
	for i := 0; i < 100 && !exists(db); i++ {
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	if code := <-done; code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	st, err := os.Stat(filepath.Dir(db))
	if err != nil || st.Mode().Perm() != 0o700 || !exists(db) {
		t.Errorf("state directory %v (err %v), store there: %v", st, err, exists(db))
	}
	if ents, _ := os.ReadDir(wd); len(ents) != 0 {
		t.Errorf("the server wrote %s into the working directory", ents[0].Name())
	}
}

func exists(p string) bool { _, err := os.Stat(p); return err == nil }

// TestServeFlagsCoverKeys: every configuration key has a flag of
// `headroom serve`.
func TestServeFlagsCoverKeys(t *testing.T) {
	has := map[string]bool{}
	for _, f := range serveFlags {
		has[f.key] = true
	}
	for _, k := range api.ConfigKeys() {
		if !has[k] {
			t.Errorf("configuration key %s has no flag of headroom serve", k)
		}
	}
}

func TestServeListenError(t *testing.T) {
	code, _, errs := runServeCmd(t, context.Background(), nil, "--listen", "256.0.0.1:1", "--allow-remote-without-token", "--calibration-store", "")
	if code != cli.ExitFailure || !strings.Contains(errs, "listen") {
		t.Errorf("exit %d, stderr %q", code, errs)
	}
}
