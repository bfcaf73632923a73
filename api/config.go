package api

import (
	"fmt"
	"maps"
	"net"
	"reflect"
	"runtime"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/knadh/koanf/parsers/yaml"
	"github.com/knadh/koanf/providers/confmap"
	"github.com/knadh/koanf/providers/env/v2"
	"github.com/knadh/koanf/providers/file"
	"github.com/knadh/koanf/v2"
)

// Config is the server's configuration. Keys are snake_case; sections nest
// ("jobs.workers" in YAML is jobs: {workers: …}).
type Config struct {
	// Listen is the TCP address to listen on. Without an auth_token it must
	// be a loopback address unless allow_remote_without_token is set.
	Listen string `koanf:"listen" yaml:"listen"`
	// AuthToken, when set, is the bearer token every request but /healthz
	// and /readyz must carry (Authorization: Bearer <token>; 401 without
	// it). At least 16 characters; prefer the environment
	// (HEADROOM_AUTH_TOKEN) to a flag, which other users can see.
	AuthToken string `koanf:"auth_token" yaml:"auth_token"`
	// AllowRemoteWithoutToken lets the server listen beyond loopback with
	// no auth_token (behind an authenticating proxy, say).
	AllowRemoteWithoutToken bool `koanf:"allow_remote_without_token" yaml:"allow_remote_without_token"`
	// BodyLimitBytes bounds a request body (413 beyond it).
	BodyLimitBytes int64 `koanf:"body_limit_bytes" yaml:"body_limit_bytes"`
	// BodyReadTimeout is how long a client may take to send a request
	// body (408 beyond it). Bodies are read before a request takes any
	// slot (a synchronous simulation's, the CPU budget's), so a slow client
	// holds nothing another request needs.
	BodyReadTimeout time.Duration `koanf:"body_read_timeout" yaml:"body_read_timeout"`
	// ShutdownDrain is how long the server keeps its listener open after
	// SIGINT/SIGTERM with /readyz answering 503, so that load balancers
	// stop sending requests before it closes (a second signal skips it).
	ShutdownDrain time.Duration `koanf:"shutdown_drain" yaml:"shutdown_drain"`
	// ShutdownGrace is how long running requests and jobs may take to
	// finish once the listener has closed, before they are cancelled.
	ShutdownGrace time.Duration `koanf:"shutdown_grace" yaml:"shutdown_grace"`
	// CatalogDir adds gpus/*.yaml and models/*.yaml to the built-in catalog.
	CatalogDir string `koanf:"catalog_dir" yaml:"catalog_dir"`
	// ModelStoreDir, when set, persists models added with POST /v1/models
	// as <dir>/models/<id>.yaml and loads them at start.
	ModelStoreDir string `koanf:"model_store_dir" yaml:"model_store_dir"`
	// CalibrationStore is the file (a bbolt database) where calibrations
	// made with POST /v1/calibrations are kept across restarts; a relative
	// path is relative to the working directory. The file is opened (or
	// created) at start and locked while the server runs: a second server on
	// the same file fails to start. "" keeps calibrations in memory only.
	// LoadConfig defaults it to calibrations.db in the user's state
	// directory (StateDir), which the server creates if needed; a path
	// given must be in a directory that exists.
	CalibrationStore string `koanf:"calibration_store" yaml:"calibration_store"`
	// KernelDBDir, when set, is the directory whose subdirectories
	// scenarios and POST /v1/steptime may name as steptime.kernel_db (a
	// relative name, no ".."): kernel databases laid out like
	// AIConfigurator's perf database. "" refuses kernel_db over the API;
	// the built-in measurements are always at hand.
	KernelDBDir  string             `koanf:"kernel_db_dir" yaml:"kernel_db_dir"`
	Limits       LimitsConfig       `koanf:"limits" yaml:"limits"`
	Simulate     SimulateConfig     `koanf:"simulate" yaml:"simulate"`
	Calibrations CalibrationsConfig `koanf:"calibrations" yaml:"calibrations"`
	Models       ModelsConfig       `koanf:"models" yaml:"models"`
	Jobs         JobsConfig         `koanf:"jobs" yaml:"jobs"`
	Log          LogConfig          `koanf:"log" yaml:"log"`
}

