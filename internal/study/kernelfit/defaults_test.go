package kernelfit

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"testing"

	"github.com/headroom-sim/headroom/catalogs"
	"github.com/headroom-sim/headroom/internal/adapter/kerneldb"
	"github.com/headroom-sim/headroom/internal/testkit/refdata"
	"github.com/headroom-sim/headroom/sim/steptime"
)

var update = flag.Bool("update", false, "rewrite sim/steptime/profiles from the fits")

var (
	fitsOnce sync.Once
	fits     map[string]*Result
	fitsErr  error
)

// measuredFits fits every measured system once per test binary.
func measuredFits(t *testing.T) map[string]*Result {
	t.Helper()
	dir := refdata.Path(t, "profiling/aiconfigurator")
	fitsOnce.Do(func() {
		cat, err := catalogs.Builtin()
		if err != nil {
			fitsErr = err
			return
		}
		fits = map[string]*Result{}
		var mu sync.Mutex
		var wg sync.WaitGroup
		ids := make([]string, 0, len(steptime.MeasuredSystems))
		for id := range steptime.MeasuredSystems {
			ids = append(ids, id)
		}
		sort.Strings(ids)
		for _, id := range ids {
			g, err := cat.GPU(id)
			if err != nil {
				continue // a catalog without this GPU: its profile is not refitted
			}
			sys := steptime.MeasuredSystems[id]
			wg.Add(1)
			go func() {
				defer wg.Done()
				db, err := kerneldb.Load(os.DirFS(dir), sys, kerneldb.Options{})
				var r *Result
				if err == nil {
					r, err = Fit(db, g, steptime.BaseProfile())
				}
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					fitsErr = err
					return
				}
				fits[sys] = r
			}()
		}
		wg.Wait()
	})
	if fitsErr != nil {
		t.Fatal(fitsErr)
	}
	return fits
}

// TestDefaultsAreFitted checks that the embedded default profiles are what
// the fit produces from the kernel tables (run with -update to rewrite
// them after changing the formula or the fit).
func TestDefaultsAreFitted(t *testing.T) {
	for sys, r := range measuredFits(t) {
		got, err := json.MarshalIndent(r.Profile, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, '\n')
		path := filepath.Join("..", "..", "..", "sim", "steptime", "profiles", sys+".json")
		if *update {
			if err := os.WriteFile(path, got, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%s: %v (run go test ./internal/study/kernelfit -update)", sys, err)
		}
		if string(want) != string(got) {
			t.Errorf("%s: the embedded profile is not the fit's output: run go test ./internal/study/kernelfit -update", sys)
		}
	}
}
