package measured

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/headroom-sim/headroom/internal/testkit/refdata"
)

// TestFixtureSources holds each testdata tree to its SOURCES file: every data
// file has a well-formed line saying where it came from (a real file's
// repository, path, commit and license, or what a constructed one follows
// and why it is not real), every line names a file that is there, and,
// where the reference data is present, every real fixture that says it is
// a copy, an excerpt or a line subset of a reference file is one.
func TestFixtureSources(t *testing.T) {
	for _, c := range []struct {
		name, dir string
		notData   func(p string, d fs.DirEntry) bool
	}{
		{"testdata", "testdata", func(p string, d fs.DirEntry) bool { return p == "golden" }},
		{"project testdata", projectData, func(p string, d fs.DirEntry) bool { return p == "shared-data.manifest" }},
	} {
		t.Run(c.name, func(t *testing.T) {
			tree := os.DirFS(c.dir)
			b, err := fs.ReadFile(tree, "SOURCES")
			if err != nil {
				t.Fatal(err)
			}
			lines, errs := parseSources(b)
			errs = append(errs, checkListed(tree, lines, c.notData)...)
			for _, err := range errs {
				t.Errorf("%s/SOURCES: %v", c.dir, err)
			}
			if len(lines) == 0 {
				t.Fatalf("%s/SOURCES lists no file", c.dir)
			}
			t.Run("reference data", func(t *testing.T) {
				dir := refdata.Dir()
				if dir == "" {
					t.Skip("reference data (../shared/data beside the checkout, or HEADROOM_SHARED_DATA) not found: skipping the comparison")
				}
				n, errs := checkReference(tree, os.DirFS(dir), lines)
				for _, err := range errs {
					t.Errorf("%s/SOURCES: %v", c.dir, err)
				}
				if n == 0 {
					t.Errorf("%s/SOURCES: no line names a reference file to compare", c.dir)
				}
			})
		})
	}
}

// sourceLine is one line of a SOURCES file: the fixture's path, its kind
// ("real" or "constructed"), the kind's fixed fields and the optional
// key=value fields after them.
type sourceLine struct {
	num   int
	path  string
	kind  string
	fixed []string
	opts  map[string]string
}

var (
	// sourceFixed is the number of fields a line of each kind has before
	// its optional ones: path, kind, repository, path in it, commit,
	// license; or path, kind, what it follows, why it is not real.
	sourceFixed = map[string]int{"real": 6, "constructed": 4}
	// sourceOpts are the optional keys and the kinds that may carry them.
	sourceOpts = map[string][]string{
		"copy-of": {"real"}, "lines-of": {"real"}, "excerpt-of": {"real"},
		"header-of": {"real", "constructed"}, "note": {"real", "constructed"},
	}
	sourceRepo   = regexp.MustCompile(`^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$`)
	sourceCommit = regexp.MustCompile(`^commit ([0-9a-f]{7,40}|unknown)$`)
)

// parseSources reads a SOURCES file: comment (#) and blank lines aside,
// one tab-separated line a fixture.
func parseSources(b []byte) ([]sourceLine, []error) {
	var lines []sourceLine
	var errs []error
	seen := map[string]int{}
	for i, text := range strings.Split(string(b), "\n") {
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		l, err := parseSourceLine(i+1, text)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if first, dup := seen[l.path]; dup {
			errs = append(errs, fmt.Errorf("line %d: %s is listed again (first on line %d)", l.num, l.path, first))
			continue
		}
		seen[l.path] = l.num
		lines = append(lines, l)
	}
	return lines, errs
}

