package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/headroom-sim/headroom/sim/steptime"

	"github.com/headroom-sim/headroom/catalogs"
	"github.com/headroom-sim/headroom/internal/adapter/measured"
	"github.com/headroom-sim/headroom/internal/study/calibrate"
	"github.com/headroom-sim/headroom/internal/study/replay"
)

func runCalibrate(ctx context.Context, e *env, args []string) error {
	var trace, out, format, catalogDir string
	var holdouts setFlags
	var o runOverrides
	var evals, stage, split, baselineStage int
	var prior float64
	var holdoutStages bool
	var fit, baseline, counters, countersBefore string
	fs := newFlagSet("calibrate")
	fs.StringVar(&counters, "spec-decode-metrics", "", "with --fit acceptance: a scrape of the server's /metrics (Prometheus text) after the run: the acceptance is read off its vllm:spec_decode_* counters")
	fs.StringVar(&countersBefore, "spec-decode-metrics-before", "", "with --spec-decode-metrics: a scrape before the run, whose counts are subtracted")
	fs.StringVar(&fit, "fit", "profile", "what to fit: profile (the step-time coefficients) or acceptance (a speculative run's draft acceptance)")
	fs.StringVar(&baseline, "baseline", "", "with --fit acceptance: the same server and load without speculation, whose simulated ÷ measured decode time corrects the target")
	fs.IntVar(&baselineStage, "baseline-stage", -1, "with --baseline: its benchmark to compare (default: --stage)")
	fs.IntVar(&stage, "stage", -1, "fit on this benchmark of a multi-benchmark file (guidellm sweeps, appended vLLM results)")
	fs.BoolVar(&holdoutStages, "holdout-stages", false, "evaluate on every other benchmark of the --trace file")
	fs.IntVar(&split, "split", 0, "cut a single-benchmark --trace into this many parts by send time (then --stage/--holdout-stages apply)")
	fs.StringVar(&trace, "trace", "", "measured run to fit on: a benchmark result file or a run folder (as validate --run)")
	fs.Var(&holdouts, "holdout", "measured run to evaluate the fitted profile on (repeatable)")
	fs.StringVar(&out, "out", "", "write the calibration profile (JSON) here")
	o.register(fs, true)
	fs.IntVar(&evals, "max-evaluations", 400, "simulations the fit may run")
	fs.Float64Var(&prior, "prior", 0, "weight of the pull towards the starting coefficients (0: the default)")
	fs.StringVar(&format, "output", "table", "output format: table|json|markdown")
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
	if fit != "profile" && fit != "acceptance" {
		return usagef("--fit: %q is not profile or acceptance", fit)
	}
	if fit == "profile" && baseline != "" {
		return usagef("--baseline: only read with --fit acceptance")
	}
	if fit == "profile" && counters != "" {
		return usagef("--spec-decode-metrics: only read with --fit acceptance")
	}
	if countersBefore != "" && counters == "" {
		return usagef("--spec-decode-metrics-before: give --spec-decode-metrics (the scrape after the run) too")
	}
	if format != "table" && format != "json" && format != "markdown" {
		return usagef("--output: %q is not table, json or markdown", format)
	}
	cat, err := loadCatalog(e, catalogDir)
	if err != nil {
		return err
	}
	full, src, err := loadMeasured(trace, &o, cat)
	if err != nil {
		return usagef("--trace %s: %v", trace, err)
	}
	if fit == "acceptance" {
		return runFitAcceptance(ctx, e, acceptanceFlags{trace: trace, baseline: baseline, out: out, format: format,
			stage: stage, baselineStage: baselineStage, holdoutStages: holdoutStages, counters: counters, countersBefore: countersBefore}, full, &o, cat)
	}
	if split > 1 {
		if len(full.Requests) == 0 {
			return usagef("--split: %s has no per-request records to cut by send time (it holds %d benchmark summaries: use --stage)", trace, len(full.Stages))
		}
		full.SplitByTime(split)
	}
	run := full
	type holdout struct {
		run   *measured.Run
		stage int
	}
	var others []holdout
	opts := calibrate.Options{MaxEvaluations: evals, Prior: prior, KernelDB: kernelDBs(cat).Load}
	if stage >= 0 || holdoutStages {
		if len(full.Stages) == 0 {
			return usagef("--stage: %s holds a single benchmark", trace)
		}
		if stage < 0 {
			stage = full.Stages[0].Index
		}
		if full.Stage(stage) == nil {
			return usagef("--stage: %s has no benchmark %d (it has %d)", trace, stage, len(full.Stages))
		}
		opts.Stage = &stage
		if holdoutStages {
			for _, st := range full.Stages {
				if st.Index != stage {
					others = append(others, holdout{full, st.Index})
				}
			}
		}
	}
	file, err := calibrate.Calibrate(ctx, run, cat, src, opts)
	if err != nil {
		return calibrateError(trace, err)
	}
	report := calibrationReport{File: file}
	for _, h := range holdouts {
		hr, _, err := loadMeasured(h, &o, cat)
		if err != nil {
			return usagef("--holdout %s: %v", h, err)
		}
		others = append(others, holdout{hr, -1})
	}
	for _, h := range others {
		before, err := calibrate.Evaluate(ctx, h.run, cat, nil, h.stage, opts.KernelDB)
		if err != nil {
			return scenarioError(err)
		}
		after, err := calibrate.Evaluate(ctx, h.run, cat, &file.Profile, h.stage, opts.KernelDB)
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
	switch format {
	case "json":
		return writeJSON(e.stdout, report)
	case "markdown":
		writeCalibrationMarkdown(e.stdout, &report)
		return nil
	}
	writeCalibrationTable(e.stdout, &report)
	if out != "" {
		fmt.Fprintf(e.stdout, "\nwrote %s (use --calibration %s)\n", out, out)
	}
	return nil
}

// calibrateError maps the workflow's errors to exit codes: a field it
// names is the flag that sets it (--model, --gpu, --stage), a run too small
// or a fit that cannot be made is the --trace's, a stopped run exits 1.
func calibrateError(trace string, err error) error {
	switch {
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return err
	case errors.Is(err, calibrate.ErrTooFewRequests), errors.Is(err, calibrate.ErrInvalidProfile):
		return usagef("--trace %s: %v", trace, err)
	}
	if fe := fieldAsFlag(err); fe != err {
		return fe
	}
	return scenarioError(err)
}

type calibrationReport struct {
	File     *calibrate.File `json:"calibration"`
	Holdouts []holdoutResult `json:"holdouts,omitempty"`
}

type holdoutResult struct {
	Before calibrate.Evaluation `json:"before"`
	After  calibrate.Evaluation `json:"after"`
}

func writeCalibrationTable(w io.Writer, r *calibrationReport) {
	f := r.File
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "Calibrated on\t%s (%s, %d requests): %s on %d× %s\n", f.Fit.After.Run, f.Source.Format, f.Source.Requests, f.Model, f.TP, f.GPU)
	fmt.Fprintf(tw, "Fitted to\t%s\n", basisText(f.Fit.After))
	fmt.Fprintf(tw, "Fitted\t%v in %d simulations\n", f.Fit.Fitted, f.Fit.Evaluations)
	fmt.Fprintf(tw, "Scale factors\t%s\n", scaleSummary(f.Profile.Scale))
	if f.Profile.NonTorchAdjustGiB != 0 {
		fmt.Fprintf(tw, "Memory\t%+.3f GiB per GPU of non-torch memory reproduces the logged KV block count\n", f.Profile.NonTorchAdjustGiB)
	}
	tw.Flush()
	fmt.Fprintln(w)
	writeEvalPair(w, "fitted run", f.Fit.Before, f.Fit.After)
	for _, h := range r.Holdouts {
		writeEvalPair(w, "held out", h.Before, h.After)
	}
}

