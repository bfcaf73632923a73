// Command headroom is the CLI of the Headroom capacity planner: catalogs,
// capacity (memory and KV cache), simulation, step-time explanations,
// validation against measured runs, calibration and planning over the same
// core, with SVG charts. `headroom serve` runs the REST API, which is the
// headroom-server binary (cmd/headroom-server; see server.go).
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/headroom-sim/headroom/cmd/internal/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Getenv, os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// Exit codes.
const (
	exitOK         = cli.ExitOK
	exitFailure    = cli.ExitFailure    // the command could not do its job
	exitUsage      = cli.ExitUsage      // bad input: a flag, a file, a field
	exitInfeasible = cli.ExitInfeasible // the configuration cannot be served
)

// env is the process environment, injected for tests.
type env struct {
	getenv func(string) string
	stdin  io.Reader
	stdout io.Writer
	stderr io.Writer
}

type command struct {
	name    string
	summary string
	run     func(ctx context.Context, e *env, args []string) error
}

func commands() []command {
	return []command{
		{"capacity", "memory split, KV-cache blocks and max concurrency of a model on a GPU", runCapacity},
		{"catalog", "list, show or import GPUs and models", runCatalog},
		{"simulate", "simulate serving a workload and report latency, throughput and KV usage", runSimulate},
		{"steptime", "explain one engine step: every kernel's predicted time, what bounds it, its source and the measured value", runStepTime},
		{"serve", "run the REST API server (the headroom-server binary, with these flags) on 127.0.0.1:8080", nil},
		{"inspect", "show what Headroom reads from a benchmark result file or run folder", runInspect},
		{"validate", "replay measured benchmark runs and compare predictions with measurements", runValidate},
		{"calibrate", "fit the step-time model to a measured benchmark run and evaluate it on held-out runs", runCalibrate},
		{"maxload", "find the highest load a configuration sustains within its SLA", runMaxLoad},
		{"sweep", "simulate a grid of what-ifs over any scenario fields, in parallel", runSweep},
		{"plan", "rank the cheapest GPU × TP × replica clusters that meet an SLA", runPlan},
		{"curve", "throughput–latency staircase with the knee marked", runCurve},
		{"compare", "run two scenarios on the same workload side by side", runCompare},
	}
}

func run(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) int {
	e := &env{getenv: getenv, stdin: stdin, stdout: stdout, stderr: stderr}
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		usage(stdout)
		return exitOK
	}
	if args[0] == "version" || args[0] == "--version" {
		fmt.Fprintln(stdout, "headroom", version())
		return exitOK
	}
	if args[0] == "serve" {
		return runServe(ctx, e, args[1:])
	}
	for _, c := range commands() {
		if c.name == args[0] {
			err := c.run(ctx, e, args[1:])
			return report(stderr, "headroom "+c.name, err)
		}
	}
	fmt.Fprintf(stderr, "headroom: unknown command %q (run 'headroom help')\n", args[0])
	return exitUsage
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "Headroom: capacity planning and simulation for LLM inference serving.")
	fmt.Fprintln(w, "\nUsage: headroom <command> [flags]   (headroom <command> -h for its flags)")
	fmt.Fprintln(w, "\nCommands:")
	for _, c := range commands() {
		fmt.Fprintf(w, "  %-10s %s\n", c.name, c.summary)
	}
	fmt.Fprintln(w, "  version    print the version")
}
