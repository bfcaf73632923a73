package kernelfit

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"testing"

	"github.com/headroom-sim/headroom/catalogs"
	"github.com/headroom-sim/headroom/hardware"
	"github.com/headroom-sim/headroom/internal/adapter/kerneldb"
	"github.com/headroom-sim/headroom/internal/testkit/refdata"
	"github.com/headroom-sim/headroom/sim/steptime"
)

var update = flag.Bool("update", false, "rewrite sim/steptime/profiles and docs/steptime.md from the fits")

// siblings are measured systems whose fit starts from another system's
// fitted profile: the H200 has the H100's GH100 compute (same SMs and
// clocks, more HBM), so a kernel table of the H200 that fails its
// consistency check keeps the H100's coefficients for that kernel.
var siblings = map[string]string{"h200_sxm": "h100_sxm"}

// b300Fallback is the B300 SXM as AIConfigurator's systems/b300_sxm.yaml
// describes it, for a catalog that has no b300 entry yet: 7.75 TB/s HBM3e,
// 2,250 / 4,500 / 14,000 dense bf16 / fp8 / fp4 TFLOPS, NVLink 5 at 1,800
// GB/s bidirectional, and the B200's 148 SMs (the YAML has no SM count).
func b300Fallback(cat *catalogs.Catalog) (*hardware.GPU, error) {
	b200, err := cat.GPU("b200")
	if err != nil {
		return nil, err
	}
	g := *b200
	g.ID, g.Name, g.Aliases = "b300", "NVIDIA B300 SXM (from AIConfigurator's systems/b300_sxm.yaml)", nil
	g.MemoryBytes, g.MemoryGB = 288400343040, 288
	g.HBMBandwidthGBps = 7750
	g.DenseTFLOPS = hardware.TFLOPS{BF16: 2250, FP16: 2250, FP8: 4500, INT8: 153.5, FP4: 14000}
	g.ScaleUp = hardware.Link{Kind: "nvlink5", BandwidthGBps: 1800}
	return &g, nil
}

// measuredGPU is the catalog GPU whose default profile system sys fits.
func measuredGPU(cat *catalogs.Catalog, sys string) (*hardware.GPU, error) {
	for id, s := range steptime.MeasuredSystems {
		if s != sys {
			continue
		}
		g, err := cat.GPU(id)
		if err != nil && sys == "b300_sxm" {
			return b300Fallback(cat)
		}
		return g, err
	}
	return nil, fmt.Errorf("no catalog GPU for %s", sys)
}

var (
	fitsOnce sync.Once
	fits     map[string]*Result
	interps  map[string][]ErrorRow // the table backend's held-out errors
	fitsErr  error
)

// measuredFits fits every measured system once per test binary, siblings
// after the system they start from.
func measuredFits(t *testing.T) map[string]*Result {
	t.Helper()
	dir := refdata.Path(t, "profiling/aiconfigurator")
	fitsOnce.Do(func() {
		cat, err := catalogs.Builtin()
		if err != nil {
			fitsErr = err
			return
		}
		fits, interps = map[string]*Result{}, map[string][]ErrorRow{}
		var mu sync.Mutex
		fitOne := func(sys string, base steptime.Profile) {
			g, err := measuredGPU(cat, sys)
			var r *Result
			var ie []ErrorRow
			if err == nil {
				var db *steptime.KernelDB
				db, err = kerneldb.Load(os.DirFS(dir), sys, kerneldb.Options{})
				if err == nil {
					r, err = Fit(db, g, base)
					ie = InterpolationErrors(db, steptime.NewHardware(g))
				}
			}
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				fitsErr = fmt.Errorf("%s: %w", sys, err)
				return
			}
			fits[sys], interps[sys] = r, ie
		}
		systems := make([]string, 0, len(steptime.MeasuredSystems))
		for _, s := range steptime.MeasuredSystems {
			systems = append(systems, s)
		}
		sort.Strings(systems)
		var wg sync.WaitGroup
		for _, sys := range systems {
			if _, ok := siblings[sys]; ok {
				continue
			}
			wg.Add(1)
			go func() { defer wg.Done(); fitOne(sys, steptime.BaseProfile()) }()
		}
		wg.Wait()
		for _, sys := range systems {
			if from, ok := siblings[sys]; ok && fitsErr == nil {
				base := fits[from].Profile.Clone()
				base.Source = from + "'s fit"
				wg.Add(1)
				go func() { defer wg.Done(); fitOne(sys, base) }()
			}
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
			t.Fatalf("%s: %v (run go test ./internal/study/kernelfit -run TestDefaultsAreFitted -update)", sys, err)
		}
		if string(want) != string(got) {
			t.Errorf("%s: the embedded profile is not the fit's output: run go test ./internal/study/kernelfit -run TestDefaultsAreFitted -update", sys)
		}
	}
}
