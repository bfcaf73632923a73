package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"
	"text/tabwriter"

	"github.com/headroom-sim/headroom/catalogs"
	"github.com/headroom-sim/headroom/internal/adapter/measured"
	"github.com/headroom-sim/headroom/internal/study/replay"
	"github.com/headroom-sim/headroom/sim"
)

func runValidate(ctx context.Context, e *env, args []string) error {
	var runs setFlags
	var from, format, catalogDir, calibration string
	var logged bool
	var o runOverrides
	fs := newFlagSet("validate")
	fs.Var(&runs, "run", "measured run: a run folder (LLMServingSim, inference-sim, inference-perf results, llmperf, vllm bench sweep) or a benchmark result file; repeatable")
	fs.StringVar(&from, "runs-from", "", "replay every run folder found below this directory")
	fs.StringVar(&format, "output", "table", "output format: table|json|markdown")
	fs.StringVar(&catalogDir, "catalog-dir", "", "directory of extra catalog entries")
	fs.StringVar(&calibration, "calibration", "", "step-time profile to use instead of the GPU defaults")
	fs.BoolVar(&logged, "logged-blocks", false, "size the KV cache with the run's logged block count instead of the memory model")
	o.register(fs, true)
	pos, err := parseFlags(fs, args, e.stdout)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usagef("unexpected argument %q", pos[0])
	}
	if format != "table" && format != "json" && format != "markdown" {
		return usagef("--output: %q is not table, json or markdown", format)
	}
	found := 0
	if from != "" {
		dirs, err := findRuns(from)
		if err != nil {
			return usagef("--runs-from: %v", err)
		}
		runs = append(runs, dirs...)
		found = len(dirs)
	}
	if len(runs) == 0 {
		return usagef("give --run DIR or --runs-from DIR")
	}
	cat, err := loadCatalog(e, catalogDir)
	if err != nil {
		return err
	}
	opt := replay.Options{UseLoggedBlocks: logged, KernelDB: kernelDBs(cat).Load}
	if calibration != "" {
		p, err := loadProfileFile(calibration)
		if err != nil {
			return usagef("--calibration: %v", err)
		}
		opt.Profile = p
	}
	var comps []replay.Comparison
	for i, path := range runs {
		fromSearch := i >= len(runs)-found
		run, _, err := loadMeasured(path, &o, cat)
		if err != nil {
			var nf *needsFlagError
			if fromSearch && errors.As(err, &nf) {
				fmt.Fprintf(e.stderr, "headroom validate: skipped %s: %v\n", path, err)
				continue
			}
			return usagef("--run %s: %v", path, err)
		}
		cs, err := replayRun(ctx, run, cat, opt)
		if err != nil {
			return err
		}
		comps = append(comps, cs...)
	}
	if len(comps) == 0 {
		return usagef("--runs-from: no run below %s names its model and GPU; give --run DIR with --model and --gpu", from)
	}
	switch format {
	case "json":
		return writeJSON(e.stdout, comps)
	case "markdown":
		writeAccuracyMarkdown(e.stdout, comps)
	default:
		writeComparisonTable(e.stdout, comps)
	}
	return nil
}

// replayRun simulates each part of a run (replay.Parts) and compares it
// with what was measured.
func replayRun(ctx context.Context, run *measured.Run, cat *catalogs.Catalog, opt replay.Options) ([]replay.Comparison, error) {
	parts, err := replay.Parts(run, cat, opt, -1)
	if err != nil {
		return nil, scenarioError(err)
	}
	var out []replay.Comparison
	for i := range parts {
		rep, err := sim.Run(ctx, parts[i].Resolved.Config)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", parts[i].Name, err)
		}
		out = append(out, replay.ComparePart(run, &parts[i], rep))
	}
	return out, nil
}

