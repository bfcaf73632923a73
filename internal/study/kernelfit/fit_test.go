package kernelfit

import (
	"os"
	"testing"

	"github.com/headroom-sim/headroom/catalogs"
	"github.com/headroom-sim/headroom/internal/adapter/kerneldb"
	"github.com/headroom-sim/headroom/sim/steptime"
)

// TestFitProbe fits one system (SYS=h100_sxm …) and prints its error
// rows and profile: a quick look while changing a formula.
func TestFitProbe(t *testing.T) {
	sys := os.Getenv("SYS")
	if sys == "" {
		t.Skip("set SYS to a measured system (h100_sxm, h200_sxm, b200_sxm, b300_sxm, rtx_pro_6000_server) to run")
	}
	db, err := kerneldb.Load(catalogs.Kernels(), sys, kerneldb.Options{})
	if err != nil {
		t.Fatal(err)
	}
	cat, err := catalogs.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	g, err := MeasuredGPU(cat, sys)
	if err != nil {
		t.Fatal(err)
	}
	res, err := Fit(db, g, steptime.BaseProfile())
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range res.Errors {
		t.Logf("%-18s %-28s %-44s n=%6d median %5.1f%% p90 %5.1f%% bias %+5.1f%%", e.Op, e.Format, e.Scope, e.N, e.MedianAPE, e.P90APE, e.Bias)
	}
	t.Logf("%+v", res.Profile)
}
