package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"text/tabwriter"

	"github.com/headroom-sim/headroom/catalogs"
	"github.com/headroom-sim/headroom/internal/adapter/measured"
	"github.com/headroom-sim/headroom/internal/study/calibrate"
)

// acceptanceFlags are calibrate's flags for --fit acceptance.
type acceptanceFlags struct {
	trace, baseline, out, format string
	counters, countersBefore     string
	stage, baselineStage         int
	holdoutStages                bool
}

// runFitAcceptance is `headroom calibrate --fit acceptance`: the draft
// acceptance of a measured run that speculates, from its decode times.
func runFitAcceptance(ctx context.Context, e *env, f acceptanceFlags, run *measured.Run, o *runOverrides, cat *catalogs.Catalog) error {
	if run.Engine.Speculative == nil {
		return usagef("--trace %s: the run records no speculative decoding (the server's --speculative-config) to fit the acceptance of", f.trace)
	}
	stage := f.stage
	if len(run.Stages) > 1 {
		if stage < 0 {
			return usagef("--stage: %s holds %d benchmarks: give the one to fit on (the others are checked with --holdout-stages)", f.trace, len(run.Stages))
		}
		if run.Stage(stage) == nil {
			return usagef("--stage: %s has no benchmark %d", f.trace, stage)
		}
	} else if stage >= 0 && run.Stage(stage) == nil {
		return usagef("--stage: %s has no benchmark %d", f.trace, stage)
	}
	if f.holdoutStages && len(run.Stages) < 2 {
		return usagef("--holdout-stages: %s holds a single benchmark", f.trace)
	}
	opt := calibrate.AcceptanceOptions{Stage: stage, HoldoutStages: f.holdoutStages, KernelDB: kernelDBs(cat).Load, BaselineStage: f.baselineStage}
	if f.baseline != "" {
		b, _, err := loadMeasured(f.baseline, o, cat)
		if err != nil {
			return usagef("--baseline %s: %v", f.baseline, err)
		}
		if opt.BaselineStage < 0 {
			opt.BaselineStage = stage
		}
		if len(b.Stages) > 1 && b.Stage(opt.BaselineStage) == nil {
			return usagef("--baseline-stage: %s has no benchmark %d", f.baseline, opt.BaselineStage)
		}
		if len(b.Stages) <= 1 {
			opt.BaselineStage = -1
		}
		opt.Baseline = b
	}
	if f.counters != "" {
		if f.baseline != "" {
			return usagef("--baseline: the counters give the acceptance; there is nothing to correct")
		}
		c, err := readCounters(f.counters)
		if err != nil {
			return usagef("--spec-decode-metrics %s: %v", f.counters, err)
		}
		opt.CountsSource = filepath.Base(f.counters)
		if f.countersBefore != "" {
			b, err := readCounters(f.countersBefore)
			if err != nil {
				return usagef("--spec-decode-metrics-before %s: %v", f.countersBefore, err)
			}
			if c, err = c.Sub(b); err != nil {
				return usagef("--spec-decode-metrics-before %s: %v", f.countersBefore, err)
			}
			opt.CountsSource += " less " + filepath.Base(f.countersBefore)
		}
		opt.Counts = c
	}
	fit, err := calibrate.FitAcceptance(ctx, run, cat, opt)
	if err != nil {
		return calibrateError(f.trace, err)
	}
	if f.out != "" {
		b, err := json.MarshalIndent(acceptanceFile(fit), "", "  ")
		if err != nil {
			return err
		}
		if err := os.WriteFile(f.out, append(b, '\n'), 0o644); err != nil {
			return err
		}
	}
	switch f.format {
	case "json":
		return writeJSON(e.stdout, fit)
	case "markdown":
		writeAcceptanceMarkdown(e.stdout, fit)
		return nil
	}
	writeAcceptanceTable(e.stdout, fit)
	if f.out != "" {
		fmt.Fprintf(e.stdout, "\nwrote %s (its acceptance block goes under engine.speculative)\n", f.out)
	}
	return nil
}

// readCounters reads a /metrics scrape's spec_decode counters.
func readCounters(path string) (*measured.SpecDecodeCounts, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	return measured.ReadSpecDecodeCounts(fh, filepath.Base(path))
}

