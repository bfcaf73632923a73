package cli

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestParseFlagsNamesTheFlag(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--nope"}, "unknown flag --nope"},
		{[]string{"--n", "many"}, `--n: invalid value "many": parse error`},
		{[]string{"--n"}, "--n: needs a value"},
	} {
		fs := NewFlagSet("t")
		fs.Int("n", 0, "")
		_, err := ParseFlags(fs, c.args, nil)
		var ue *UsageError
		if !errors.As(err, &ue) || ue.Msg != c.want {
			t.Errorf("%q: err %v, want usage error %q", c.args, err, c.want)
		}
	}
	fs := NewFlagSet("t")
	n := fs.Int("n", 0, "")
	pos, err := ParseFlags(fs, []string{"a", "--n", "3", "b"}, nil)
	if err != nil || *n != 3 || strings.Join(pos, ",") != "a,b" {
		t.Errorf("flags after positional arguments: pos %q, n %d, err %v", pos, *n, err)
	}
	var help strings.Builder
	if _, err := ParseFlags(NewFlagSet("t"), []string{"-h"}, &help); !errors.Is(err, ErrHelp) || !strings.HasPrefix(help.String(), "Usage of t:") {
		t.Errorf("-h: err %v, printed %q", err, help.String())
	}
}

func TestReportExitCodes(t *testing.T) {
	for _, c := range []struct {
		err  error
		code int
		line string
	}{
		{nil, ExitOK, ""},
		{ErrHelp, ExitOK, ""},
		{Usagef("--tp: %d is not >= 1", 0), ExitUsage, "p: --tp: 0 is not >= 1\n"},
		{fmt.Errorf("wrapped: %w", &InfeasibleError{Msg: "does not fit"}), ExitInfeasible, "p: wrapped: does not fit\n"},
		{errors.New("two\nlines"), ExitFailure, "p: two; lines\n"},
	} {
		var w strings.Builder
		if code := Report(&w, "p", c.err); code != c.code || w.String() != c.line {
			t.Errorf("Report(%v) = %d, %q; want %d, %q", c.err, code, w.String(), c.code, c.line)
		}
	}
}

func TestLoadCatalogDir(t *testing.T) {
	none := func(string) string { return "" }
	if _, err := LoadCatalog(none, ""); err != nil {
		t.Fatal(err)
	}
	_, err := LoadCatalog(func(string) string { return "/no/such/dir" }, "")
	var ue *UsageError
	if !errors.As(err, &ue) || !strings.Contains(err.Error(), "--catalog-dir: /no/such/dir is not a directory") {
		t.Errorf("HEADROOM_CATALOG_DIR missing: err %v", err)
	}
}
