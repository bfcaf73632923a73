package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/headroom-sim/headroom/catalogs"
	"github.com/headroom-sim/headroom/internal/adapter/measured"
	"github.com/headroom-sim/headroom/internal/study/accuracy"
	"github.com/headroom-sim/headroom/internal/study/replay"
	"github.com/headroom-sim/headroom/sim"
	"github.com/headroom-sim/headroom/sim/engine"
)

func runValidate(ctx context.Context, e *env, args []string) error {
	var runs setFlags
	var from, format, catalogDir, calibration, plotFile string
	var logged, progress bool
	var workers int
	var acceptance float64
	var o runOverrides
	fs := newFlagSet("validate")
	fs.Float64Var(&acceptance, "acceptance-rate", -1, "replay runs that speculate at this conditional draft acceptance (engine.speculative.acceptance.rate; default: the method's published default, with its warning)")
	fs.Var(&runs, "run", "measured run: a run folder (LLMServingSim, inference-sim, inference-perf results, llmperf, vllm bench sweep), a benchmark result file or a table of closed-loop runs (aiconfigurator-silicon CSV); repeatable")
	fs.StringVar(&from, "runs-from", "", "replay every run folder and closed-loop table found below this directory")
	fs.StringVar(&format, "output", "table", "output format: table|json|markdown")
	fs.StringVar(&catalogDir, "catalog-dir", "", "directory of extra catalog entries")
	fs.StringVar(&calibration, "calibration", "", "step-time profile to use instead of the GPU defaults")
	fs.BoolVar(&logged, "logged-blocks", false, "size the KV cache with the run's logged block count instead of the memory model")
	fs.StringVar(&plotFile, "plot", "", "write the closed-loop runs' predicted-vs-measured chart to this SVG file")
	fs.BoolVar(&progress, "progress", false, "print a progress bar of the closed-loop replays to stderr")
	fs.IntVar(&workers, "workers", 0, "closed-loop runs simulated in parallel (0 = one per CPU)")
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
	if workers < 0 || workers > maxValidateWorkers {
		return usagef("--workers: %d is not in [0, %d]", workers, maxValidateWorkers)
	}
	var tables []string
	runs, tables = splitTables(runs)
	found := 0
	if from != "" {
		dirs, tabs, err := findRunsAndTables(from)
		if err != nil {
			return usagef("--runs-from: %v", err)
		}
		runs = append(runs, dirs...)
		tables = append(tables, tabs...)
		found = len(dirs)
	}
	if len(runs) == 0 && len(tables) == 0 {
		return usagef("give --run DIR or --runs-from DIR")
	}
	if plotFile != "" {
		if len(tables) == 0 {
			return usagef("--plot: no table of closed-loop runs among the runs (the chart shows their means)")
		}
		// Before minutes of replays, not after.
		if st, err := os.Stat(filepath.Dir(plotFile)); err != nil || !st.IsDir() {
			return usagef("--plot: %s: no such directory", filepath.Dir(plotFile))
		}
	}
	cat, err := loadCatalog(e, catalogDir)
	if err != nil {
		return err
	}
	opt := replay.Options{UseLoggedBlocks: logged, KernelDB: kernelDBs(cat).Load}
	if given := givenFlags(fs); given["acceptance-rate"] {
		if !(acceptance >= 0 && acceptance <= 1) {
			return usagef("--acceptance-rate: %g is not in [0, 1]", acceptance)
		}
		opt.Acceptance = &engine.Acceptance{Rate: &acceptance, Source: "headroom validate --acceptance-rate"}
	}
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
	var closed []closedLoopTable
	for _, path := range tables {
		t, err := replayTable(ctx, e, path, &o, cat, replay.MeanOptions{Options: opt, Workers: workers}, progress)
		if err != nil {
			return err
		}
		closed = append(closed, *t)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if len(comps) == 0 && len(closed) == 0 {
		return usagef("--runs-from: no run below %s names its model and GPU; give --run DIR with --model and --gpu", from)
	}
	if plotFile != "" {
		if err := writeAccuracyPlot(plotFile, closed); err != nil {
			return fmt.Errorf("--plot: %w", err)
		}
	}
	switch format {
	case "json":
		for _, t := range closed {
			for i := range t.results {
				comps = append(comps, t.results[i].Comparison())
			}
		}
		return writeJSON(e.stdout, comps)
	case "markdown":
		if len(comps) > 0 {
			writeAccuracyMarkdown(e.stdout, comps)
		}
		for i := range closed {
			if len(comps) > 0 || i > 0 {
				fmt.Fprintln(e.stdout)
			}
			writeClosedLoopMarkdown(e.stdout, &closed[i])
		}
	default:
		writeComparisonTable(e.stdout, comps)
		for i := range closed {
			writeClosedLoopTable(e.stdout, &closed[i])
		}
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

func writeAccuracyMarkdown(w io.Writer, comps []replay.Comparison) {
	fmt.Fprintln(w, "## Runs replayed request by request")
	fmt.Fprintln(w)
	fmt.Fprintf(w, "Worst absolute error over mean, p50, p90 and p99, per run and metric; the bar is %.0f%% for TTFT and %.0f%% for TPOT and E2E.\n",
		accuracy.RunBars["ttft_ms"], accuracy.RunBars["tpot_ms"])
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| run | model | GPU | TTFT | TPOT | E2E | throughput | within the bars |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|")
	for _, c := range comps {
		var cells []string
		for _, metric := range accuracy.RunMetrics {
			worst, n := accuracy.RunWorst(&c, metric)
			if n == 0 {
				cells = append(cells, "—")
				continue
			}
			cells = append(cells, fmt.Sprintf("%.1f%%", worst))
		}
		r, _ := c.Get("throughput.requests_per_s")
		verdict := "yes"
		if !accuracy.MeetsRunBars(&c) {
			verdict = "**no**"
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s | %+.1f%% | %s |\n", c.Run, c.Model, c.GPU, strings.Join(cells, " | "), r.ErrorPct, verdict)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "### Per run: measured / predicted (error)")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| run | vLLM | metric | mean | p50 | p90 | p99 |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|")
	for _, c := range comps {
		for _, metric := range accuracy.RunMetrics {
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