// acceptanceFile is what --out writes: the scenario's
// engine.speculative.acceptance, with its source (the per-position
// rates when the counters gave them).
func acceptanceFile(f *calibrate.AcceptanceFit) map[string]any {
	if f.FromCounters {
		return map[string]any{"acceptance": map[string]any{"per_position": f.PerPosition, "source": f.Source}}
	}
	return map[string]any{"acceptance": map[string]any{"rate": f.Rate, "source": f.Source}}
}

func writeAcceptanceTable(w io.Writer, f *calibrate.AcceptanceFit) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "Fitted on\t%s %s: %s, %d drafts per step\n", f.Run, stageLabelText(f.Stage), f.Method, f.NumSpeculativeTokens)
	if f.FromCounters {
		fmt.Fprintf(tw, "Acceptance\tper position %v (vLLM's counters), mean acceptance length %.3f, %.1f%% of drafts accepted\n", f.PerPosition, f.MeanAcceptanceLength, 100*f.AcceptanceRate)
		fmt.Fprintf(tw, "Scenario\tengine.speculative.acceptance: {per_position: %v, source: %q}\n", f.PerPosition, f.Source)
	} else {
		fmt.Fprintf(tw, "Decode time\tmeasured %.1f ms (E2E P50 − TTFT P50), target %.1f ms, simulated %.1f ms at the fit\n", f.MeasuredDecodeMS, f.TargetDecodeMS, f.PredictedDecodeMS)
		fmt.Fprintf(tw, "Acceptance\trate %.4f (conditional): per position %v, mean acceptance length %.3f, %.1f%% of drafts accepted\n", f.Rate, f.PerPosition, f.MeanAcceptanceLength, 100*f.AcceptanceRate)
		fmt.Fprintf(tw, "From the means\trate %.4f, mean acceptance length %.3f\n", f.RateFromMeans, f.MeanAcceptanceLengthFromMeans)
		fmt.Fprintf(tw, "Simulations\t%d\n", f.Evaluations)
		fmt.Fprintf(tw, "Scenario\tengine.speculative.acceptance: {rate: %g, source: %q}\n", f.Rate, f.Source)
	}
	tw.Flush()
	for _, n := range f.Notes {
		fmt.Fprintf(w, "note: %s\n", n)
	}
	if len(f.Holdouts) > 0 {
		fmt.Fprintln(w, "\nOther benchmarks at the fitted acceptance:")
		tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "stage\tmetric\tmeasured\tpredicted\terror\t")
		for _, h := range f.Holdouts {
			fmt.Fprintf(tw, "%d\t%s\t%.2f\t%.2f\t%+.1f%%\t\n", h.Stage, h.Metric, h.Meas, h.Pred, h.Error)
		}
		tw.Flush()
	}
}

func writeAcceptanceMarkdown(w io.Writer, f *calibrate.AcceptanceFit) {
	fmt.Fprintf(w, "**Acceptance fitted on %s %s** (%s, %d drafts): rate %.4f, mean acceptance length %.3f (from the means: rate %.4f, %.3f); decode time measured %.1f ms, target %.1f ms, simulated %.1f ms.\n\n",
		f.Run, stageLabelText(f.Stage), f.Method, f.NumSpeculativeTokens, f.Rate, f.MeanAcceptanceLength, f.RateFromMeans, f.MeanAcceptanceLengthFromMeans, f.MeasuredDecodeMS, f.TargetDecodeMS, f.PredictedDecodeMS)
	for _, n := range f.Notes {
		fmt.Fprintf(w, "- %s\n", n)
	}
	if len(f.Holdouts) > 0 {
		fmt.Fprintln(w, "\n| stage | metric | measured | predicted | error |\n|---|---|---|---|---|")
		for _, h := range f.Holdouts {
			fmt.Fprintf(w, "| %d | %s | %.2f | %.2f | %+.1f%% |\n", h.Stage, h.Metric, h.Meas, h.Pred, h.Error)
		}
	}
}

func stageLabelText(stage int) string {
	if stage < 0 {
		return "(whole run)"
	}
	return fmt.Sprintf("stage %d", stage)
}
