package calibrate

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/headroom-sim/headroom/catalogs"
	"github.com/headroom-sim/headroom/internal/testkit/refdata"
	"github.com/headroom-sim/headroom/sim/steptime"
)

// hostCases loads the host defaults' cases from the reference data (skips
// without them).
func hostCases(t *testing.T) *HostCases {
	t.Helper()
	refdata.Path(t, "measured")
	cat, err := catalogs.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	hc, err := LoadHostCases(os.DirFS(refdata.Dir()), cat)
	if err != nil {
		t.Fatal(err)
	}
	return hc
}

// TestHostDefaultsReproduce checks the committed host.json and
// testdata/host-families.json as go run ./cmd/headroom-fit --check does:
// every row's figures re-scored from its host costs, host.json the joint
// row's fit, its loss the recorded one. Two evaluations of every family
// and one of the fit cases per row (about 40 s on two cores for the
// joint-only table), so -short skips it.
func TestHostDefaultsReproduce(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: re-scoring the host-families table takes minutes")
	}
	hc := hostCases(t)
	b, err := os.ReadFile(filepath.Join("testdata", "host-families.json"))
	if err != nil {
		t.Fatalf("%v (run go run ./cmd/headroom-fit --only host)", err)
	}
	var rows []FamilyRow
	if err := json.Unmarshal(b, &rows); err != nil {
		t.Fatal(err)
	}
	if _, err := CheckHostDefaults(context.Background(), hc, rows, steptime.HostCosts()); err != nil {
		t.Fatalf("%v (run go run ./cmd/headroom-fit --only host)", err)
	}
}

// TestFitHostFamilies runs the host fits as go run ./cmd/headroom-fit
// --only host does, without writing anything: each fit must end at or
// below its start's loss. It takes hours on two cores, so it runs only
// with HEADROOM_FIT_HOST=1 (the tool's --host all); HEADROOM_FIT_HOST=joint
// fits all the families together only (--host joint),
// HEADROOM_FIT_HOST=families each family alone from the committed
// host.json (--host families); HEADROOM_FIT_EVALS caps each fit's
// evaluations (--host-evals, default 40).
func TestFitHostFamilies(t *testing.T) {
	mode := map[string]string{"1": HostAll, "joint": HostJoint, "families": HostFamiliesOnly}[os.Getenv("HEADROOM_FIT_HOST")]
	if mode == "" {
		t.Skip("HEADROOM_FIT_HOST not set to 1, joint or families: the host fits take hours")
	}
	hc := hostCases(t)
	opt := HostDefaultsOptions{Mode: mode}
	if b, err := os.ReadFile(filepath.Join("testdata", "host-families.json")); err == nil {
		if err := json.Unmarshal(b, &opt.Previous); err != nil {
			t.Fatal(err)
		}
	}
	if n, err := strconv.Atoi(os.Getenv("HEADROOM_FIT_EVALS")); err == nil && n > 0 {
		opt.MaxEvals = n
	}
	first := map[string]float64{}
	opt.Progress = func(name string, h HostFit) {
		if _, ok := first[name]; !ok {
			first[name] = h.Loss
		}
		t.Logf("%s %s: eval %d loss %.4f cpu %+v cpu_v0 %+v client %.0f per_step %.0f", time.Now().Format("15:04:05"), name, h.Evaluations, h.Loss, h.Host.CPU, h.Host.CPUV0, h.Host.Frontend.ClientUS, h.Host.Frontend.PerStepUS)
	}
	rows, _, err := FitHostDefaults(context.Background(), hc, opt)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		for _, f := range r.Figures {
			t.Logf("fit on %s → %s: %+v", r.FitOn, f.Family, f.Metrics)
		}
		if start, fitted := first[r.FitOn]; fitted && r.Loss > start {
			t.Errorf("fit on %s: loss %.5f, above its start's %.5f", r.FitOn, r.Loss, start)
		}
	}
}
