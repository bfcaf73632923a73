package doccmd

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Kinds of documented commands: which test runs them.
const (
	KindHeadroom  = "headroom"  // cmd/headroom's TestDocCommands runs it in-process
	KindServer    = "server"    // headroom-server, headroom serve, curl: cmd/headroom-server's TestDocServerCommands
	KindToolchain = "toolchain" // go build, go test …: dry-run with go's -n
	KindScript    = "script"    // a script of this repository (.ci/run, docs/gen-*.sh): checked with bash -n
	KindExternal  = "external"  // another project's tool (ExternalTools): not run
)

// ExternalTools are the programs documented commands may call that this
// repository does not build, with why no test runs them.
var ExternalTools = map[string]string{
	"promtool":   "Prometheus's tool (docs/prometheus.md): not installed where the tests run",
	"prometheus": "the Prometheus server (docs/prometheus.md): not installed where the tests run",
}

// Classify says which test runs a command, and its arguments after the
// program ("" when no test does).
func Classify(args []string) (kind string, rest []string) {
	if len(args) == 0 {
		return "", nil
	}
	switch prog := args[0]; {
	case prog == "headroom" || prog == "./headroom" || prog == "bin/headroom":
		if len(args) > 1 && args[1] == "serve" {
			return KindServer, args[2:]
		}
		return KindHeadroom, args[1:]
	case prog == "headroom-server" || prog == "./headroom-server" || prog == "bin/headroom-server" || prog == "curl":
		return KindServer, args[1:]
	case prog == "go" && len(args) > 2 && args[1] == "run" && args[2] == "./cmd/headroom":
		if len(args) > 3 && args[3] == "serve" {
			return KindServer, args[4:]
		}
		return KindHeadroom, args[3:]
	case prog == "go" && len(args) > 2 && args[1] == "run" && args[2] == "./cmd/headroom-server":
		return KindServer, args[3:]
	case prog == "go":
		return KindToolchain, args[1:]
	case ExternalTools[prog] != "":
		return KindExternal, args[1:]
	case strings.HasPrefix(prog, ".ci/") || strings.HasPrefix(prog, "docs/") && strings.HasSuffix(prog, ".sh"):
		return KindScript, args[1:]
	}
	return "", nil
}

// Root is the absolute path of the repository root rel names from a test
// package's directory ("../.." from cmd/headroom): absolute, because the
// documents' tests change the working directory.
func Root(rel string) string {
	p, err := filepath.Abs(rel)
	if err != nil {
		panic(err)
	}
	return p
}

// All reads every sh block of the Markdown files below root.
func All(t testing.TB, root string) []Block {
	t.Helper()
	files, err := Documents(root)
	if err != nil {
		t.Fatal(err)
	}
	var out []Block
	for _, f := range files {
		b, err := Read(root, f)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, b...)
	}
	if len(out) < 20 {
		t.Fatalf("only %d sh blocks in %d documents: is %s the repository root?", len(out), len(files), root)
	}
	return out
}

// WorkDir is a scratch directory whose entries link to root's top-level
// ones, so that documented paths (examples/…, testdata/…) resolve while
// what the commands write (plots/, run.om …) stays out of the tree.
func WorkDir(t testing.TB, root string) string {
	t.Helper()
	dir := t.TempDir()
	ents, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), ".") {
			continue
		}
		if err := os.Symlink(filepath.Join(root, e.Name()), filepath.Join(dir, e.Name())); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}