// LimitsConfig bounds the process as a whole.
type LimitsConfig struct {
	// Simulations is the server's CPU budget: the most simulations that run
	// at once, synchronous calls and every job's together (a sweep or a plan
	// runs several; each takes a slot while it runs). Synchronous calls are
	// served before jobs. Default: the number of cores.
	Simulations int `koanf:"simulations" yaml:"simulations"`
	// TimeseriesPoints bounds the points of a report's time series
	// (report.timeseries: one per simulated second), in synchronous answers
	// and job results: a longer series is coarsened to one point per k
	// seconds, as a scrape every k seconds would see it (gauges at the end
	// of each window, rates averaged over it, totals as they stand), and
	// says so (the Headroom-Timeseries-Step-S header; the job's notes).
	TimeseriesPoints int `koanf:"timeseries_points" yaml:"timeseries_points"`
}

// SimulateConfig bounds the synchronous POST /v1/simulate.
type SimulateConfig struct {
	// MaxConcurrent is the most synchronous simulations (POST /v1/simulate
	// and synchronous POST /v1/calibrations) in flight, running or waiting
	// for a slot of limits.simulations; one more answers 429 with
	// Retry-After at once. Default: twice the number of cores.
	MaxConcurrent int `koanf:"max_concurrent" yaml:"max_concurrent"`
	// SyncMaxRequests is the most simulated requests a synchronous call may
	// run; larger scenarios get 422 and belong in a job.
	SyncMaxRequests int `koanf:"sync_max_requests" yaml:"sync_max_requests"`
	// SyncMaxTokens bounds the tokens (prompts and outputs, estimated
	// before the run) a synchronous call simulates: what its time grows
	// with, rejected requests included; larger scenarios get 422 and belong
	// in a job.
	SyncMaxTokens int64 `koanf:"sync_max_tokens" yaml:"sync_max_tokens"`
	// SyncTimeout is the wall-time limit of a synchronous call.
	SyncTimeout time.Duration `koanf:"sync_timeout" yaml:"sync_timeout"`
}

// CalibrationsConfig bounds POST /v1/calibrations.
type CalibrationsConfig struct {
	// UploadLimitBytes bounds the multipart body of POST /v1/calibrations
	// (413 beyond it), instead of body_limit_bytes.
	UploadLimitBytes int64 `koanf:"upload_limit_bytes" yaml:"upload_limit_bytes"`
	// SyncMaxRequests is the most measured requests a synchronous fit
	// replays; larger runs get 422 and belong in a job (?async=true).
	SyncMaxRequests int `koanf:"sync_max_requests" yaml:"sync_max_requests"`
	// SyncTimeout is the wall-time limit of a synchronous fit.
	SyncTimeout time.Duration `koanf:"sync_timeout" yaml:"sync_timeout"`
	// UploadBudgetBytes bounds the uploads held at once, synchronous and
	// asynchronous together: each reserves its size (its Content-Length,
	// else upload_limit_bytes) before its body is read and keeps it while
	// it is read, fitted, or queued as a job, held once (the imported run);
	// one that does not fit answers 429 with Retry-After.
	UploadBudgetBytes int64 `koanf:"upload_budget_bytes" yaml:"upload_budget_bytes"`
	// MaxStored is the most calibrations the store keeps (422 beyond:
	// DELETE one first).
	MaxStored int `koanf:"max_stored" yaml:"max_stored"`
}

// ModelsConfig bounds POST /v1/models.
type ModelsConfig struct {
	// MaxAdded is the most models the server holds beyond its catalog
	// (those of POST /v1/models and of the model store): 422 beyond it,
	// until DELETE /v1/models/{id} frees one; 0 turns POST /v1/models off.
	MaxAdded int `koanf:"max_added" yaml:"max_added"`
}

// JobsConfig sizes the job manager.
type JobsConfig struct {
	// Workers run jobs in parallel (default: the number of cores).
	Workers int `koanf:"workers" yaml:"workers"`
	// QueueSize bounds the jobs waiting for a worker (429 beyond it).
	QueueSize int `koanf:"queue_size" yaml:"queue_size"`
	// ResultTTL is how long a finished job is kept.
	ResultTTL time.Duration `koanf:"result_ttl" yaml:"result_ttl"`
	// MaxFinished bounds the finished jobs kept (oldest dropped first).
	MaxFinished int `koanf:"max_finished" yaml:"max_finished"`
	// MaxRequests bounds the simulated requests of each simulation a job
	// runs: a simulate job's run, each point of a sweep, each probe of a
	// search, each side of a comparison, a calibration's replay.
	MaxRequests int `koanf:"max_requests" yaml:"max_requests"`
	// MaxTokens bounds the tokens (prompts and outputs, estimated before it
	// runs) of each simulation a job runs, as max_requests bounds its
	// requests (a calibration: of one replay of the run).
	MaxTokens int64 `koanf:"max_tokens" yaml:"max_tokens"`
	// Timeout bounds the wall time of one job.
	Timeout time.Duration `koanf:"timeout" yaml:"timeout"`
	// MaxResultBytes bounds one job's result, kept encoded as compact JSON:
	// a larger one fails the job (422 result-too-large).
	MaxResultBytes int64 `koanf:"max_result_bytes" yaml:"max_result_bytes"`
	// MaxResultsBytes bounds the results kept together: to keep a new one
	// the oldest finished jobs are dropped (logged).
	MaxResultsBytes int64 `koanf:"max_results_bytes" yaml:"max_results_bytes"`
}

