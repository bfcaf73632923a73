package calibrate

import (
	"context"
	"flag"
	"math"
	"os"
	"testing"

	"github.com/headroom-sim/headroom/catalogs"
	"github.com/headroom-sim/headroom/internal/adapter/measured"
	"github.com/headroom-sim/headroom/internal/testkit/refdata"
	"github.com/headroom-sim/headroom/sim/steptime"
)

var update = flag.Bool("update", false, "rewrite docs/host-costs.md's generated table (TestHostCostsDoc)")

// TestFitHost fits the host costs on the closed loops alone (FitHost: the
// fit half of the measured closed-loop runs, every fourth of them, for
// time), the fit the defaults used before the families' joint fit; it
// writes nothing (the defaults are FitHostDefaults's, written by
// cmd/headroom-fit). It takes tens of minutes, so it runs only with
// HEADROOM_FIT_HOST=1.
func TestFitHost(t *testing.T) {
	if os.Getenv("HEADROOM_FIT_HOST") != "1" {
		t.Skip("HEADROOM_FIT_HOST=1 not set: the closed-loop host fit takes tens of minutes")
	}
	refdata.Path(t, "measured")
	cat, err := catalogs.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	runs, err := SiliconRuns(os.DirFS(refdata.Dir()))
	if err != nil {
		t.Fatal(err)
	}
	fit, _ := HostSplit(runs)
	var thin []*measured.Run
	for i, r := range fit {
		if i%4 == 0 {
			thin = append(thin, r)
		}
	}
	res, err := FitHost(context.Background(), thin, cat, steptime.HostCosts(), KernelOptions(cat), func(f HostFit) {
		t.Logf("eval %d loss %.4f cpu %+v frontend %+v", f.Evaluations, f.Loss, f.Host.CPU, f.Host.Frontend)
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("loss %.4f after %d evaluations: %+v", res.Loss, res.Evaluations, res.Host)
	if math.IsInf(res.Loss, 0) || math.IsNaN(res.Loss) {
		t.Fatalf("loss %v: no run replayed", res.Loss)
	}
}
