// Command headroom-fit regenerates every fitted default and generated
// document section of the repository, and with --check verifies that the
// committed ones are what it would write:
//
//   - kernels: the default profiles of the measured GPUs
//     (sim/steptime/profiles/<system>.json) and the generated section of
//     docs/steptime.md, fitted by internal/study/kernelfit to the kernel
//     tables of catalogs/kernels (in the repository);
//   - host: the default host costs (sim/steptime/profiles/host.json) and
//     their table of fits per family
//     (internal/study/calibrate/testdata/host-families.json), fitted by
//     calibrate.FitHostDefaults to the measured runs of the reference data;
//   - docs: docs/accuracy.md (with docs/figures/accuracy-silicon.svg) and
//     docs/calibration.md, by docs/gen-accuracy.sh and
//     docs/gen-calibration.sh on the reference data.
//
// The reference data (../shared/data beside the checkout, or
// HEADROOM_SHARED_DATA) are outside the repository: the host and docs
// steps first verify them against testdata/shared-data.manifest (size and
// SHA-256 of every file) and refuse on a difference, naming the files;
// without the data they are skipped, saying so.
//
// It is a command of its own, not a `headroom` subcommand: it writes into
// the source tree, reads data the product must not depend on, and runs
// the repository's generator scripts, none of which belongs in the binary
// users install. Run it from the repository root:
//
//	go run ./cmd/headroom-fit                 # refit everything and rewrite the artifacts
//	go run ./cmd/headroom-fit --check         # verify them (what .ci/run does)
//	go run ./cmd/headroom-fit --only kernels  # one step
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// Exit codes.
const (
	exitOK    = 0
	exitStale = 1 // a step failed, or --check found an artifact that differs
	exitUsage = 2
)

// steps in the order they run: the host fit replays runs on the kernel
// profiles, the docs on both.
var steps = []string{"kernels", "host", "docs"}

type options struct {
	check         bool
	only          map[string]bool
	hostMode      string // calibrate.HostJoint, HostAll or HostFamiliesOnly
	hostEvals     int
	data          string
	writeManifest bool
}

// tool is one run: the repository root, the reference data directory (""
// when absent) and where it reports.
type tool struct {
	opt    options
	root   string
	data   string
	stdout io.Writer
	stderr io.Writer
	stale  []string // artifacts --check found different
}

var errUsage = errors.New("usage")