// LogConfig selects the log output.
type LogConfig struct {
	Level  string `koanf:"level" yaml:"level"`   // debug | info | warn | error
	Format string `koanf:"format" yaml:"format"` // text | json
}

// DefaultConfig is the built-in configuration, but for calibration_store,
// which LoadConfig takes from the environment (DefaultCalibrationStore):
// here it is "", calibrations in memory.
func DefaultConfig() Config {
	return Config{
		Listen:          "127.0.0.1:8080",
		BodyLimitBytes:  1 << 20,
		BodyReadTimeout: 10 * time.Second,
		ShutdownDrain:   5 * time.Second,
		ShutdownGrace:   30 * time.Second,
		Limits:          LimitsConfig{Simulations: runtime.NumCPU(), TimeseriesPoints: 50000},
		Simulate:        SimulateConfig{MaxConcurrent: 2 * runtime.NumCPU(), SyncMaxRequests: 20000, SyncMaxTokens: 500_000_000, SyncTimeout: 30 * time.Second},
		Calibrations:    CalibrationsConfig{UploadLimitBytes: 64 << 20, SyncMaxRequests: 1000, SyncTimeout: time.Minute, UploadBudgetBytes: 256 << 20, MaxStored: 1000},
		Models:          ModelsConfig{MaxAdded: 200},
		Jobs: JobsConfig{
			Workers: runtime.NumCPU(), QueueSize: 64, ResultTTL: time.Hour, MaxFinished: 1000,
			MaxRequests: 1000000, MaxTokens: 50_000_000_000, Timeout: time.Hour,
			MaxResultBytes: 64 << 20, MaxResultsBytes: 1 << 30,
		},
		Log: LogConfig{Level: "info", Format: "text"},
	}
}

// EnvPrefix starts every environment variable of the configuration.
const EnvPrefix = "HEADROOM_"

// EnvName is the environment variable that sets key: HEADROOM_ followed by
// the key in upper case, with "__" between a section and its key
// (jobs.queue_size is HEADROOM_JOBS__QUEUE_SIZE).
func EnvName(key string) string {
	return EnvPrefix + strings.ToUpper(strings.ReplaceAll(key, ".", "__"))
}

// envKey is the inverse of EnvName.
func envKey(name string) string {
	return strings.ReplaceAll(strings.ToLower(strings.TrimPrefix(name, EnvPrefix)), "__", ".")
}

// ConfigSources are the layers over the defaults, lowest first.
type ConfigSources struct {
	// File is a YAML file ("" for none).
	File string
	// Environ is the process environment as "NAME=value" entries; only
	// HEADROOM_* entries are read, and each must name a key.
	Environ []string
	// Flags are the values of the flags the user set, by key.
	Flags map[string]string
}

// ConfigKeys lists every configuration key, sorted.
func ConfigKeys() []string {
	var keys []string
	var walk func(t reflect.Type, prefix string)
	walk = func(t reflect.Type, prefix string) {
		for i := range t.NumField() {
			f := t.Field(i)
			k := prefix + f.Tag.Get("koanf")
			if f.Type.Kind() == reflect.Struct && f.Type != reflect.TypeFor[time.Duration]() {
				walk(f.Type, k+".")
				continue
			}
			keys = append(keys, k)
		}
	}
	walk(reflect.TypeFor[Config](), "")
	sort.Strings(keys)
	return keys
}

