package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"syscall"

	"go.yaml.in/yaml/v3"

	"github.com/headroom-sim/headroom/api"
	"github.com/headroom-sim/headroom/cmd/internal/cli"
)

// environ is the process environment, replaced in tests.
var environ = os.Environ

// serveFlags maps each flag of `headroom serve` to its configuration key.
var serveFlags = []struct{ flag, key, usage string }{
	{"listen", "listen", "address to listen on (host:port); beyond loopback it needs --auth-token or --allow-remote-without-token"},
	{"auth-token", "auth_token", "bearer token every request but /healthz, /readyz and the web planner's pages must carry (prefer the environment variable: flags are visible to other users)"},
	{"allow-remote-without-token", "allow_remote_without_token", "listen beyond loopback without a token (behind an authenticating proxy)"},
	{"body-limit-bytes", "body_limit_bytes", "largest request body in bytes (413 beyond)"},
	{"body-read-timeout", "body_read_timeout", "time a client may take to send a request body (408 beyond); bodies are read before a request takes a slot"},
	{"shutdown-drain", "shutdown_drain", "time the listener stays open on SIGINT/SIGTERM with /readyz answering 503 (a second signal skips it)"},
	{"shutdown-grace", "shutdown_grace", "time running requests and jobs get to finish once the listener has closed"},
	{"catalog-dir", "catalog_dir", "directory of extra catalog entries (gpus/*.yaml, models/*.yaml)"},
	{"model-store-dir", "model_store_dir", "directory where POST /v1/models persists models (models/<id>.yaml), loaded at start"},
	{"max-added-models", "models.max_added", "most models POST /v1/models may add (0 turns it off); DELETE /v1/models/{id} frees one"},
	{"kernel-db-dir", "kernel_db_dir", "directory whose subdirectories (kernel databases laid out like AIConfigurator's perf database) scenarios and POST /v1/steptime may name as steptime.kernel_db (\"\" refuses them; the built-in tables need none)"},
	{"calibration-store", "calibration_store", "bbolt file keeping POST /v1/calibrations across restarts, created and locked at start (\"\" keeps them in memory; default: calibrations.db in $XDG_STATE_HOME/headroom, else ~/.local/state/headroom)"},
	{"calibration-upload-limit-bytes", "calibrations.upload_limit_bytes", "largest upload of a run or trace (POST /v1/calibrations, /v1/inspect, /v1/validate, /v1/rate-profile) in bytes (413 beyond)"},
	{"calibration-sync-max-requests", "calibrations.sync_max_requests", "most measured requests a synchronous calibration replays (422 beyond: use ?async=true)"},
	{"calibration-sync-timeout", "calibrations.sync_timeout", "wall-time limit of a synchronous calibration"},
	{"calibration-upload-budget-bytes", "calibrations.upload_budget_bytes", "bytes of uploads held at once, read, fitted or queued (429 beyond)"},
	{"max-calibrations", "calibrations.max_stored", "most calibrations the store keeps (422 beyond: DELETE one first)"},
	{"simulations", "limits.simulations", "CPU budget: the most simulations running at once, synchronous calls and jobs together (default: the number of cores)"},
	{"timeseries-points", "limits.timeseries_points", "most points of a report's time series; longer ones are coarsened to one point per k seconds"},
	{"sync-max-concurrent", "simulate.max_concurrent", "most synchronous simulations in flight before the next is refused with 429 (default: twice the cores)"},
	{"sync-max-requests", "simulate.sync_max_requests", "most simulated requests of a synchronous POST /v1/simulate"},
	{"sync-max-tokens", "simulate.sync_max_tokens", "most simulated tokens (prompts and outputs, estimated) of a synchronous POST /v1/simulate"},
	{"sync-timeout", "simulate.sync_timeout", "wall-time limit of a synchronous POST /v1/simulate"},
	{"job-workers", "jobs.workers", "jobs run in parallel (default: the number of cores)"},
	{"job-queue-size", "jobs.queue_size", "jobs waiting for a worker before POST /v1/jobs answers 429"},
	{"job-result-ttl", "jobs.result_ttl", "how long finished jobs are kept"},
	{"job-max-finished", "jobs.max_finished", "most finished jobs kept"},
	{"job-max-requests", "jobs.max_requests", "most simulated requests of one job"},
	{"job-max-tokens", "jobs.max_tokens", "most simulated tokens (prompts and outputs, estimated) of each simulation of a job"},
	{"job-timeout", "jobs.timeout", "wall-time limit of one job"},
	{"job-max-result-bytes", "jobs.max_result_bytes", "largest result of one job, kept as compact JSON (the job fails beyond it)"},
	{"job-max-results-bytes", "jobs.max_results_bytes", "largest size of all results kept together (the oldest finished jobs are dropped to make room)"},
	{"log-level", "log.level", "debug|info|warn|error"},
	{"log-format", "log.format", "text|json"},
}

