package measured

import (
	"io/fs"
	"strings"
	"testing"
	"testing/fstest"
)

// TestSourcesCatch: each fault of a SOURCES file, or of a fixture against
// the reference file its line names, is reported, naming the line.
func TestSourcesCatch(t *testing.T) {
	const (
		real  = "a.json\treal\towner/repo\tdir/a.json\tcommit 0123abcd\tlicense MIT (LICENSE)"
		built = "b.csv\tconstructed\ttool 1.0, its docs/format.md\tno real file at hand"
	)
	tree := fstest.MapFS{
		"a.json":          {Data: []byte("{\"x\": 1}\n")},
		"b.csv":           {Data: []byte("h1,h2\r\n1,2\r\n")},
		"README.md":       {Data: []byte("x")},
		"LICENSE":         {Data: []byte("x")},
		"golden/out.json": {Data: []byte("x")},
	}
	ref := fstest.MapFS{
		"ref/a.json":   {Data: []byte("{\"x\": 1}\n")},
		"ref/other":    {Data: []byte("{\"x\": 2}\n")},
		"ref/full.csv": {Data: []byte("h1,h2\n0,0\n1,2\n")},
	}
	for _, c := range []struct {
		name, sources, want string // want "" : no fault
	}{
		{"well formed", "# comment\n\n" + real + "\tcopy-of=ref/a.json\tnote=x\n" + built + "\theader-of=ref/full.csv\n", ""},
		{"lines, line endings aside", real + "\n" + strings.Replace(built, "constructed\ttool 1.0, its docs/format.md\tno real file at hand", "real\to/r\tunknown\tcommit unknown\tlicense MIT (LICENSE)\tlines-of=ref/full.csv", 1) + "\n", ""},
		{"unlisted data file", real + "\n", "b.csv has no line"},
		{"listed file missing", real + "\n" + built + "\nc.txt\tconstructed\tx\ty\n", "line 3 names c.txt, which is not a data file"},
		{"listed file not data", real + "\n" + built + "\nREADME.md\tconstructed\tx\ty\n", "names README.md, which is not a data file"},
		{"listed twice", real + "\n" + built + "\n" + real + "\n", "line 3: a.json is listed again (first on line 1)"},
		{"real, too few fields", "a.json\treal\towner/repo\tdir/a.json\tcommit 0123abcd\n" + built + "\n", "5 fields: a real line has at least 6"},
		{"constructed, too few fields", real + "\nb.csv\tconstructed\ttool 1.0\n", "3 fields: a constructed line has at least 4"},
		{"no kind", real + "\nb.csv\n", "no kind"},
		{"unknown kind", real + "\nb.csv\tborrowed\tx\ty\n", `kind "borrowed": want real or constructed`},
		{"empty field", real + "\nb.csv\tconstructed\t \ty\n", "field 3 is empty"},
		{"option in a fixed field", "a.json\treal\towner/repo\tdir/a.json\tcommit 0123abcd\tcopy-of=ref/a.json\n" + built + "\n", "field 6 is the optional copy-of="},
		{"bad repository", strings.Replace(real, "owner/repo", "https://example.org/repo", 1) + "\n" + built + "\n", `repository "https://example.org/repo": want owner/name`},
		{"bad commit", strings.Replace(real, "commit 0123abcd", "0123abcd", 1) + "\n" + built + "\n", `want "commit <hex hash>"`},
		{"bad license", strings.Replace(real, "license MIT (LICENSE)", "MIT", 1) + "\n" + built + "\n", `want "license <id>`},
		{"path outside", real + "\n" + built + "\n../x\tconstructed\tx\ty\n", "the path must be relative"},
		{"unknown option", real + "\tsha=1\n" + built + "\n", `field 7 "sha=1": want copy-of=`},
		{"empty option", real + "\tnote=\n" + built + "\n", "note= is empty"},
		{"option twice", real + "\tnote=a\tnote=b\n" + built + "\n", "note= given twice"},
		{"copy-of on constructed", real + "\n" + built + "\tcopy-of=ref/full.csv\n", "copy-of= is for a real file"},
		{"copy differs", real + "\tcopy-of=ref/other\n" + built + "\n", "differs from the reference file"},
		{"reference missing", real + "\tcopy-of=ref/gone\n" + built + "\n", "not in the reference data"},
		{"excerpt of nothing", real + "\texcerpt-of=ref/gone\n" + built + "\n", "excerpt-of=ref/gone: not in the reference data"},
		{"line not in reference", real + "\tlines-of=ref/full.csv\n" + built + "\n", "line 1 is not a line of the reference file"},
		{"header differs", real + "\theader-of=ref/other\n" + built + "\n", `first line "{\"x\": 1}", the reference file's "{\"x\": 2}"`},
		{"header differs, constructed", real + "\n" + built + "\theader-of=ref/a.json\n", `first line "h1,h2"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			lines, errs := parseSources([]byte(c.sources))
			errs = append(errs, checkListed(tree, lines, func(p string, d fs.DirEntry) bool { return p == "golden" })...)
			_, refErrs := checkReference(tree, ref, lines)
			errs = append(errs, refErrs...)
			var got []string
			for _, err := range errs {
				got = append(got, err.Error())
			}
			all := strings.Join(got, "\n")
			switch {
			case c.want == "" && len(got) > 0:
				t.Errorf("faults in a good file:\n%s", all)
			case c.want != "" && !strings.Contains(all, c.want):
				t.Errorf("want a fault containing %q, got:\n%s", c.want, all)
			}
		})
	}
}
