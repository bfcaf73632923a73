//go:build !full

package main

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
)

// The default build of headroom is slim: it leaves out what only `serve`
// (gin, swag, Prometheus, bbolt: the REST API) and --plot-dir and validate
// --plot (gonum/plot and its fonts) need, which is most of what a first `go run ./cmd/headroom`
// would otherwise compile. Those command lines run the full build
// (`go build -tags full`) instead: the binary HEADROOM_FULL_BINARY names,
// else a headroom-full beside this executable, else, inside the project's
// source tree, one built there on first use (kept in the user's cache
// directory and rebuilt by go when the sources change).
const fullBuild = false

var errNotInSlimBuild = errors.New("not in this build of headroom (it has no REST server and no charts): build it with `go build -tags full ./cmd/headroom`")

// runServe is the full build's; this one is not reached (run hands serve
// to the full build).
func runServe(context.Context, *env, []string) error { return errNotInSlimBuild }

// needsFull reports whether a command line needs the full build.
func needsFull(args []string) bool {
	if len(args) == 0 {
		return false
	}
	if args[0] == "serve" {
		return true
	}
	for _, a := range args[1:] {
		if a == "--" {
			break
		}
		name, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if strings.HasPrefix(a, "-") && (name == "plot-dir" || name == "plot" && args[0] == "validate") {
			return true
		}
	}
	return false
}

// runFull runs the command line with the full build and returns its exit
// code; it says what to do when there is none to run.
func runFull(e *env, args []string) int {
	bin, err := fullBinary(e)
	if err != nil {
		fmt.Fprintf(e.stderr, "headroom %s: %v\n", args[0], err)
		return exitFailure
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = e.stdin, e.stdout, e.stderr
	// A terminal's Ctrl-C reaches the child too (same process group);
	// a SIGTERM sent to this process alone is passed on.
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(e.stderr, "headroom %s: %v\n", args[0], err)
		return exitFailure
	}
	stop := forwardTerm(cmd.Process)
	err = cmd.Wait()
	stop()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &ee) && ee.ExitCode() >= 0:
		return ee.ExitCode()
	case errors.As(err, &ee):
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return 128 + int(ws.Signal()) // as a shell reports a signalled command
		}
	}
	fmt.Fprintf(e.stderr, "headroom %s: %v\n", args[0], err)
	return exitFailure
}

// fullBinary finds or builds the full build.
func fullBinary(e *env) (string, error) {
	if p := e.getenv("HEADROOM_FULL_BINARY"); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("HEADROOM_FULL_BINARY: %w", err)
		}
		return p, nil
	}
	exe := "headroom-full"
	if runtime.GOOS == "windows" {
		exe += ".exe"
	}
	if self, err := os.Executable(); err == nil {
		if p := filepath.Join(filepath.Dir(self), exe); fileExists(p) {
			return p, nil
		}
	}
	root, ok := sourceRoot()
	goBin, err := exec.LookPath("go")
	if !ok || err != nil {
		return "", fmt.Errorf("this is the slim build of headroom, without the REST server and charts, and no full build is at hand: " +
			"build one with `go build -tags full -o headroom ./cmd/headroom` in the source tree (or `go install -tags full github.com/headroom-sim/headroom/cmd/headroom@latest`), " +
			"or name one with HEADROOM_FULL_BINARY")
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	sum := sha256.Sum256([]byte(root))
	out := filepath.Join(cache, "headroom", "full-"+hex.EncodeToString(sum[:6]), exe)
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return "", err
	}
	if !fileExists(out) {
		fmt.Fprintln(e.stderr, "headroom: building the full binary for serve and --plot-dir (first use; `go build -tags full ./cmd/headroom`) …")
	}
	build := exec.Command(goBin, "build", "-tags", "full", "-o", out, "./cmd/headroom")
	build.Dir, build.Stdout, build.Stderr = root, e.stderr, e.stderr
	if err := build.Run(); err != nil {
		return "", fmt.Errorf("building the full binary (go build -tags full ./cmd/headroom in %s): %w", root, err)
	}
	return out, nil
}

// sourceRoot is the project's module root at or above the working
// directory, if there is one.
func sourceRoot() (string, bool) {
	dir, err := os.Getwd()
	if err != nil {
		return "", false
	}
	for {
		if isHeadroomModule(filepath.Join(dir, "go.mod")) && fileExists(filepath.Join(dir, "cmd", "headroom", "main.go")) {
			return dir, true
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", false
		}
		dir = parent
	}
}

func isHeadroomModule(gomod string) bool {
	f, err := os.Open(gomod)
	if err != nil {
		return false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if line := strings.TrimSpace(sc.Text()); strings.HasPrefix(line, "module ") {
			return strings.TrimSpace(strings.TrimPrefix(line, "module ")) == "github.com/headroom-sim/headroom"
		}
	}
	return false
}

func fileExists(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir()
}

// forwardTerm passes a SIGTERM this process receives to p until stop is
// called.
func forwardTerm(p *os.Process) (stop func()) {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		select {
		case s := <-ch:
			_ = p.Signal(s)
		case <-done:
		}
	}()
	return func() { signal.Stop(ch); close(done) }
}
