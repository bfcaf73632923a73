// Command headroom-server is Headroom's REST API server: the catalogs,
// capacity, simulation, step-time explanations, planning jobs, calibrations
// and their charts over HTTP (package api), configured from defaults, a
// YAML file, HEADROOM_* variables and flags (serve.go). It is a binary of
// its own so that the CLI (cmd/headroom) builds fast on a fresh machine
// without the server's libraries; `headroom serve` runs it.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"

	"github.com/headroom-sim/headroom/cmd/internal/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// env is the process environment, injected for tests.
type env struct {
	getenv func(string) string
	stdout io.Writer
	stderr io.Writer
}

// run serves until ctx ends; `serve` as the first argument is accepted
// and dropped, so that headroom-server serve … reads as headroom serve ….
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == "serve" {
		args = args[1:]
	}
	if len(args) > 0 && (args[0] == "version" || args[0] == "--version") {
		fmt.Fprintln(stdout, "headroom-server", version())
		return cli.ExitOK
	}
	e := &env{getenv: getenv, stdout: stdout, stderr: stderr}
	return cli.Report(stderr, "headroom-server", runServe(ctx, e, args))
}

// version reports the module version, or "devel" for a source build.
func version() string {
	if info, ok := debug.ReadBuildInfo(); ok && info.Main.Version != "" {
		return info.Main.Version
	}
	return "devel"
}
