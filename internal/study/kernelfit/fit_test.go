package kernelfit

import (
	"os"
	"testing"

	"github.com/headroom-sim/headroom/catalogs"
	"github.com/headroom-sim/headroom/internal/adapter/kerneldb"
	"github.com/headroom-sim/headroom/internal/testkit/refdata"
	"github.com/headroom-sim/headroom/sim/steptime"
)

func TestFitProbe(t *testing.T) {
	dir := refdata.Path(t, "profiling/aiconfigurator")
	sys := os.Getenv("SYS")
	if sys == "" {
		t.Skip("SYS not set")
	}
	db, err := kerneldb.Load(os.DirFS(dir), sys, kerneldb.Options{})
	if err != nil {
		t.Fatal(err)
	}
	cat, _ := catalogs.Builtin()
	ids := map[string]string{"h100_sxm": "h100-sxm", "h200_sxm": "h200", "b200_sxm": "b200", "rtx_pro_6000_server": "rtx-pro-6000", "b300_sxm": "b200"}
	g, err := cat.GPU(ids[sys])
	if err != nil {
		t.Fatal(err)
	}
	res, err := Fit(db, g, steptime.BaseProfile())
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range res.Errors {
		t.Logf("%-18s %-32s %-28s n=%6d median %5.1f%% p90 %5.1f%% bias %+5.1f%%", e.Op, e.Format, e.Scope, e.N, e.MedianAPE, e.P90APE, e.Bias)
	}
	t.Logf("%+v", res.Profile)
}
