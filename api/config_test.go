package api

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestLoadConfig(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := write("good.yaml", "listen: 0.0.0.0:9000\nallow_remote_without_token: true\nsimulate:\n  sync_timeout: 10s\njobs:\n  queue_size: 8\nlog:\n  format: json\n")
	unknown := write("unknown.yaml", "simulate:\n  max_requests: 5\n")
	scalar := write("scalar.yaml", "jobs: 4\n")
	tests := []struct {
		name   string
		src    ConfigSources
		check  func(Config) bool
		errKey string // "" for success; "-" for an error without a key
	}{
		{"defaults", ConfigSources{}, func(c Config) bool {
			return c.Listen == "127.0.0.1:8080" && c.Simulate.SyncMaxRequests == 20000 && c.Jobs.Workers >= 1
		}, ""},
		{"file", ConfigSources{File: good}, func(c Config) bool {
			return c.Listen == "0.0.0.0:9000" && c.Simulate.SyncTimeout == 10*time.Second && c.Jobs.QueueSize == 8 && c.Log.Format == "json" && c.Log.Level == "info"
		}, ""},
		{"env over file", ConfigSources{File: good, Environ: []string{"HEADROOM_JOBS__QUEUE_SIZE=3", "HOME=/root", "HEADROOM_CATALOG_DIR=/cat"}}, func(c Config) bool {
			return c.Jobs.QueueSize == 3 && c.CatalogDir == "/cat" && c.Listen == "0.0.0.0:9000"
		}, ""},
		{"flags over env", ConfigSources{Environ: []string{"HEADROOM_JOBS__QUEUE_SIZE=3"}, Flags: map[string]string{"jobs.queue_size": "9", "shutdown_grace": "1m"}}, func(c Config) bool {
			return c.Jobs.QueueSize == 9 && c.ShutdownGrace == time.Minute
		}, ""},
		{"unknown file key", ConfigSources{File: unknown}, nil, "simulate.max_requests"},
		{"scalar for a section", ConfigSources{File: scalar}, nil, "-"},
		{"unknown env key", ConfigSources{Environ: []string{"HEADROOM_SIMULATE_SYNC_TIMEOUT=1s"}}, nil, "simulate_sync_timeout"},
		{"unknown flag key", ConfigSources{Flags: map[string]string{"nope": "1"}}, nil, "nope"},
		{"bad duration", ConfigSources{Environ: []string{"HEADROOM_JOBS__TIMEOUT=soon"}}, nil, "-"},
		{"invalid value", ConfigSources{Flags: map[string]string{"jobs.workers": "0"}}, nil, "jobs.workers"},
		{"bad listen", ConfigSources{Flags: map[string]string{"listen": "8080"}}, nil, "listen"},
		{"remote without token", ConfigSources{Flags: map[string]string{"listen": "0.0.0.0:8080"}}, nil, "listen"},
		{"every interface without token", ConfigSources{Flags: map[string]string{"listen": ":8080"}}, nil, "listen"},
		{"remote with token", ConfigSources{Environ: []string{"HEADROOM_AUTH_TOKEN=0123456789abcdef"}, Flags: map[string]string{"listen": "10.0.0.1:8080"}}, func(c Config) bool {
			return c.AuthToken == "0123456789abcdef"
		}, ""},
		{"remote allowed", ConfigSources{Environ: []string{"HEADROOM_ALLOW_REMOTE_WITHOUT_TOKEN=true"}, Flags: map[string]string{"listen": "[::]:8080"}}, func(c Config) bool {
			return c.AllowRemoteWithoutToken
		}, ""},
		{"loopback names", ConfigSources{Flags: map[string]string{"listen": "localhost:8080"}}, func(c Config) bool { return true }, ""},
		{"loopback v6", ConfigSources{Flags: map[string]string{"listen": "[::1]:8080"}}, func(c Config) bool { return true }, ""},
		{"loopback 127/8", ConfigSources{Flags: map[string]string{"listen": "127.0.0.2:8080"}}, func(c Config) bool { return true }, ""},
		{"short token", ConfigSources{Environ: []string{"HEADROOM_AUTH_TOKEN=secret"}}, nil, "auth_token"},
		{"missing file", ConfigSources{File: filepath.Join(dir, "none.yaml")}, nil, "-"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Every case has a home, for the calibration store's default
			// (TestCalibrationStoreDefault covers the state directory).
			src := tt.src
			src.Environ = append([]string{"HOME=/home/u"}, src.Environ...)
			c, err := LoadConfig(src)
			if tt.errKey == "" {
				if err != nil {
					t.Fatal(err)
				}
				if !tt.check(c) {
					t.Errorf("config %+v", c)
				}
				return
			}
			if err == nil {
				t.Fatalf("no error, want one about %s", tt.errKey)
			}
			var ce *ConfigError
			if tt.errKey != "-" && (!errors.As(err, &ce) || ce.Key != tt.errKey) {
				t.Errorf("error %v, want one naming key %s", err, tt.errKey)
			}
		})
	}
}