func parseSourceLine(num int, text string) (sourceLine, error) {
	f := strings.Split(text, "\t")
	l := sourceLine{num: num, path: f[0], opts: map[string]string{}}
	bad := func(format string, a ...any) (sourceLine, error) {
		return sourceLine{}, fmt.Errorf("line %d (%s): %s", num, f[0], fmt.Sprintf(format, a...))
	}
	if !fs.ValidPath(l.path) || l.path == "." {
		return bad("the path must be relative to the SOURCES folder, slash-separated, without . or ..")
	}
	if len(f) < 2 {
		return bad("no kind: want real or constructed after a tab")
	}
	l.kind = f[1]
	n, ok := sourceFixed[l.kind]
	if !ok {
		return bad("kind %q: want real or constructed", l.kind)
	}
	if len(f) < n {
		return bad("%d fields: a %s line has at least %d", len(f), l.kind, n)
	}
	l.fixed = f[2:n]
	for j, v := range l.fixed {
		if strings.TrimSpace(v) == "" {
			return bad("field %d is empty", j+3)
		}
		if k, _, ok := strings.Cut(v, "="); ok && sourceOpts[k] != nil {
			return bad("field %d is the optional %s=: a %s line has %d fixed fields first", j+3, k, l.kind, n)
		}
	}
	if l.kind == "real" {
		switch {
		case !sourceRepo.MatchString(l.fixed[0]):
			return bad("repository %q: want owner/name", l.fixed[0])
		case !sourceCommit.MatchString(l.fixed[2]):
			return bad("%q: want \"commit <hex hash>\" or \"commit unknown\"", l.fixed[2])
		case !strings.HasPrefix(l.fixed[3], "license ") || len(l.fixed[3]) <= len("license "):
			return bad("%q: want \"license <id> (<where its text is>)\"", l.fixed[3])
		}
	}
	for j, v := range f[n:] {
		k, val, _ := strings.Cut(v, "=")
		kinds, known := sourceOpts[k]
		switch {
		case !known:
			return bad("field %d %q: want copy-of=, lines-of=, excerpt-of=, header-of= or note=", n+j+1, v)
		case val == "":
			return bad("field %d: %s= is empty", n+j+1, k)
		case !slices.Contains(kinds, l.kind):
			return bad("field %d: %s= is for a %s file", n+j+1, k, strings.Join(kinds, " or "))
		case l.opts[k] != "":
			return bad("field %d: %s= given twice", n+j+1, k)
		}
		l.opts[k] = val
	}
	return l, nil
}

// checkListed: every data file of tree has a line and every line names a
// data file. README.md, LICENSE*, SOURCES and what notData says (a folder
// prunes its files) are not data files.
func checkListed(tree fs.FS, lines []sourceLine, notData func(p string, d fs.DirEntry) bool) []error {
	listed := map[string]bool{}
	for _, l := range lines {
		listed[l.path] = true
	}
	var errs []error
	err := fs.WalkDir(tree, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == "." {
			return err
		}
		name := d.Name()
		skip := notData(p, d) || p == "SOURCES" || name == "README.md" || strings.HasPrefix(name, "LICENSE")
		switch {
		case skip && d.IsDir():
			return fs.SkipDir
		case skip || d.IsDir():
		case !listed[p]:
			errs = append(errs, fmt.Errorf("%s has no line: say where it came from", p))
		default:
			delete(listed, p)
		}
		return nil
	})
	if err != nil {
		errs = append(errs, err)
	}
	for _, l := range lines {
		if listed[l.path] {
			errs = append(errs, fmt.Errorf("line %d names %s, which is not a data file here", l.num, l.path))
		}
	}
	return errs
}

// checkReference compares each line's fixture with the reference file its
// copy-of, lines-of, header-of or excerpt-of names, and says how many it
// compared.
func checkReference(tree, ref fs.FS, lines []sourceLine) (int, []error) {
	var errs []error
	n := 0
	for _, l := range lines {
		for _, k := range []string{"copy-of", "lines-of", "header-of", "excerpt-of"} {
			p := l.opts[k]
			if p == "" {
				continue
			}
			n++
			if err := compareReference(tree, ref, l.path, k, p); err != nil {
				errs = append(errs, fmt.Errorf("line %d: %s %s=%s: %v", l.num, l.path, k, p, err))
			}
		}
	}
	return n, errs
}

func compareReference(tree, ref fs.FS, path, key, refPath string) error {
	theirs, err := fs.ReadFile(ref, refPath)
	if err != nil {
		return fmt.Errorf("not in the reference data: %v", err)
	}
	if key == "excerpt-of" {
		return nil
	}
	mine, err := fs.ReadFile(tree, path)
	if err != nil {
		return err
	}
	switch key {
	case "copy-of":
		if !bytes.Equal(mine, theirs) {
			return fmt.Errorf("differs from the reference file (%d bytes here, %d there): copy it again or say what changed", len(mine), len(theirs))
		}
	case "header-of":
		if a, b := firstLine(mine), firstLine(theirs); a != b {
			return fmt.Errorf("first line %q, the reference file's %q", a, b)
		}
	case "lines-of":
		have := map[string]bool{}
		for _, s := range splitLines(theirs) {
			have[s] = true
		}
		mineLines := splitLines(mine)
		if len(mineLines) == 0 {
			return fmt.Errorf("the fixture is empty")
		}
		for i, s := range mineLines {
			if !have[s] {
				return fmt.Errorf("line %d is not a line of the reference file", i+1)
			}
		}
	}
	return nil
}

// splitLines splits b into lines, the line ending (LF or CRLF) dropped.
func splitLines(b []byte) []string {
	s := strings.TrimSuffix(strings.ReplaceAll(string(b), "\r\n", "\n"), "\n")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

func firstLine(b []byte) string {
	if l := splitLines(b); len(l) > 0 {
		return l[0]
	}
	return ""
}
