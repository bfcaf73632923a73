package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"
)

func envOf(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

// TestFlags: HEADROOM_FIT_HOST and HEADROOM_FIT_EVALS keep their meaning
// as the flags' defaults, the flags override them, and bad values are
// refused naming the flag or variable.
func TestFlags(t *testing.T) {
	for _, c := range []struct {
		name  string
		args  []string
		env   map[string]string
		mode  string
		evals int
		only  string
		err   string
	}{
		{name: "defaults", mode: "joint", evals: 40, only: "docs,host,kernels"},
		{name: "HEADROOM_FIT_HOST=1", env: map[string]string{"HEADROOM_FIT_HOST": "1"}, mode: "all", evals: 40, only: "docs,host,kernels"},
		{name: "HEADROOM_FIT_HOST=joint", env: map[string]string{"HEADROOM_FIT_HOST": "joint", "HEADROOM_FIT_EVALS": "3"}, mode: "joint", evals: 3, only: "docs,host,kernels"},
		{name: "flags over env", args: []string{"--host", "joint", "--host-evals", "2", "--only", "host"}, env: map[string]string{"HEADROOM_FIT_HOST": "1", "HEADROOM_FIT_EVALS": "9"}, mode: "joint", evals: 2, only: "host"},
		{name: "HEADROOM_FIT_HOST=families", env: map[string]string{"HEADROOM_FIT_HOST": "families"}, mode: "families", evals: 40, only: "docs,host,kernels"},
		{name: "rescore", args: []string{"--host", "rescore", "--only", "host"}, mode: "rescore", evals: 40, only: "host"},
		{name: "bad env host", env: map[string]string{"HEADROOM_FIT_HOST": "yes"}, err: "HEADROOM_FIT_HOST"},
		{name: "bad env evals", env: map[string]string{"HEADROOM_FIT_EVALS": "0"}, err: "HEADROOM_FIT_EVALS"},
		{name: "bad host", args: []string{"--host", "each"}, err: "--host"},
		{name: "bad evals", args: []string{"--host-evals", "0"}, err: "--host-evals"},
		{name: "bad step", args: []string{"--only", "kernels,hosts"}, err: `no step "hosts"`},
		{name: "argument", args: []string{"kernels"}, err: "unexpected argument"},
	} {
		t.Run(c.name, func(t *testing.T) {
			o, err := parseFlags(c.args, envOf(c.env), io.Discard)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("err %v, want it to name %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var only []string
			for _, s := range []string{"docs", "host", "kernels"} {
				if o.only[s] {
					only = append(only, s)
				}
			}
			if o.hostMode != c.mode || o.hostEvals != c.evals || strings.Join(only, ",") != c.only {
				t.Errorf("host %q, evals %d, steps %v; want %q, %d, %s", o.hostMode, o.hostEvals, only, c.mode, c.evals, c.only)
			}
		})
	}
}

const sumA = "ca978112ca1bbdcafac231b39a23dc4da786eff8147c4e72b9807785afee48bb" // sha256("a")

func TestParseManifest(t *testing.T) {
	good := "# comment\n\n" + sumA + " 1 measured/a.csv\n"
	es, err := parseManifest(strings.NewReader(good), "m")
	if err != nil || len(es) != 1 || es[0] != (manifestEntry{"measured/a.csv", 1, sumA}) {
		t.Fatalf("%+v, %v", es, err)
	}
	for _, c := range []struct{ body, want string }{
		{"", "lists no file"},
		{sumA + " 1\n", "fields"},
		{"abc 1 measured/a\n", "64 hex digits"},
		{sumA + " -1 measured/a\n", "byte count"},
		{sumA + " 1 ../a\n", "not relative"},
		{sumA + " 1 /etc/a\n", "not relative"},
		{sumA + " 1 measured/a\n" + sumA + " 1 measured/a\n", "listed twice"},
	} {
		if _, err := parseManifest(strings.NewReader(c.body), "m"); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: err %v, want %q", c.body, err, c.want)
		}
	}
}

func FuzzParseManifest(f *testing.F) {
	f.Add("# c\n" + sumA + " 1 measured/a\n")
	f.Add(sumA + " 99999999999999999999 x\n")
	f.Fuzz(func(t *testing.T, body string) {
		es, err := parseManifest(strings.NewReader(body), "m")
		if err != nil {
			return
		}
		var b bytes.Buffer
		if err := formatManifest(&b, es); err != nil {
			t.Fatal(err)
		}
		again, err := parseManifest(&b, "m")
		if err != nil || len(again) != len(es) {
			t.Fatalf("a formatted manifest does not read back: %v (%d of %d)", err, len(again), len(es))
		}
	})
}

// TestVerifyData: matching data pass; a changed, missing or unlisted file
// is refused, naming it.
func TestVerifyData(t *testing.T) {
	data := fstest.MapFS{"measured/a.csv": {Data: []byte("a")}, "other/x": {Data: []byte("x")}}
	want, err := scanData(data, manifestRoots)
	if err != nil || len(want) != 1 || want[0].SHA256 != sumA {
		t.Fatalf("%+v, %v", want, err)
	}
	if err := verifyData(data, want, manifestRoots); err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]struct {
		fs   fstest.MapFS
		want string
	}{
		"changed":  {fstest.MapFS{"measured/a.csv": {Data: []byte("b")}}, "measured/a.csv: sha256"},
		"grown":    {fstest.MapFS{"measured/a.csv": {Data: []byte("ab")}}, "measured/a.csv: 2 bytes"},
		"missing":  {fstest.MapFS{"measured/b.csv": {Data: []byte("a")}}, "measured/a.csv: missing"},
		"unlisted": {fstest.MapFS{"measured/a.csv": {Data: []byte("a")}, "measured/new.json": {Data: []byte("{}")}}, "measured/new.json: not in the manifest"},
	} {
		if err := verifyData(c.fs, want, manifestRoots); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err %v, want %q", name, err, c.want)
		}
	}
}

// TestExternalSteps: without the reference data the host and docs steps
// are skipped, saying so (exit 0); with data that differ from the
// committed manifest the tool refuses, naming the file, before fitting.
func TestExternalSteps(t *testing.T) {
	var out, errb bytes.Buffer
	code := run(context.Background(), []string{"--check", "--only", "host,docs", "--data", filepath.Join(t.TempDir(), "absent")}, envOf(nil), &out, &errb)
	if code != exitOK || !strings.Contains(out.String(), "host, docs: skipped: no reference data at") {
		t.Fatalf("absent data: exit %d, stdout %q, stderr %q", code, out.String(), errb.String())
	}
	data := t.TempDir()
	if err := os.MkdirAll(filepath.Join(data, "measured"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(data, "measured", "stray.csv"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	errb.Reset()
	code = run(context.Background(), []string{"--check", "--only", "host", "--data", data}, envOf(nil), &out, &errb)
	if code != exitStale || !strings.Contains(errb.String(), "measured/stray.csv: not in the manifest") || !strings.Contains(errb.String(), "measured/aiconfigurator-silicon/silicon_vllm_agg.csv: missing") {
		t.Fatalf("differing data: exit %d, stderr %q", code, errb.String())
	}
}

// TestCommittedManifest: the committed manifest reads and lists the
// closed-loop table the host fit needs.
func TestCommittedManifest(t *testing.T) {
	root, err := repoRoot()
	if err != nil {
		t.Fatal(err)
	}
	es, err := readManifest(root)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, e := range es {
		found = found || e.Path == "measured/aiconfigurator-silicon/silicon_vllm_agg.csv"
	}
	if !found {
		t.Errorf("%s does not list the closed-loop table", manifestPath)
	}
}