func parseFlags(args []string, getenv func(string) string, stderr io.Writer) (options, error) {
	fset := flag.NewFlagSet("headroom-fit", flag.ContinueOnError)
	fset.SetOutput(stderr)
	fset.Usage = func() {
		fmt.Fprintln(stderr, "usage: go run ./cmd/headroom-fit [--check] [--only kernels,host,docs] [--host joint|all|families|rescore] [--host-evals N] [--data DIR] [--write-manifest]")
		fset.PrintDefaults()
	}
	var o options
	fset.BoolVar(&o.check, "check", false, "verify the committed artifacts instead of writing them (the host step re-scores the committed fits rather than searching again)")
	only := fset.String("only", strings.Join(steps, ","), "the steps to run, comma-separated: "+strings.Join(steps, ", "))
	hostDefault, evalsDefault := "joint", 40
	switch v := getenv("HEADROOM_FIT_HOST"); v {
	case "1":
		hostDefault = "all"
	case "", "joint", "families":
		if v != "" {
			hostDefault = v
		}
	default:
		return o, fmt.Errorf("HEADROOM_FIT_HOST=%q: want 1 (every fit), joint or families", v)
	}
	if v := getenv("HEADROOM_FIT_EVALS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			return o, fmt.Errorf("HEADROOM_FIT_EVALS=%q: want a positive count of evaluations", v)
		}
		evalsDefault = n
	}
	host := fset.String("host", hostDefault, "host fits: joint (every family together: the defaults; HEADROOM_FIT_HOST=joint), all (each family alone too, for the table; HEADROOM_FIT_HOST=1) families (each family alone from the committed host.json, which stays; HEADROOM_FIT_HOST=families) or rescore (no search: the committed table re-scored with today's code, host.json kept)")
	fset.IntVar(&o.hostEvals, "host-evals", evalsDefault, "evaluations of every family each host fit may take, at most (HEADROOM_FIT_EVALS); one is about 8 s on two cores")
	fset.StringVar(&o.data, "data", "", "the reference data directory (default HEADROOM_SHARED_DATA, else ../shared/data beside the checkout)")
	fset.BoolVar(&o.writeManifest, "write-manifest", false, "rewrite "+manifestPath+" from the reference data and stop (after a deliberate change of the data)")
	if err := fset.Parse(args); err != nil {
		return o, errUsage
	}
	if fset.NArg() > 0 {
		return o, fmt.Errorf("unexpected argument %q", fset.Arg(0))
	}
	switch *host {
	case "joint", "all", "families", "rescore":
		o.hostMode = *host
	default:
		return o, fmt.Errorf("--host %q: want joint, all, families or rescore", *host)
	}
	if o.hostEvals <= 0 {
		return o, fmt.Errorf("--host-evals %d: want at least 1", o.hostEvals)
	}
	o.only = map[string]bool{}
	for _, s := range strings.Split(*only, ",") {
		s = strings.TrimSpace(s)
		if !contains(steps, s) {
			return o, fmt.Errorf("--only: no step %q (want some of %s)", s, strings.Join(steps, ", "))
		}
		o.only[s] = true
	}
	return o, nil
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	opt, err := parseFlags(args, getenv, stderr)
	if errors.Is(err, errUsage) {
		return exitUsage
	}
	if err != nil {
		fmt.Fprintln(stderr, "headroom-fit:", err)
		return exitUsage
	}
	root, err := repoRoot()
	if err != nil {
		fmt.Fprintln(stderr, "headroom-fit:", err)
		return exitUsage
	}
	t := &tool{opt: opt, root: root, data: dataDir(root, opt.data, getenv), stdout: stdout, stderr: stderr}
	if opt.writeManifest {
		if t.data == "" {
			fmt.Fprintln(stderr, "headroom-fit: --write-manifest: no reference data at", dataLocation(root, opt.data, getenv))
			return exitStale
		}
		n, err := writeManifest(root, os.DirFS(t.data))
		if err != nil {
			fmt.Fprintln(stderr, "headroom-fit:", err)
			return exitStale
		}
		fmt.Fprintf(stdout, "wrote %s: %d files of %s\n", manifestPath, n, t.data)
		return exitOK
	}
	if err := t.runSteps(ctx, getenv); err != nil {
		fmt.Fprintln(stderr, "headroom-fit:", err)
		return exitStale
	}
	if len(t.stale) > 0 {
		fmt.Fprintf(stderr, "headroom-fit --check: %d artifacts differ from what the fit writes:\n  %s\nrun go run ./cmd/headroom-fit (or --only the step) and commit the result\n", len(t.stale), strings.Join(t.stale, "\n  "))
		return exitStale
	}
	if opt.check {
		fmt.Fprintln(stdout, "headroom-fit --check: every artifact checked is up to date")
	}
	return exitOK
}

