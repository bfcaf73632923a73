package calibrate

import (
	"context"
	"errors"
	"testing"

	"github.com/headroom-sim/headroom/catalogs"
	"github.com/headroom-sim/headroom/hardware"
	"github.com/headroom-sim/headroom/internal/adapter/measured"
	"github.com/headroom-sim/headroom/internal/study/replay"
	"github.com/headroom-sim/headroom/sim/steptime"
)

func TestCheck(t *testing.T) {
	cat, _ := catalogs.Builtin()
	g, _ := cat.GPU("h100-sxm")
	base := syntheticRun(t, steptime.DefaultProfile(g), 40)
	two := 2
	for _, c := range []struct {
		name  string
		edit  func(*measured.Run)
		opt   Options
		field string // a *hardware.FieldError's
		is    error
	}{
		{"no model", func(r *measured.Run) { r.Model = "" }, Options{}, "model", nil},
		{"no gpu", func(r *measured.Run) { r.GPU = "" }, Options{}, "gpu", nil},
		{"unknown model", func(r *measured.Run) { r.Model = "llama-9" }, Options{}, "", catalogs.ErrUnknownModel},
		{"unknown gpu", func(r *measured.Run) { r.GPU = "z100" }, Options{}, "", catalogs.ErrUnknownGPU},
		{"stage of a single run", func(*measured.Run) {}, Options{Stage: &two}, "stage", nil},
		{"too few", func(r *measured.Run) { r.Requests = r.Requests[:MinRequests-1] }, Options{}, "", ErrTooFewRequests},
	} {
		t.Run(c.name, func(t *testing.T) {
			run := *base
			run.Requests = append([]measured.Request(nil), base.Requests...)
			c.edit(&run)
			err := Check(&run, cat, c.opt)
			var fe *hardware.FieldError
			switch {
			case c.field != "":
				if !errors.As(err, &fe) || fe.Field != c.field {
					t.Fatalf("err %v, want a field error on %s", err, c.field)
				}
			case !errors.Is(err, c.is):
				t.Fatalf("err %v, want %v", err, c.is)
			}
		})
	}
	run := *base
	run.GPU = "H100"
	if err := Check(&run, cat, Options{}); err != nil || run.GPU != "h100-sxm" {
		t.Fatalf("alias: err %v, gpu %q (want the catalog id)", err, run.GPU)
	}
}

// TestCalibrateMemoryAndValidation: the workflow adds the memory
// calibration from the logged block count, and refuses a fitted profile
// that does not validate (a logged count no memory split can explain)
// instead of writing it, for the CLI as for the API.
func TestCalibrateMemoryAndValidation(t *testing.T) {
	cat, _ := catalogs.Builtin()
	g, _ := cat.GPU("h100-sxm")
	run := syntheticRun(t, steptime.DefaultProfile(g), 40)
	rr, err := replay.Config(run, cat, replay.Options{})
	if err != nil {
		t.Fatal(err)
	}
	run.LoggedBlocks = rr.Memory.NumGPUBlocks - 1000 // 1000 blocks fewer than modelled
	src := Source{File: "synthetic.json", Format: "test", Run: run.Name, Requests: len(run.Requests)}
	f, err := Calibrate(context.Background(), run, cat, src, Options{MaxEvaluations: 8})
	if err != nil {
		t.Fatal(err)
	}
	want := 1000 * rr.Memory.BlockBytes / hardware.GiB
	if d := f.Profile.NonTorchAdjustGiB - want; d > 1e-9 || d < -1e-9 {
		t.Errorf("non_torch_adjust_gib %g, want %g", f.Profile.NonTorchAdjustGiB, want)
	}
	if f.Kind != FileKind || f.Model != "llama-3.1-8b" || f.GPU != "h100-sxm" || f.Source != src || f.Fit == nil || f.Fit.Evaluations == 0 {
		t.Errorf("file %+v", f)
	}

	// A logged count that needs memory the GPU does not have: more than
	// 64 GiB less non-torch memory than none.
	run.LoggedBlocks = rr.Memory.NumGPUBlocks + int(70*hardware.GiB/rr.Memory.BlockBytes)
	_, err = Calibrate(context.Background(), run, cat, src, Options{MaxEvaluations: 8})
	var fe *hardware.FieldError
	if !errors.Is(err, ErrInvalidProfile) || errors.As(err, &fe) {
		t.Fatalf("err %v, want ErrInvalidProfile (and no field error: the input named no such field)", err)
	}
}