func runServe(ctx context.Context, e *env, args []string) error {
	fs := cli.NewFlagSet("headroom-server")
	configFile := fs.String("config", "", "YAML configuration file (keys as --print-config shows them)")
	printConfig := fs.Bool("print-config", false, "print the effective configuration as YAML and exit")
	def := api.DefaultConfig()
	def.CalibrationStore = api.DefaultCalibrationStore(environ())
	defaults := configValues(def)
	for _, f := range serveFlags {
		usage := fmt.Sprintf("%s (%s, env %s; default %s)", f.usage, f.key, api.EnvName(f.key), defaults[f.key])
		if defaults[f.key] == "false" {
			fs.Var(new(boolText), f.flag, usage)
			continue
		}
		fs.String(f.flag, "", usage)
	}
	pos, err := cli.ParseFlags(fs, args, e.stdout)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return cli.Usagef("unexpected argument %q", pos[0])
	}
	keyOf := map[string]string{}
	for _, f := range serveFlags {
		keyOf[f.flag] = f.key
	}
	set := map[string]string{}
	fs.Visit(func(f *flag.Flag) {
		if key, ok := keyOf[f.Name]; ok {
			set[key] = f.Value.String()
		}
	})
	cfg, err := api.LoadConfig(api.ConfigSources{File: *configFile, Environ: environ(), Flags: set})
	if err != nil {
		return cli.Usagef("%v", err)
	}
	if *printConfig {
		return writeConfig(e.stdout, cfg.Redacted())
	}
	if err := makeStateDir(cfg, environ()); err != nil {
		return err
	}
	log, err := newLogger(e.stderr, cfg.Log)
	if err != nil {
		return cli.Usagef("%v", err)
	}
	cat, err := cli.LoadCatalog(e.getenv, cfg.CatalogDir)
	if err != nil {
		return err
	}
	dom, err := api.NewDomain(cat, cfg.ModelStoreDir, log)
	if err != nil {
		return cli.Usagef("--model-store-dir: %v", err)
	}
	srv, err := api.New(cfg, api.Options{Engine: dom, Logger: log, Abort: secondSignal()})
	if err != nil {
		return err
	}
	// Read the built-in kernel tables while the server starts listening,
	// so that the first request naming a measured GPU does not wait.
	go func() {
		if err := dom.PreloadKernels(); err != nil {
			log.Warn("preloading the kernel tables", "err", err)
		}
	}()
	return srv.ListenAndServe(ctx)
}

// makeStateDir creates the user's state directory when the calibration
// store is its default file there; a store the user names must be in a
// directory that exists (the server says so at start).
func makeStateDir(cfg api.Config, environ []string) error {
	def := api.DefaultCalibrationStore(environ)
	if def == "" || cfg.CalibrationStore != def {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(def), 0o700); err != nil {
		return fmt.Errorf("calibration_store: creating the state directory: %w", err)
	}
	return nil
}

// secondSignal is closed by the second SIGINT or SIGTERM (the first one
// ends the command's context and starts the shutdown): the impatient user's way to skip the
// drain and the grace period.
func secondSignal() <-chan struct{} {
	abort := make(chan struct{})
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		<-sigs
		<-sigs
		signal.Stop(sigs)
		close(abort)
	}()
	return abort
}

// boolText is a boolean flag (--allow-remote-without-token, or =false)
// kept as the text the configuration parses.
type boolText string

func (b *boolText) String() string { return string(*b) }
func (b *boolText) Set(v string) error {
	if _, err := strconv.ParseBool(v); err != nil {
		return fmt.Errorf("%q is not true or false", v)
	}
	*b = boolText(v)
	return nil
}
func (b *boolText) IsBoolFlag() bool { return true }

// writeConfig prints cfg as the YAML a --config file holds.
func writeConfig(w io.Writer, cfg api.Config) error {
	enc := yaml.NewEncoder(w)
	enc.SetIndent(2)
	if err := enc.Encode(cfg); err != nil {
		return err
	}
	return enc.Close()
}

// configValues renders each key's value as text (durations as 30s).
func configValues(cfg api.Config) map[string]string {
	var raw map[string]any
	b, _ := yaml.Marshal(cfg)
	_ = yaml.Unmarshal(b, &raw)
	out := map[string]string{}
	var walk func(prefix string, m map[string]any)
	walk = func(prefix string, m map[string]any) {
		for k, v := range m {
			if sub, ok := v.(map[string]any); ok {
				walk(prefix+k+".", sub)
				continue
			}
			out[prefix+k] = fmt.Sprint(v)
		}
	}
	walk("", raw)
	for _, k := range api.ConfigKeys() {
		if _, ok := out[k]; !ok {
			out[k] = ""
		}
	}
	return out
}

// newLogger makes the server's logger on w.
func newLogger(w io.Writer, c api.LogConfig) (*slog.Logger, error) {
	var level slog.Level
	if err := level.UnmarshalText([]byte(c.Level)); err != nil {
		return nil, fmt.Errorf("log.level: %w", err)
	}
	opts := &slog.HandlerOptions{Level: level}
	switch c.Format {
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	case "text":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	}
	return nil, errors.New("log.format: want text or json")
}