func (t *tool) runSteps(ctx context.Context, getenv func(string) string) error {
	external := t.opt.only["host"] || t.opt.only["docs"]
	if t.opt.only["kernels"] {
		changed, err := t.timed("kernels", func() (bool, error) { return t.kernels() })
		if err != nil {
			return err
		}
		if changed && external && !t.opt.check {
			// The host fit and the docs replay runs on the kernel
			// profiles this binary embeds: continue in a build of the
			// profiles just written.
			fmt.Fprintln(t.stderr, "kernels: profiles changed, continuing in a fresh build")
			return t.rerun(ctx, "host", "docs")
		}
	}
	if !external {
		return nil
	}
	if t.opt.only["host"] {
		// docs/host-costs.md's table is the committed host-families.json's,
		// data or not.
		if _, err := t.timed("host-doc", func() (bool, error) { return t.hostDoc(nil) }); err != nil {
			return err
		}
	}
	if t.data == "" {
		var skipped []string
		for _, s := range []string{"host", "docs"} {
			if t.opt.only[s] {
				skipped = append(skipped, s)
			}
		}
		fmt.Fprintf(t.stdout, "%s: skipped: no reference data at %s (../shared/data beside the checkout, or HEADROOM_SHARED_DATA)\n", strings.Join(skipped, ", "), dataLocation(t.root, t.opt.data, getenv))
		return nil
	}
	if _, err := t.timed("manifest", func() (bool, error) { return false, t.verifyManifest() }); err != nil {
		return err
	}
	if t.opt.only["host"] {
		if _, err := t.timed("host", func() (bool, error) { return t.host(ctx) }); err != nil {
			return err
		}
	}
	if t.opt.only["docs"] {
		if _, err := t.timed("docs", func() (bool, error) { return t.docs(ctx) }); err != nil {
			return err
		}
	}
	return nil
}

// timed runs one step and reports its wall time.
func (t *tool) timed(name string, f func() (bool, error)) (bool, error) {
	start := time.Now()
	changed, err := f()
	if err != nil {
		return false, fmt.Errorf("%s: %w", name, err)
	}
	fmt.Fprintf(t.stderr, "%s: done in %.1f s\n", name, time.Since(start).Seconds())
	return changed, nil
}

func (t *tool) verifyManifest() error {
	m, err := readManifest(t.root)
	if err != nil {
		return err
	}
	if err := verifyData(os.DirFS(t.data), m, manifestRoots); err != nil {
		return err
	}
	fmt.Fprintf(t.stdout, "manifest: %d files of %s match %s\n", len(m), t.data, manifestPath)
	return nil
}

// settle writes the artifacts that differ from the committed files, or
// with --check records them as stale; it says whether any differed.
func (t *tool) settle(step string, arts []artifact) (bool, error) {
	changed := false
	for _, a := range arts {
		p := filepath.Join(t.root, filepath.FromSlash(a.path))
		cur, err := os.ReadFile(p)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return false, err
		}
		if err == nil && string(cur) == string(a.data) {
			continue
		}
		changed = true
		if t.opt.check {
			t.stale = append(t.stale, a.path+" ("+step+")")
			continue
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return false, err
		}
		if err := os.WriteFile(p, a.data, 0o644); err != nil {
			return false, err
		}
		fmt.Fprintf(t.stdout, "%s: wrote %s\n", step, a.path)
	}
	if !changed {
		fmt.Fprintf(t.stdout, "%s: %d files up to date\n", step, len(arts))
	}
	return changed, nil
}

// artifact is a file the tool writes, its path relative to the root.
type artifact struct {
	path string
	data []byte
}

// repoRoot is the module root at or above the working directory.
func repoRoot() (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for dir := wd; ; dir = filepath.Dir(dir) {
		b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && strings.Contains(string(b), "module github.com/headroom-sim/headroom\n") {
			return dir, nil
		}
		if filepath.Dir(dir) == dir {
			return "", fmt.Errorf("run it inside the Headroom repository: no go.mod of github.com/headroom-sim/headroom at or above %s", wd)
		}
	}
}

// dataLocation is where the reference data are expected: --data, else
// HEADROOM_SHARED_DATA, else ../shared/data beside the root.
func dataLocation(root, flagDir string, getenv func(string) string) string {
	if flagDir != "" {
		return flagDir
	}
	if d := getenv("HEADROOM_SHARED_DATA"); d != "" {
		return d
	}
	return filepath.Join(filepath.Dir(root), "shared", "data")
}

// dataDir is dataLocation when it is a directory, else "".
func dataDir(root, flagDir string, getenv func(string) string) string {
	d := dataLocation(root, flagDir, getenv)
	if st, err := os.Stat(d); err == nil && st.IsDir() {
		if abs, err := filepath.Abs(d); err == nil {
			return abs
		}
		return d
	}
	return ""
}