// basisText says in words what an evaluation compared with.
func basisText(e calibrate.Evaluation) string {
	switch e.Basis {
	case replay.BasisAggregate:
		if e.Parts > 1 {
			return fmt.Sprintf("the tool's summaries of %d benchmarks (quantiles as the tool computed them; each benchmark's load rebuilt from its rate or concurrency, request count and mean lengths)", e.Parts)
		}
		return "the tool's summary (quantiles as the tool computed them; load rebuilt from its rate or concurrency, request count and mean lengths)"
	case replay.BasisRequests:
		if e.Parts > 1 {
			return fmt.Sprintf("per-request records of %d benchmarks, each with its own server settings (arrivals and lengths replayed)", e.Parts)
		}
		return "per-request records (arrivals and lengths replayed)"
	}
	return fmt.Sprintf("%s figures of %d benchmarks", e.Basis, e.Parts)
}

func writeEvalPair(w io.Writer, label string, before, after calibrate.Evaluation) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "%s: %s\t\t\t\t\t\t\t\n", label, after.Run)
	fmt.Fprintln(tw, "stage\tmetric\tquantile\tmeasured\tdefault\tcalibrated\tAPE default\tAPE calibrated\t")
	for i, a := range after.Figures {
		b := before.Figures[i]
		st := "-"
		if a.Stage != nil {
			st = strconv.Itoa(*a.Stage)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%.2f\t%.2f\t%.2f\t%.1f%%\t%.1f%%\t\n", st, a.Metric, a.Quantile, a.Measured, b.Predicted, a.Predicted, b.APE, a.APE)
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

// calibrationBars are the held-out targets: median APE per metric, and
// over the P99s.
var calibrationBars = map[string]float64{"e2e_ms": 5, "tpot_ms": 5, "ttft_ms": 10, "p99": 10}

func writeCalibrationMarkdown(w io.Writer, r *calibrationReport) {
	f := r.File
	fmt.Fprintf(w, "Fitted on **%s** (%s on %d× %s) to %s: %s in %d simulations.\n\n", f.Fit.After.Run, f.Model, f.TP, f.GPU, basisText(f.Fit.After), strings.Join(f.Fit.Fitted, ", "), f.Fit.Evaluations)
	fmt.Fprintf(w, "Scale factors: %s.\n\n", scaleSummary(f.Profile.Scale))
	fmt.Fprintln(w, "| run | role | TTFT median APE | TPOT median APE | E2E median APE | P99 median APE | held-out bars met |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|")
	row := func(role string, before, after calibrate.Evaluation) {
		cell := func(k string) string {
			return fmt.Sprintf("%.1f%% → %.1f%%", before.MedianAPE[k], after.MedianAPE[k])
		}
		met := "—"
		if role == "held out" {
			met = "yes"
			for k, bar := range calibrationBars {
				if v, ok := after.MedianAPE[k]; ok && v > bar {
					met = "**no**"
				}
			}
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s | %s |\n", after.Run, role, cell("ttft_ms"), cell("tpot_ms"), cell("e2e_ms"), cell("p99"), met)
	}
	row("fitted", f.Fit.Before, f.Fit.After)
	for _, h := range r.Holdouts {
		row("held out", h.Before, h.After)
	}
	fmt.Fprintln(w)
}

// scaleSummary lists a calibration's scale factors (speeds of compute,
// memory, experts and link; the multiplier of fixed overheads).
func scaleSummary(s steptime.Scales) string {
	one := func(v float64) float64 {
		if v == 0 {
			return 1
		}
		return v
	}
	return fmt.Sprintf("compute ×%.3f, memory ×%.3f, overhead ×%.3f, experts ×%.3f, link ×%.3f",
		one(s.Compute), one(s.Memory), one(s.Overhead), one(s.Experts), one(s.Link))
}
