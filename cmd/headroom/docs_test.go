package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/headroom-sim/headroom/internal/testkit/doccmd"
)

// repoRoot is the module root, two levels above this package.
var repoRoot = doccmd.Root("../..")

// TestDocCommands runs every headroom command the README and the documents
// under docs/ show, checks its exit code (0 unless the line's comment
// names another) and, where the document shows the output, that the
// output is what it shows (-update rewrites the shown output). go
// commands are checked with go's -n dry run, and the tests their -run and
// -bench patterns name must exist. With -short only README.md's commands
// run.
func TestDocCommands(t *testing.T) {
	blocks := doccmd.All(t, repoRoot)
	work := doccmd.WorkDir(t, repoRoot)
	t.Chdir(work)
	var reps []doccmd.Replacement
	counts := map[string]int{}
	for _, blk := range blocks {
		for _, c := range blk.Commands {
			if c.Export {
				continue
			}
			kind, rest := doccmd.Classify(c.Args)
			counts[kind]++
			switch kind {
			case "":
				t.Errorf("%s: not a command any test runs (headroom, headroom-server, curl, go, a repository script, or one of doccmd.ExternalTools)", c.Where())
			case doccmd.KindHeadroom:
				if testing.Short() && blk.File != "README.md" {
					continue
				}
				out := runDocCommand(t, c, rest)
				if blk.Output == nil {
					continue
				}
				if *update {
					reps = append(reps, doccmd.Replacement{Output: blk.Output, Lines: blk.Output.Rewrite(out)})
				} else if ok, why := blk.Output.Match(out); !ok {
					t.Errorf("%s: the output shown at %s:%d is not the command's (%s; -update rewrites it):\n%s", c.Where(), blk.File, blk.Output.Start, why, out)
				}
			case doccmd.KindToolchain:
				if !testing.Short() {
					checkGoCommand(t, c, rest)
				}
			case doccmd.KindScript:
				// Scripts run the whole CI or regenerate documents from the
				// reference data: a test checks that they exist and parse.
				if out, err := exec.Command("bash", "-n", filepath.Join(repoRoot, c.Args[0])).CombinedOutput(); err != nil {
					t.Errorf("%s: bash -n: %v\n%s", c.Where(), err, out)
				}
			}
		}
	}
	if len(reps) > 0 {
		if err := doccmd.Apply(repoRoot, reps); err != nil {
			t.Fatal(err)
		}
	}
	if counts[doccmd.KindHeadroom] < 40 || counts[doccmd.KindServer] < 10 {
		t.Errorf("documented commands by kind %v: fewer than expected", counts)
	}
}

// runDocCommand runs one headroom command line in-process and returns its
// output (stdout, then stderr).
func runDocCommand(t *testing.T, c doccmd.Command, args []string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	getenv := func(k string) string { return c.Env[k] }
	var out, errb bytes.Buffer
	start := time.Now()
	code := run(ctx, args, getenv, strings.NewReader(""), &out, &errb)
	if d := time.Since(start); d > 20*time.Second {
		t.Logf("%s: %.1f s", c.Where(), d.Seconds())
	}
	if want := c.ExitCode(); code != want {
		t.Errorf("%s: exit %d, want %d\nstderr: %s", c.Where(), code, want, errb.String())
	}
	return out.String() + errb.String()
}

// goValueFlags are the go command's flags that take a value.
var goValueFlags = map[string]bool{
	"run": true, "bench": true, "count": true, "cpu": true, "benchtime": true, "timeout": true, "tags": true,
	"p": true, "parallel": true, "fuzz": true, "fuzztime": true, "o": true, "coverprofile": true,
	"cpuprofile": true, "memprofile": true, "skip": true,
}

