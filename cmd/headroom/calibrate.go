package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"text/tabwriter"

	"github.com/headroom-sim/headroom/catalogs"
	"github.com/headroom-sim/headroom/sim/calibrate"
	"github.com/headroom-sim/headroom/sim/measured"
)

// runOverrides fill what an imported run does not record.
type runOverrides struct {
	model, gpu, format       string
	tp                       int
	maxSeqs, maxBatched, len int
}

func (o *runOverrides) apply(run *measured.Run) {
	if o.model != "" {
		run.Model = o.model
	}
	if o.gpu != "" {
		run.GPU = o.gpu
	}
	if o.tp > 0 {
		run.TP = o.tp
	}
	if o.maxSeqs > 0 {
		run.Engine.MaxNumSeqs = o.maxSeqs
	}
	if o.maxBatched > 0 {
		run.Engine.MaxNumBatchedTokens = o.maxBatched
	}
	if o.len > 0 {
		run.Engine.MaxModelLen = o.len
	}
}

func runCalibrate(ctx context.Context, e *env, args []string) error {
	var trace, out, format, catalogDir string
	var holdouts setFlags
	var o runOverrides
	var evals int
	fs := newFlagSet("calibrate")
	fs.StringVar(&trace, "trace", "", "measured run to fit on: a benchmark result file or a run directory")
	fs.Var(&holdouts, "holdout", "measured run to evaluate the fitted profile on (repeatable)")
	fs.StringVar(&out, "out", "", "write the calibration profile (JSON) here")
	fs.StringVar(&o.format, "format", "", "result format of --trace/--holdout files (default: detect)")
	fs.StringVar(&o.model, "model", "", "model, when the result file does not name it")
	fs.StringVar(&o.gpu, "gpu", "", "GPU, when the result file does not name it")
	fs.IntVar(&o.tp, "tp", 0, "tensor-parallel degree of the measured server")
	fs.IntVar(&o.maxSeqs, "max-num-seqs", 0, "engine setting of the measured server")
	fs.IntVar(&o.maxBatched, "max-num-batched-tokens", 0, "engine setting of the measured server")
	fs.IntVar(&o.len, "max-model-len", 0, "engine setting of the measured server")
	fs.IntVar(&evals, "max-evaluations", 400, "simulations the fit may run")
	fs.StringVar(&format, "output", "table", "output format: table|json")
	fs.StringVar(&catalogDir, "catalog-dir", "", "directory of extra catalog entries")
	pos, err := parseFlags(fs, args, e.stdout)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usagef("unexpected argument %q", pos[0])
	}
	if trace == "" {
		return usagef("--trace: a measured run is required")
	}
	if err := outputFormat(format); err != nil {
		return err
	}
	cat, err := loadCatalog(e, catalogDir)
	if err != nil {
		return err
	}
	run, src, err := loadMeasured(trace, &o)
	if err != nil {
		return usagef("--trace %s: %v", trace, err)
	}
	res, err := calibrate.Fit(ctx, run, cat, calibrate.Options{MaxEvaluations: evals})
	if err != nil {
		if errors.Is(err, calibrate.ErrTooFewRequests) {
			return usagef("--trace %s: %v", trace, err)
		}
		return scenarioError(err)
	}
	file := &calibrate.File{
		SchemaVersion: calibrate.FileSchemaVersion, Kind: calibrate.FileKind,
		GPU: run.GPU, Model: run.Model, TP: max(run.TP, 1), EngineVersion: run.EngineVersion,
		Source: src, Profile: res.Profile,
		Fit: &calibrate.FitSummary{Fitted: res.Fitted, Evaluations: res.Evaluations, Before: res.Before, After: res.After},
	}
	report := calibrationReport{File: file}
	for _, h := range holdouts {
		hr, _, err := loadMeasured(h, &o)
		if err != nil {
			return usagef("--holdout %s: %v", h, err)
		}
		before, err := calibrate.Evaluate(ctx, hr, cat, nil)
		if err != nil {
			return scenarioError(err)
		}
		after, err := calibrate.Evaluate(ctx, hr, cat, &res.Profile)
		if err != nil {
			return scenarioError(err)
		}
		report.Holdouts = append(report.Holdouts, holdoutResult{Before: before, After: after})
	}
	if out != "" {
		var b bytes.Buffer
		if err := file.Write(&b); err != nil {
			return err
		}
		if err := os.WriteFile(out, b.Bytes(), 0o644); err != nil {
			return err
		}
	}
	if format == "json" {
		return writeJSON(e.stdout, report)
	}
	writeCalibrationTable(e.stdout, &report)
	if out != "" {
		fmt.Fprintf(e.stdout, "\nwrote %s (use --calibration %s)\n", out, out)
	}
	return nil
}

