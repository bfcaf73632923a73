package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/headroom-sim/headroom/internal/testkit/doccmd"
)

// repoRoot is the module root, two levels above this package.
var repoRoot = doccmd.Root("../..")

// TestDocServerCommands runs the server commands the README and docs/
// show, block by block: headroom-server (or headroom serve) lines start
// the server (on a free loopback port instead of the documented address,
// with a state directory of the test's own), --print-config lines run to
// completion, and curl lines are sent to the running server (one with the
// defaults when the block starts none), each expecting the status its
// comment names (2xx otherwise). JOB_ID and CAL_ID stand for the last job
// and calibration the block created; every job is waited for. With -short
// only README.md's commands run.
func TestDocServerCommands(t *testing.T) {
	blocks := doccmd.All(t, repoRoot)
	t.Chdir(doccmd.WorkDir(t, repoRoot))
	state := t.TempDir()
	ran := 0
	for _, blk := range blocks {
		if testing.Short() && blk.File != "README.md" {
			continue
		}
		h := &docServer{t: t, state: state}
		for _, c := range blk.Commands {
			if kind, _ := doccmd.Classify(c.Args); kind != doccmd.KindServer || c.Export {
				continue
			}
			ran++
			_, rest := doccmd.Classify(c.Args)
			if c.Args[0] == "curl" {
				h.curl(c, rest)
				continue
			}
			h.serve(c, rest)
		}
		h.stop()
	}
	if ran < 10 && !testing.Short() {
		t.Errorf("ran %d server commands: fewer than the documents show", ran)
	}
}

// docServer is the server one block talks to.
type docServer struct {
	t      *testing.T
	state  string
	addr   string
	cancel context.CancelFunc
	done   chan int
	where  string
	env    map[string]string
	job    string // the last job created
	cal    string // the last calibration created
}

func (h *docServer) environment(c doccmd.Command) []string {
	env := []string{"HOME=" + h.state, "XDG_STATE_HOME=" + h.state}
	for k, v := range c.Env {
		env = append(env, k+"="+v)
	}
	return env
}