// LoadConfig merges the defaults, the file, the environment and the flags,
// in that order, and validates the result. Unknown keys in any layer are
// errors naming the layer and the key.
func LoadConfig(src ConfigSources) (Config, error) {
	k := koanf.New(".")
	defaults := defaultMap()
	defaults["calibration_store"] = DefaultCalibrationStore(src.Environ)
	if err := k.Load(confmap.Provider(defaults, "."), nil); err != nil {
		return Config{}, err
	}
	storeSet := false // by a layer above the defaults
	if src.File != "" {
		fk := koanf.New(".")
		if err := fk.Load(file.Provider(src.File), yaml.Parser()); err != nil {
			return Config{}, fmt.Errorf("config file %s: %w", src.File, err)
		}
		if err := checkKeys(fk.Keys(), func(key string) string { return "config file " + src.File + ": key " + key }); err != nil {
			return Config{}, err
		}
		if err := k.Merge(fk); err != nil {
			return Config{}, err
		}
		storeSet = fk.Exists("calibration_store")
	}
	ek := koanf.New(".")
	names := map[string]string{}
	err := ek.Load(env.Provider(".", env.Opt{
		Prefix:      EnvPrefix,
		EnvironFunc: func() []string { return src.Environ },
		TransformFunc: func(name, v string) (string, any) {
			key := envKey(name)
			names[key] = name
			return key, v
		},
	}), nil)
	if err != nil {
		return Config{}, fmt.Errorf("environment: %w", err)
	}
	if err := checkKeys(ek.Keys(), func(key string) string { return "environment: " + names[key] }); err != nil {
		return Config{}, err
	}
	if err := k.Merge(ek); err != nil {
		return Config{}, err
	}
	storeSet = storeSet || ek.Exists("calibration_store")
	flags := map[string]any{}
	for key, v := range src.Flags {
		flags[key] = v
	}
	_, inFlags := flags["calibration_store"]
	storeSet = storeSet || inFlags
	if err := checkKeys(slices.Sorted(maps.Keys(flags)), func(key string) string { return "flag for key " + key }); err != nil {
		return Config{}, err
	}
	if err := k.Load(confmap.Provider(flags, "."), nil); err != nil {
		return Config{}, err
	}
	var c Config
	if err := k.UnmarshalWithConf("", &c, koanf.UnmarshalConf{Tag: "koanf"}); err != nil {
		msg := err.Error()
		if _, after, ok := strings.Cut(msg, "error(s):"); ok {
			msg = strings.Join(strings.Fields(after), " ")
		}
		return Config{}, &ConfigError{Reason: "configuration: " + msg}
	}
	if err := c.Validate(); err != nil {
		return Config{}, err
	}
	if !storeSet && c.CalibrationStore == "" {
		return Config{}, &ConfigError{Key: "calibration_store", Reason: fmt.Sprintf(
			"calibration_store: no state directory to keep calibrations in (neither XDG_STATE_HOME nor HOME is set): set it to a file (%s, --calibration-store), or to \"\" to keep them in memory",
			EnvName("calibration_store"))}
	}
	return c, nil
}

// checkKeys reports the first key that is not a configuration key.
func checkKeys(keys []string, where func(string) string) error {
	known := ConfigKeys()
	for _, key := range keys {
		if _, ok := slices.BinarySearch(known, key); !ok {
			return &ConfigError{Key: key, Reason: where(key) + " is not a configuration key (known: " + strings.Join(known, ", ") + ")"}
		}
	}
	return nil
}

// ConfigError names a bad configuration key.
type ConfigError struct {
	Key    string
	Reason string
	// Err is the error behind the reason, when there is one.
	Err error
}

func (e *ConfigError) Error() string { return e.Reason }
func (e *ConfigError) Unwrap() error { return e.Err }

// defaultMap is DefaultConfig as a flat key → value map.
func defaultMap() map[string]any {
	out := map[string]any{}
	var walk func(v reflect.Value, prefix string)
	walk = func(v reflect.Value, prefix string) {
		t := v.Type()
		for i := range t.NumField() {
			f := t.Field(i)
			k := prefix + f.Tag.Get("koanf")
			if f.Type.Kind() == reflect.Struct {
				walk(v.Field(i), k+".")
				continue
			}
			out[k] = v.Field(i).Interface()
		}
	}
	walk(reflect.ValueOf(DefaultConfig()), "")
	return out
}

// MinAuthTokenLen is the shortest auth_token accepted.
const MinAuthTokenLen = 16

// loopback reports whether host (of a listen address) reaches this machine
// only: localhost or a loopback IP. "" and 0.0.0.0 listen everywhere.
func loopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Redacted is c with its secrets hidden, for printing.
func (c Config) Redacted() Config {
	if c.AuthToken != "" {
		c.AuthToken = "<redacted>"
	}
	return c
}