// checkGoCommand dry-runs a documented go command (go VERB -n …) from the
// repository root, and checks that its -run and -bench patterns match
// tests of the packages it names.
func checkGoCommand(t *testing.T, c doccmd.Command, args []string) {
	t.Helper()
	if len(args) == 0 {
		t.Errorf("%s: no go verb", c.Where())
		return
	}
	verb := args[0]
	switch verb {
	case "build", "test", "vet", "install", "generate", "run":
	default:
		t.Errorf("%s: go %s is not a verb the documents may show", c.Where(), verb)
		return
	}
	dry := append([]string{verb, "-n"}, args[1:]...)
	for i, a := range dry {
		if a == "-o" && i+1 < len(dry) {
			dry[i+1] = t.TempDir() + "/" // build into a scratch directory, not the tree
		}
	}
	cmd := exec.Command("go", dry...)
	cmd.Dir = repoRoot
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("%s: go %s: %v\n%s", c.Where(), strings.Join(dry, " "), err, lastLines(out, 10))
	}
	if verb != "test" {
		return
	}
	var pkgs []string
	patterns := map[string]string{}
	for i := 1; i < len(args); i++ {
		a := args[i]
		if !strings.HasPrefix(a, "-") {
			pkgs = append(pkgs, a)
			continue
		}
		name, v, hasV := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if goValueFlags[name] && !hasV && i+1 < len(args) {
			v, i = args[i+1], i+1
		}
		if name == "run" || name == "bench" {
			patterns[name] = v
		}
	}
	for flag, pat := range patterns {
		if pat == "^$" {
			continue
		}
		re, err := regexp.Compile(strings.Split(pat, "/")[0])
		if err != nil {
			t.Errorf("%s: -%s %q: %v", c.Where(), flag, pat, err)
			continue
		}
		prefixes := []string{"Test", "Example", "Fuzz"}
		if flag == "bench" {
			prefixes = []string{"Benchmark"}
		}
		for _, p := range pkgs {
			if strings.Contains(p, "...") {
				continue
			}
			if names := testNames(t, filepath.Join(repoRoot, p), prefixes); !anyMatch(re, names) {
				t.Errorf("%s: -%s %q matches none of the %d tests of %s", c.Where(), flag, pat, len(names), p)
			}
		}
	}
}

var testFuncRE = regexp.MustCompile(`(?m)^func ((?:Test|Benchmark|Example|Fuzz)\w*)\(`)

// testNames lists the test functions of a package directory with one of
// the prefixes.
func testNames(t *testing.T, dir string, prefixes []string) []string {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dir, "*_test.go"))
	var out []string
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range testFuncRE.FindAllStringSubmatch(string(b), -1) {
			for _, p := range prefixes {
				if strings.HasPrefix(m[1], p) {
					out = append(out, m[1])
				}
			}
		}
	}
	return out
}

func anyMatch(re *regexp.Regexp, names []string) bool {
	for _, n := range names {
		if re.MatchString(n) {
			return true
		}
	}
	return false
}

func lastLines(b []byte, n int) string {
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// TestDocExternalToolsAreUsed: every tool listed as not run is still
// shown somewhere (the list does not outlive the documents).
func TestDocExternalToolsAreUsed(t *testing.T) {
	seen := map[string]bool{}
	for _, blk := range doccmd.All(t, repoRoot) {
		for _, c := range blk.Commands {
			if len(c.Args) > 0 {
				seen[c.Args[0]] = true
			}
		}
	}
	for tool := range doccmd.ExternalTools {
		if !seen[tool] {
			t.Errorf("doccmd.ExternalTools lists %s, which no document shows", tool)
		}
	}
}

var mdLinkRE = regexp.MustCompile(`\]\(([^)#\s]+)(#[^)]*)?\)`)

// TestDocLinksResolve: every relative link of the Markdown documents names
// a file or directory of the repository.
func TestDocLinksResolve(t *testing.T) {
	files, err := doccmd.Documents(repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, f := range files {
		b, err := os.ReadFile(filepath.Join(repoRoot, f))
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range mdLinkRE.FindAllStringSubmatch(string(b), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			n++
			if _, err := os.Stat(filepath.Join(repoRoot, filepath.Dir(f), target)); err != nil {
				t.Errorf("%s links to %s, which is not there", f, target)
			}
		}
	}
	if n < 30 {
		t.Errorf("found %d relative links: fewer than the documents have", n)
	}
}