// serve runs one headroom-server command line: to completion for
// --print-config, -h and version; else as the block's server.
func (h *docServer) serve(c doccmd.Command, args []string) {
	t := h.t
	env := h.environment(c)
	old := environ
	environ = func() []string { return env }
	defer func() { environ = old }()
	getenv := func(k string) string { return c.Env[k] }
	if slices.Contains(args, "--print-config") || slices.Contains(args, "-h") || (len(args) > 0 && args[0] == "version") {
		var out, errb bytes.Buffer
		if code := run(context.Background(), args, getenv, &out, &errb); code != c.ExitCode() {
			t.Errorf("%s: exit %d, want %d: %s", c.Where(), code, c.ExitCode(), errb.String())
		}
		return
	}
	h.stop()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	h.addr = ln.Addr().String()
	ln.Close()
	args = withListen(args, h.addr)
	ctx, cancel := context.WithCancel(context.Background())
	h.cancel, h.done, h.where, h.env = cancel, make(chan int, 1), c.Where(), c.Env
	var errb bytes.Buffer // read only once the server has returned
	go func() { h.done <- run(ctx, args, getenv, io.Discard, &errb) }()
	deadline := time.Now().Add(30 * time.Second)
	for {
		if resp, err := http.Get("http://" + h.addr + "/healthz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		select {
		case code := <-h.done:
			h.cancel = nil
			t.Fatalf("%s: the server exited (%d) before it answered: %s", c.Where(), code, errb.String())
		default:
		}
		if time.Now().After(deadline) {
			cancel()
			code := <-h.done
			h.cancel = nil
			t.Fatalf("%s: the server did not answer /healthz within 30 s (exit %d): %s", c.Where(), code, errb.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// withListen replaces (or adds) --listen with addr.
func withListen(args []string, addr string) []string {
	out := []string{}
	for i := 0; i < len(args); i++ {
		switch a := args[i]; {
		case a == "--listen" || a == "-listen":
			i++
		case strings.HasPrefix(a, "--listen=") || strings.HasPrefix(a, "-listen="):
		default:
			out = append(out, a)
		}
	}
	return append(out, "--listen", addr)
}

// stop ends the block's server, which must exit 0.
func (h *docServer) stop() {
	if h.cancel == nil {
		return
	}
	h.cancel()
	select {
	case code := <-h.done:
		if code != 0 {
			h.t.Errorf("%s: the server exited %d when stopped", h.where, code)
		}
	case <-time.After(60 * time.Second):
		h.t.Errorf("%s: the server did not stop", h.where)
	}
	h.cancel = nil
}

// curl sends one documented curl line to the block's server.
func (h *docServer) curl(c doccmd.Command, args []string) {
	t := h.t
	if h.cancel == nil {
		h.serve(doccmd.Command{File: c.File, Line: c.Line, Text: "headroom-server (defaults, for the curl lines below)", Env: c.Env}, nil)
	}
	req, out, err := h.request(args)
	if err != nil {
		t.Errorf("%s: %v", c.Where(), err)
		return
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Errorf("%s: %v", c.Where(), err)
		return
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	want := c.HTTPStatus()
	if (want != 0 && resp.StatusCode != want) || (want == 0 && resp.StatusCode/100 != 2) {
		t.Errorf("%s: status %d, want %s: %s", c.Where(), resp.StatusCode, statusWant(want), truncate(body))
		return
	}
	if out != "" {
		if err := os.WriteFile(out, body, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var v struct {
		ID    string `json:"id"`
		Kind  string `json:"kind"`
		State string `json:"state"`
	}
	_ = json.Unmarshal(body, &v)
	switch path := req.URL.Path; {
	case req.Method == http.MethodPost && path == "/v1/jobs", resp.StatusCode == http.StatusAccepted && path == "/v1/calibrations":
		h.job = v.ID
		h.waitJob(c, v.ID)
	case req.Method == http.MethodPost && path == "/v1/calibrations":
		h.cal = v.ID
	}
}

func statusWant(s int) string {
	if s == 0 {
		return "2xx"
	}
	return fmt.Sprint(s)
}

// request builds the HTTP request a curl command line sends: -X, -d,
// --data-binary (@FILE), -H, -F (name=value, name=@FILE), -o FILE and the
// URL, whose host:port is the block's server.
func (h *docServer) request(args []string) (*http.Request, string, error) {
	var method, url, out string
	var headers [][2]string
	var body io.Reader
	var form [][2]string
	hasData := false
	for i := 0; i < len(args); i++ {
		a := args[i]
		val := func() (string, error) {
			if i+1 >= len(args) {
				return "", fmt.Errorf("%s needs a value", a)
			}
			i++
			return h.placeholders(args[i]), nil
		}
		switch a {
		case "-X", "-d", "--data-binary", "-H", "-F", "-o":
			v, err := val()
			if err != nil {
				return nil, "", err
			}
			switch a {
			case "-X":
				method = v
			case "-d", "--data-binary":
				if strings.HasPrefix(v, "@") {
					b, err := os.ReadFile(v[1:])
					if err != nil {
						return nil, "", err
					}
					v = string(b)
				}
				body, hasData = strings.NewReader(v), true
			case "-H":
				k, hv, ok := strings.Cut(v, ":")
				if !ok {
					return nil, "", fmt.Errorf("-H %q: want Name: value", v)
				}
				headers = append(headers, [2]string{k, strings.TrimSpace(hv)})
			case "-F":
				k, fv, ok := strings.Cut(v, "=")
				if !ok {
					return nil, "", fmt.Errorf("-F %q: want name=value", v)
				}
				form = append(form, [2]string{k, fv})
			case "-o":
				out = v
			}
		default:
			if strings.HasPrefix(a, "-") {
				return nil, "", fmt.Errorf("curl flag %s is not one the documents may use", a)
			}
			url = h.placeholders(a)
		}
	}
	if url == "" {
		return nil, "", fmt.Errorf("no URL")
	}
	url = strings.TrimPrefix(strings.TrimPrefix(url, "http://"), "https://")
	_, rest, _ := strings.Cut(url, "/")
	url = "http://" + h.addr + "/" + rest
	contentType := ""
	if hasData {
		contentType = "application/x-www-form-urlencoded" // what curl -d sends
	}
	if len(form) > 0 {
		var b bytes.Buffer
		mw := multipart.NewWriter(&b)
		for _, f := range form {
			if strings.HasPrefix(f[1], "@") {
				data, err := os.ReadFile(f[1][1:])
				if err != nil {
					return nil, "", err
				}
				w, err := mw.CreateFormFile(f[0], filepath.Base(f[1][1:]))
				if err != nil {
					return nil, "", err
				}
				w.Write(data)
				continue
			}
			mw.WriteField(f[0], f[1])
		}
		mw.Close()
		body, contentType = &b, mw.FormDataContentType()
	}
	if method == "" {
		method = http.MethodGet
		if body != nil {
			method = http.MethodPost
		}
	}
	req, err := http.NewRequest(method, url, body)
	if err != nil {
		return nil, "", err
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	for _, hv := range headers {
		req.Header.Set(hv[0], hv[1])
	}
	return req, out, nil
}

// placeholders replaces JOB_ID and CAL_ID with the block's last ones.
func (h *docServer) placeholders(s string) string {
	return strings.NewReplacer("JOB_ID", h.job, "CAL_ID", h.cal).Replace(s)
}

// waitJob polls a job until it ends; it must succeed.
func (h *docServer) waitJob(c doccmd.Command, id string) {
	deadline := time.Now().Add(5 * time.Minute)
	for time.Now().Before(deadline) {
		req, _ := http.NewRequest(http.MethodGet, "http://"+h.addr+"/v1/jobs/"+id, nil)
		if tok := h.env["HEADROOM_AUTH_TOKEN"]; tok != "" {
			req.Header.Set("Authorization", "Bearer "+tok)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			h.t.Errorf("%s: job %s: %v", c.Where(), id, err)
			return
		}
		var v struct {
			State string `json:"state"`
			Error any    `json:"error"`
		}
		json.NewDecoder(resp.Body).Decode(&v)
		resp.Body.Close()
		switch v.State {
		case "succeeded":
			return
		case "failed", "cancelled":
			h.t.Errorf("%s: job %s %s: %v", c.Where(), id, v.State, v.Error)
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	h.t.Errorf("%s: job %s did not end within 5 minutes", c.Where(), id)
}

func truncate(b []byte) string {
	if len(b) > 600 {
		return string(b[:600]) + "…"
	}
	return string(b)
}