func TestEnvName(t *testing.T) {
	for key, want := range map[string]string{
		"listen":                     "HEADROOM_LISTEN",
		"simulate.sync_max_requests": "HEADROOM_SIMULATE__SYNC_MAX_REQUESTS",
		"jobs.result_ttl":            "HEADROOM_JOBS__RESULT_TTL",
	} {
		if got := EnvName(key); got != want || envKey(got) != key {
			t.Errorf("EnvName(%s) = %s (back: %s), want %s", key, got, envKey(got), want)
		}
	}
}

func TestStateDir(t *testing.T) {
	for _, c := range []struct {
		name    string
		environ []string
		want    string
	}{
		{"XDG_STATE_HOME", []string{"HOME=/home/u", "XDG_STATE_HOME=/var/state"}, "/var/state/headroom"},
		{"home", []string{"HOME=/home/u"}, "/home/u/.local/state/headroom"},
		{"relative XDG_STATE_HOME ignored", []string{"HOME=/home/u", "XDG_STATE_HOME=state"}, "/home/u/.local/state/headroom"},
		{"empty XDG_STATE_HOME", []string{"XDG_STATE_HOME=", "HOME=/home/u"}, "/home/u/.local/state/headroom"},
		{"last entry wins", []string{"HOME=/a", "HOME=/b"}, "/b/.local/state/headroom"},
		{"neither", []string{"PATH=/bin"}, ""},
	} {
		if got := StateDir(c.environ); got != c.want {
			t.Errorf("%s: StateDir(%q) = %q, want %q", c.name, c.environ, got, c.want)
		}
	}
}

// TestCalibrationStoreDefault: the store defaults to the user's state
// directory, never the working directory; a layer that sets it wins; with
// no state directory and nothing set, the error names the key.
func TestCalibrationStoreDefault(t *testing.T) {
	c, err := LoadConfig(ConfigSources{Environ: []string{"HOME=/home/u", "XDG_STATE_HOME=/var/state"}})
	if err != nil {
		t.Fatal(err)
	}
	if c.CalibrationStore != "/var/state/headroom/calibrations.db" {
		t.Errorf("calibration_store %q, want /var/state/headroom/calibrations.db", c.CalibrationStore)
	}
	if d := DefaultConfig(); d.CalibrationStore != "" {
		t.Errorf("DefaultConfig's calibration_store %q, want \"\" (memory: it reads no environment)", d.CalibrationStore)
	}
	for _, src := range []ConfigSources{
		{Environ: []string{"HEADROOM_CALIBRATION_STORE="}},
		{Flags: map[string]string{"calibration_store": ""}},
	} {
		c, err := LoadConfig(src)
		if err != nil || c.CalibrationStore != "" {
			t.Errorf("%+v: store %q, err %v; want memory", src, c.CalibrationStore, err)
		}
	}
	_, err = LoadConfig(ConfigSources{Environ: []string{"PATH=/bin"}})
	var ce *ConfigError
	if !errors.As(err, &ce) || ce.Key != "calibration_store" || !strings.Contains(err.Error(), "HOME") {
		t.Errorf("no state directory: err %v, want one naming calibration_store and HOME", err)
	}
}