// Validate checks the values.
func (c Config) Validate() error {
	bad := func(key, reason string) error {
		return &ConfigError{Key: key, Reason: fmt.Sprintf("%s: %s (%s)", key, reason, EnvName(key))}
	}
	host, _, err := net.SplitHostPort(c.Listen)
	if err != nil {
		return bad("listen", fmt.Sprintf("%q is not host:port", c.Listen))
	}
	if c.AuthToken != "" && len(c.AuthToken) < MinAuthTokenLen {
		return bad("auth_token", fmt.Sprintf("must be at least %d characters", MinAuthTokenLen))
	}
	if c.AuthToken == "" && !c.AllowRemoteWithoutToken && !loopback(host) {
		return &ConfigError{Key: "listen", Reason: fmt.Sprintf(
			"listen: %s is not a loopback address and no auth_token is set: anyone who can reach it could use the server; set auth_token (%s), or allow_remote_without_token (%s, --allow-remote-without-token) behind a proxy that authenticates",
			c.Listen, EnvName("auth_token"), EnvName("allow_remote_without_token"))}
	}
	switch {
	case c.BodyLimitBytes < 1024:
		return bad("body_limit_bytes", "must be >= 1024")
	case c.ShutdownDrain < 0:
		return bad("shutdown_drain", "must be >= 0")
	case c.ShutdownGrace < 0:
		return bad("shutdown_grace", "must be >= 0")
	case c.Limits.Simulations < 1 || c.Limits.Simulations > 4096:
		return bad("limits.simulations", "must be in [1, 4096]")
	case c.Limits.TimeseriesPoints < 10:
		return bad("limits.timeseries_points", "must be >= 10")
	case c.Simulate.MaxConcurrent < 1 || c.Simulate.MaxConcurrent > 1<<16:
		return bad("simulate.max_concurrent", "must be in [1, 65536]")
	case c.Simulate.SyncMaxRequests < 1:
		return bad("simulate.sync_max_requests", "must be >= 1")
	case c.Simulate.SyncMaxTokens < 1:
		return bad("simulate.sync_max_tokens", "must be >= 1")
	case c.Simulate.SyncTimeout <= 0:
		return bad("simulate.sync_timeout", "must be > 0")
	case c.Calibrations.UploadLimitBytes < 1024:
		return bad("calibrations.upload_limit_bytes", "must be >= 1024")
	case c.Calibrations.SyncMaxRequests < 1:
		return bad("calibrations.sync_max_requests", "must be >= 1")
	case c.Calibrations.SyncTimeout <= 0:
		return bad("calibrations.sync_timeout", "must be > 0")
	case c.Calibrations.UploadBudgetBytes < c.Calibrations.UploadLimitBytes:
		return bad("calibrations.upload_budget_bytes", fmt.Sprintf("must be >= calibrations.upload_limit_bytes (%d): one upload must fit", c.Calibrations.UploadLimitBytes))
	case c.Calibrations.MaxStored < 1 || c.Calibrations.MaxStored > 1_000_000:
		return bad("calibrations.max_stored", "must be in [1, 1000000]")
	case c.BodyReadTimeout <= 0:
		return bad("body_read_timeout", "must be > 0")
	case c.Models.MaxAdded < 0 || c.Models.MaxAdded > 100000:
		return bad("models.max_added", "must be in [0, 100000]")
	case c.Jobs.Workers < 1 || c.Jobs.Workers > 1024:
		return bad("jobs.workers", "must be in [1, 1024]")
	case c.Jobs.QueueSize < 0 || c.Jobs.QueueSize > 1<<20:
		return bad("jobs.queue_size", "must be in [0, 1048576]")
	case c.Jobs.ResultTTL <= 0:
		return bad("jobs.result_ttl", "must be > 0")
	case c.Jobs.MaxFinished < 1:
		return bad("jobs.max_finished", "must be >= 1")
	case c.Jobs.MaxRequests < 1:
		return bad("jobs.max_requests", "must be >= 1")
	case c.Jobs.MaxTokens < 1:
		return bad("jobs.max_tokens", "must be >= 1")
	case c.Jobs.Timeout <= 0:
		return bad("jobs.timeout", "must be > 0")
	case c.Jobs.MaxResultBytes < 1024:
		return bad("jobs.max_result_bytes", "must be >= 1024")
	case c.Jobs.MaxResultsBytes < c.Jobs.MaxResultBytes:
		return bad("jobs.max_results_bytes", fmt.Sprintf("must be >= jobs.max_result_bytes (%d)", c.Jobs.MaxResultBytes))
	case !slices.Contains([]string{"debug", "info", "warn", "error"}, c.Log.Level):
		return bad("log.level", fmt.Sprintf("%q is not debug, info, warn or error", c.Log.Level))
	case !slices.Contains([]string{"text", "json"}, c.Log.Format):
		return bad("log.format", fmt.Sprintf("%q is not text or json", c.Log.Format))
	}
	return nil
}
