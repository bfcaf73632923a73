package calibrate

import (
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/headroom-sim/headroom/catalogs"
	"github.com/headroom-sim/headroom/hardware"
	"github.com/headroom-sim/headroom/internal/adapter/kerneldb"
	"github.com/headroom-sim/headroom/internal/adapter/measured"
	"github.com/headroom-sim/headroom/internal/study/replay"
	"github.com/headroom-sim/headroom/internal/testkit/refdata"
	"github.com/headroom-sim/headroom/sim/steptime"
)

var update = flag.Bool("update", false, "rewrite sim/steptime/profiles/host.json from the fit")

// siliconRuns reads the measured closed-loop runs.
func siliconRuns(t *testing.T) []*measured.Run {
	t.Helper()
	f, err := os.Open(refdata.Path(t, "measured/aiconfigurator-silicon/silicon_vllm_agg.csv"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tab, err := measured.ReadSilicon(f, "silicon_vllm_agg.csv")
	if err != nil {
		t.Fatal(err)
	}
	return tab.Runs
}

func kernelOptions(cat *catalogs.Catalog) replay.Options {
	p := &kerneldb.Provider{BuiltIn: catalogs.Kernels(), GPU: func(sys string) (*hardware.GPU, bool) {
		g, err := cat.GPU(sys)
		return g, err == nil
	}}
	return replay.Options{KernelDB: p.Load}
}

// TestFitHost refits the host costs on the fit half of the measured
// closed-loop runs (every fourth of them, for time) and, with -update,
// writes sim/steptime/profiles/host.json. It takes tens of minutes, so it
// runs only with HEADROOM_FIT_HOST=1.
func TestFitHost(t *testing.T) {
	if os.Getenv("HEADROOM_FIT_HOST") == "" {
		t.Skip("HEADROOM_FIT_HOST not set: the host fit takes tens of minutes")
	}
	cat, err := catalogs.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	fit, _ := HostSplit(siliconRuns(t))
	var thin []*measured.Run
	for i, r := range fit {
		if i%4 == 0 {
			thin = append(thin, r)
		}
	}
	res, err := FitHost(context.Background(), thin, cat, steptime.HostCosts(), kernelOptions(cat), func(f HostFit) {
		t.Logf("eval %d loss %.4f cpu %+v frontend %+v", f.Evaluations, f.Loss, f.Host.CPU, f.Host.Frontend)
	})
	if err != nil {
		t.Fatal(err)
	}
	res.Host.Source = "fitted to the mean TTFT and TPOT of every fourth run of the fit half (calibrate.HostSplit) of the aiconfigurator-silicon closed-loop runs, table step-time backend"
	t.Logf("loss %.4f after %d evaluations: %+v", res.Loss, res.Evaluations, res.Host)
	if *update {
		b, _ := json.MarshalIndent(res.Host, "", "  ")
		if err := os.WriteFile(filepath.Join("..", "..", "..", "sim", "steptime", "profiles", "host.json"), append(b, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
