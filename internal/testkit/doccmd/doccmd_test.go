package doccmd

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const doc = "# A document\n\n```sh\n" +
	"headroom simulate --set 'sla.ttft_ms.p99=1000' \\\n" +
	"  --rate-rps 20   # a comment\n" +
	"export TOKEN=abc\n" +
	"HEADROOM_AUTH_TOKEN=$TOKEN headroom serve # exit 3\n" +
	"curl -H \"Authorization: Bearer $TOKEN\" localhost:8080/v1/gpus   # 201 created\n" +
	"```\n\n```go\nnot a command\n```\n\n" +
	"```sh\nheadroom version\n```\n\n```\nheadroom 1\n…\nlast\n```\n"

func writeDoc(t *testing.T, body string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "a.md"), []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestRead(t *testing.T) {
	dir := writeDoc(t, doc)
	blocks, err := Read(dir, "a.md")
	if err != nil {
		t.Fatal(err)
	}
	if len(blocks) != 2 || len(blocks[0].Commands) != 4 || blocks[0].Output != nil {
		t.Fatalf("blocks %+v", blocks)
	}
	c := blocks[0].Commands
	if !slices.Equal(c[0].Args, []string{"headroom", "simulate", "--set", "sla.ttft_ms.p99=1000", "--rate-rps", "20"}) || c[0].Line != 4 || c[0].Comment != "a comment" {
		t.Errorf("continued line: %+v", c[0])
	}
	if !c[1].Export || c[2].Env["HEADROOM_AUTH_TOKEN"] != "abc" || !slices.Equal(c[2].Args, []string{"headroom", "serve"}) || c[2].ExitCode() != 3 {
		t.Errorf("export and assignment: %+v %+v", c[1], c[2])
	}
	if c[3].Args[2] != "Authorization: Bearer abc" || c[3].HTTPStatus() != 201 || c[0].ExitCode() != 0 {
		t.Errorf("expansion in quotes: %+v", c[3])
	}
	o := blocks[1].Output
	if o == nil || o.Start != 20 || !slices.Equal(o.Lines, []string{"headroom 1", "…", "last"}) {
		t.Fatalf("output block %+v", o)
	}
	for _, c := range []struct {
		got string
		ok  bool
	}{
		{"headroom 1\nlast\n", true},
		{"headroom 1\na\nb\nlast\n\n", true},
		{"headroom 1\na\nlast\nmore", false}, // no … after last
		{"x\nheadroom 1\nlast", false},       // none before the first
		{"headroom 2\nlast", false},
	} {
		if ok, why := o.Match(c.got); ok != c.ok {
			t.Errorf("Match(%q) = %v (%s), want %v", c.got, ok, why, c.ok)
		}
	}
	if got := o.Rewrite("headroom 2\nx\nlast\n"); !slices.Equal(got, []string{"headroom 2", "…", "last"}) {
		t.Errorf("Rewrite %q", got)
	}
	if err := Apply(dir, []Replacement{{o, []string{"headroom 2", "…", "last"}}}); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(filepath.Join(dir, "a.md"))
	if want := strings.Replace(doc, "headroom 1\n", "headroom 2\n", 1); string(b) != want {
		t.Errorf("rewritten document:\n%s", b)
	}
}

func TestReadRefusesShellOperators(t *testing.T) {
	for _, line := range []string{"headroom simulate | head", "headroom simulate > out", "a; b", "x $(date)"} {
		dir := writeDoc(t, "```sh\n"+line+"\n```\n")
		if _, err := Read(dir, "a.md"); err == nil {
			t.Errorf("%q accepted", line)
		}
	}
	dir := writeDoc(t, "```sh\nheadroom sweep --axis 'a=1;b|c'\n```\n")
	if _, err := Read(dir, "a.md"); err != nil {
		t.Errorf("quoted operators refused: %v", err)
	}
}

func TestDocumentsLeaveOutHiddenAndNodeModules(t *testing.T) {
	root := t.TempDir()
	for _, f := range []string{"README.md", "docs/api.md", "docs/notes.txt", ".github/a.md", "web/node_modules/pkg/README.md", "web/README.md"} {
		p := filepath.Join(root, f)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("# x\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := Documents(root)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"README.md", "docs/api.md", "web/README.md"}; !slices.Equal(got, want) {
		t.Errorf("Documents = %v, want %v", got, want)
	}
}
