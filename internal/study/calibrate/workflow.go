package calibrate

import (
	"context"
	"errors"
	"fmt"

	"github.com/headroom-sim/headroom/catalogs"
	"github.com/headroom-sim/headroom/hardware"
	"github.com/headroom-sim/headroom/internal/adapter/measured"
	"github.com/headroom-sim/headroom/internal/study/replay"
)

// The calibration workflow: what `headroom calibrate` and POST
// /v1/calibrations both do with a measured run. Check is the part that
// needs no simulation (the API runs it at submission); Calibrate checks,
// fits, adds the memory calibration and validates the result.

// ErrInvalidProfile is a fit whose profile fails steptime's validation.
var ErrInvalidProfile = errors.New("the fitted profile is invalid")

// Check verifies that run can be calibrated with opt, short of fitting: it
// names a model and a GPU of cat (which it replaces by their catalog ids),
// opt.Stage is one of its benchmarks, and enough requests completed.
// Errors are a *hardware.FieldError (model, gpu, stage), a catalog lookup
// error wrapped with the field, or ErrTooFewRequests.
func Check(run *measured.Run, cat *catalogs.Catalog, opt Options) error {
	switch {
	case run.Model == "":
		return &hardware.FieldError{Field: "model", Reason: fmt.Sprintf("is required: %s does not name its model", run.Name)}
	case run.GPU == "":
		return &hardware.FieldError{Field: "gpu", Reason: fmt.Sprintf("is required: %s does not name its GPU", run.Name)}
	}
	id, err := replay.ResolveModel(cat, run.Model)
	if err != nil {
		return fmt.Errorf("model: %w", err)
	}
	m, err := cat.Model(id)
	if err != nil {
		return fmt.Errorf("model: %w", err)
	}
	g, err := cat.GPU(run.GPU)
	if err != nil {
		return fmt.Errorf("gpu: %w", err)
	}
	run.Model, run.GPU = m.ID, g.ID
	focus := run
	if opt.Stage != nil {
		if len(run.Stages) == 0 {
			return &hardware.FieldError{Field: "stage", Reason: fmt.Sprintf("%s holds a single benchmark", run.Name)}
		}
		if focus = run.Stage(*opt.Stage); focus == nil {
			return &hardware.FieldError{Field: "stage", Reason: fmt.Sprintf("%s has no benchmark %d (it has %d)", run.Name, *opt.Stage, len(run.Stages))}
		}
	}
	stage := -1
	if opt.Stage != nil {
		stage = *opt.Stage
	}
	if completed := Completed(run, stage); completed < MinRequests {
		return fmt.Errorf("%s: %w: %d completed, need at least %d", run.Name, ErrTooFewRequests, completed, MinRequests)
	}
	return nil
}

// Calibrate fits run's step-time profile (Check, then Fit), adds the
// memory calibration when the run logged its KV block count (the extra
// per-GPU non-torch memory that makes the memory model reproduce it),
// validates the profile, and returns the calibration file recording src
// and how the fit went.
func Calibrate(ctx context.Context, run *measured.Run, cat *catalogs.Catalog, src Source, opt Options) (*File, error) {
	if err := Check(run, cat, opt); err != nil {
		return nil, err
	}
	res, err := Fit(ctx, run, cat, opt)
	if err != nil {
		return nil, err
	}
	if run.LoggedBlocks > 0 {
		rr, err := replay.Config(run, cat, replay.Options{KernelDB: opt.KernelDB})
		if err != nil {
			return nil, err
		}
		if rr.Memory.BlockBytes > 0 {
			res.Profile.NonTorchAdjustGiB = float64(rr.Memory.NumGPUBlocks-run.LoggedBlocks) * rr.Memory.BlockBytes / hardware.GiB
		}
	}
	if err := res.Profile.Validate(); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidProfile, err) // not the input's field
	}
	stage := -1
	if opt.Stage != nil {
		stage = *opt.Stage
	}
	src.Requests = Completed(run, stage)
	return &File{
		SchemaVersion: FileSchemaVersion, Kind: FileKind,
		GPU: run.GPU, Model: run.Model, TP: max(run.TP, 1), EngineVersion: run.EngineVersion,
		Source: src, Profile: res.Profile,
		Fit: &FitSummary{Fitted: res.Fitted, Evaluations: res.Evaluations, Before: res.Before, After: res.After},
	}, nil
}