func writeComparisonTable(w io.Writer, comps []replay.Comparison) {
	for _, c := range comps {
		version := c.EngineVersion
		if version == "" {
			version = "version not recorded"
		} else {
			version = "vLLM " + version
		}
		blocks := fmt.Sprintf("KV blocks predicted %d", c.PredictedBlocks)
		if c.LoggedBlocks > 0 {
			blocks = fmt.Sprintf("KV blocks logged %d, predicted %d", c.LoggedBlocks, c.PredictedBlocks)
		}
		fmt.Fprintf(w, "%s (%s on %s, %s, %d requests completed; %s)\n", c.Run, c.Model, c.GPU, version, c.Requests, blocks)
		if c.Basis == replay.BasisAggregate {
			fmt.Fprintln(w, "measured: the tool's summary of the benchmark")
		}
		for _, n := range c.Notes {
			fmt.Fprintf(w, "note: %s\n", n)
		}
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "metric\tmeasured\tpredicted\terror\t")
		for _, m := range c.Metrics {
			fmt.Fprintf(tw, "%s\t%.2f\t%.2f\t%+.1f%%\t\n", m.Name, m.Measured, m.Predicted, m.ErrorPct)
		}
		tw.Flush()
		fmt.Fprintln(w)
	}
}

// accuracyBars are the uncalibrated accuracy targets: |error| of every
// compared quantile (mean, p50, p90, p99) within these percentages.
var accuracyBars = map[string]float64{"ttft_ms": 30, "tpot_ms": 15, "e2e_ms": 15}

func writeAccuracyMarkdown(w io.Writer, comps []replay.Comparison) {
	fmt.Fprintln(w, "## Summary")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Worst absolute error over mean, p50, p90 and p99, per run and metric; the bar is 30% for TTFT and 15% for TPOT and E2E.")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| run | model | GPU | TTFT | TPOT | E2E | throughput | within the bars |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|")
	for _, c := range comps {
		ok := true
		var cells []string
		for _, metric := range []string{"ttft_ms", "tpot_ms", "e2e_ms"} {
			worst, any := 0.0, false
			for _, q := range replay.Quantiles {
				if m, ok := c.Get(metric + "." + q); ok {
					worst, any = math.Max(worst, math.Abs(m.ErrorPct)), true
				}
			}
			if worst > accuracyBars[metric] {
				ok = false
			}
			if !any {
				cells = append(cells, "—")
				continue
			}
			cells = append(cells, fmt.Sprintf("%.1f%%", worst))
		}
		r, _ := c.Get("throughput.requests_per_s")
		verdict := "yes"
		if !ok {
			verdict = "**no**"
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s | %+.1f%% | %s |\n", c.Run, c.Model, c.GPU, strings.Join(cells, " | "), r.ErrorPct, verdict)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "## Per run: measured / predicted (error)")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| run | vLLM | metric | mean | p50 | p90 | p99 |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|")
	for _, c := range comps {
		for _, metric := range []string{"ttft_ms", "tpot_ms", "e2e_ms"} {
			var cells []string
			for _, q := range replay.Quantiles {
				m, ok := c.Get(metric + "." + q)
				if !ok {
					cells = append(cells, "—")
					continue
				}
				cells = append(cells, fmt.Sprintf("%s / %s (%+.1f%%)", num(m.Measured), num(m.Predicted), m.ErrorPct))
			}
			fmt.Fprintf(w, "| %s | %s | %s | %s |\n", c.Run, c.EngineVersion, metric, strings.Join(cells, " | "))
		}
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| run | requests/s measured / predicted | output tokens/s measured / predicted | KV blocks logged / predicted |")
	fmt.Fprintln(w, "|---|---|---|---|")
	for _, c := range comps {
		r, _ := c.Get("throughput.requests_per_s")
		o, _ := c.Get("throughput.output_tokens_per_s")
		blocks := fmt.Sprintf("— / %d", c.PredictedBlocks)
		if c.LoggedBlocks > 0 {
			blocks = fmt.Sprintf("%d / %d", c.LoggedBlocks, c.PredictedBlocks)
		}
		fmt.Fprintf(w, "| %s | %.2f / %.2f (%+.1f%%) | %.0f / %.0f (%+.1f%%) | %s |\n", c.Run, r.Measured, r.Predicted, r.ErrorPct, o.Measured, o.Predicted, o.ErrorPct, blocks)
	}
}

func num(x float64) string {
	switch {
	case math.Abs(x) >= 1000:
		return fmt.Sprintf("%.0f", x)
	case math.Abs(x) >= 100:
		return fmt.Sprintf("%.1f", x)
	}
	return fmt.Sprintf("%.2f", x)
}
