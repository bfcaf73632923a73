package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"syscall"
)

// The REST server is a binary of its own, headroom-server (cmd/headroom-server):
// it links gin, swag, Prometheus and bbolt, which more than double the
// first build of headroom on empty caches. `headroom serve` runs it with
// the command line's flags: the binary HEADROOM_SERVER_BINARY names, else a
// headroom-server beside this executable (go build -o bin/ ./cmd/... puts
// both there), else one on PATH. It compiles nothing: without one it says
// how to build it.

// serverExe is the server binary's file name.
func serverExe() string {
	if runtime.GOOS == "windows" {
		return "headroom-server.exe"
	}
	return "headroom-server"
}

// errNoServer says where the server comes from.
var errNoServer = errors.New("the REST server is the headroom-server binary, and none is at hand: " +
	"run it with `go run ./cmd/headroom-server` in the source tree, or build both binaries with `go build -o bin/ ./cmd/...` " +
	"(then bin/headroom serve finds bin/headroom-server), or name one with HEADROOM_SERVER_BINARY")

// runServe runs headroom-server with args and returns its exit code.
func runServe(_ context.Context, e *env, args []string) int {
	bin, err := serverBinary(e)
	if err != nil {
		fmt.Fprintf(e.stderr, "headroom serve: %v\n", err)
		return exitFailure
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = e.stdin, e.stdout, e.stderr
	// A terminal's Ctrl-C reaches the child too (same process group);
	// a SIGTERM sent to this process alone is passed on.
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(e.stderr, "headroom serve: %v\n", err)
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
	fmt.Fprintf(e.stderr, "headroom serve: %v\n", err)
	return exitFailure
}

// serverBinary finds headroom-server.
func serverBinary(e *env) (string, error) {
	if p := e.getenv("HEADROOM_SERVER_BINARY"); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("HEADROOM_SERVER_BINARY: %w", err)
		}
		return p, nil
	}
	if self, err := os.Executable(); err == nil {
		if p := filepath.Join(filepath.Dir(self), serverExe()); fileExists(p) {
			return p, nil
		}
	}
	if p, err := exec.LookPath(serverExe()); err == nil {
		return p, nil
	}
	return "", errNoServer
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