type calibrationReport struct {
	File     *calibrate.File `json:"calibration"`
	Holdouts []holdoutResult `json:"holdouts,omitempty"`
}

type holdoutResult struct {
	Before calibrate.Evaluation `json:"before"`
	After  calibrate.Evaluation `json:"after"`
}

// loadMeasured reads a run directory or a benchmark result file.
func loadMeasured(path string, o *runOverrides) (*measured.Run, calibrate.Source, error) {
	src := calibrate.Source{File: filepath.Base(path)}
	st, err := os.Stat(path)
	if err != nil {
		return nil, src, err
	}
	var run *measured.Run
	if st.IsDir() {
		run, err = loadRunDir(path)
		if err != nil {
			return nil, src, err
		}
		src.Format = run.Format
	} else {
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, src, err
		}
		sum := sha256.Sum256(b)
		src.SHA256 = hex.EncodeToString(sum[:])
		run, err = measured.Import(bytes.NewReader(b), filepath.Base(path), o.format)
		if err != nil {
			return nil, src, err
		}
		src.Format = run.Format
	}
	o.apply(run)
	if run.Model == "" {
		return nil, src, fmt.Errorf("the run does not name its model: give --model")
	}
	if run.GPU == "" {
		return nil, src, fmt.Errorf("the run does not name its GPU: give --gpu")
	}
	src.Run = run.Name
	src.Requests = len(run.Requests)
	return run, src, nil
}

func writeCalibrationTable(w io.Writer, r *calibrationReport) {
	f := r.File
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "Calibrated on\t%s (%s, %d requests): %s on %d× %s\n", f.Source.Run, f.Source.Format, f.Source.Requests, f.Model, f.TP, f.GPU)
	fmt.Fprintf(tw, "Fitted\t%v in %d simulations\n", f.Fit.Fitted, f.Fit.Evaluations)
	fmt.Fprintf(tw, "Coefficients\tgemm %.3f (half at %.0f tokens), bandwidth %.3f, attention prefill %.3f / decode %.3f, step overhead %.0f µs, per sequence %.1f µs\n",
		f.Profile.GEMMEfficiency, f.Profile.GEMMHalfTokens, f.Profile.BandwidthEfficiency, f.Profile.AttentionPrefillEfficiency, f.Profile.AttentionDecodeEfficiency, f.Profile.StepOverheadUS, f.Profile.PerSeqOverheadUS)
	tw.Flush()
	fmt.Fprintln(w)
	writeEvalPair(w, "fitted run", f.Fit.Before, f.Fit.After)
	for _, h := range r.Holdouts {
		writeEvalPair(w, "held out", h.Before, h.After)
	}
}

func writeEvalPair(w io.Writer, label string, before, after calibrate.Evaluation) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "%s: %s\t\t\t\t\t\t\n", label, after.Run)
	fmt.Fprintln(tw, "metric\tquantile\tmeasured\tdefault\tcalibrated\tAPE default\tAPE calibrated\t")
	for i, a := range after.Figures {
		b := before.Figures[i]
		fmt.Fprintf(tw, "%s\t%s\t%.2f\t%.2f\t%.2f\t%.1f%%\t%.1f%%\t\n", a.Metric, a.Quantile, a.Measured, b.Predicted, a.Predicted, b.APE, a.APE)
	}
	keys := make([]string, 0, len(after.MedianAPE))
	for k := range after.MedianAPE {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(tw, "median APE\t%s\t\t\t\t%.1f%%\t%.1f%%\t\n", k, before.MedianAPE[k], after.MedianAPE[k])
	}
	tw.Flush()
	fmt.Fprintln(w)
}

var _ = catalogs.Builtin
