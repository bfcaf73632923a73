package kernelfit

import (
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/headroom-sim/headroom/catalogs"
)

var (
	fitsOnce sync.Once
	fits     *Defaults
	fitsErr  error
)

// measuredFits fits every measured system once per test binary, on the
// kernel tables of catalogs/kernels (about 75 s on two cores, so -short
// skips it).
func measuredFits(t *testing.T) *Defaults {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: the kernel fit of every measured GPU takes about 75 s on two cores")
	}
	fitsOnce.Do(func() {
		cat, err := catalogs.Builtin()
		if err != nil {
			fitsErr = err
			return
		}
		fits, fitsErr = FitDefaults(catalogs.Kernels(), cat)
	})
	if fitsErr != nil {
		t.Fatal(fitsErr)
	}
	return fits
}

const refit = "go run ./cmd/headroom-fit --only kernels"

// TestDefaultsAreFitted checks that the embedded default profiles are what
// the fit produces from catalogs/kernels (refit writes them after a change
// to the formula or the fit).
func TestDefaultsAreFitted(t *testing.T) {
	for _, r := range measuredFits(t).Results {
		got, err := ProfileJSON(r)
		if err != nil {
			t.Fatal(err)
		}
		want, err := os.ReadFile(filepath.Join("..", "..", "..", "sim", "steptime", "profiles", r.System+".json"))
		if err != nil {
			t.Fatalf("%s: %v (run %s)", r.System, err, refit)
		}
		if string(want) != string(got) {
			t.Errorf("%s: the embedded profile is not the fit's output: run %s", r.System, refit)
		}
	}
}

// TestSpliceReport: the generated section is replaced, the text around it
// kept, and a document without the markers refused.
func TestSpliceReport(t *testing.T) {
	doc := "intro\n" + ReportBegin + "\nold\n" + ReportEnd + "\ntail\n"
	got, err := SpliceReport(doc, "new")
	if err != nil {
		t.Fatal(err)
	}
	if want := "intro\n" + ReportBegin + "\nnew\n" + ReportEnd + "\ntail\n"; got != want {
		t.Errorf("spliced %q, want %q", got, want)
	}
	for _, bad := range []string{"no markers", ReportEnd + "\n" + ReportBegin} {
		if _, err := SpliceReport(bad, "x"); err == nil {
			t.Errorf("%q: spliced without a generated section", bad)
		}
	}
}
