package main

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"sort"
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
	fs := newFlagSet("validate")
	fs.Var(&runs, "run", "measured run directory (LLMServingSim bench example or inference-sim ground truth); repeatable")
	fs.StringVar(&from, "runs-from", "", "replay every run directory found below this directory")
	fs.StringVar(&format, "output", "table", "output format: table|json|markdown")
	fs.StringVar(&catalogDir, "catalog-dir", "", "directory of extra catalog entries")
	fs.StringVar(&calibration, "calibration", "", "step-time profile to use instead of the GPU defaults")
	fs.BoolVar(&logged, "logged-blocks", false, "size the KV cache with the run's logged block count instead of the memory model")
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
	if from != "" {
		found, err := findRuns(from)
		if err != nil {
			return usagef("--runs-from: %v", err)
		}
		runs = append(runs, found...)
	}
	if len(runs) == 0 {
		return usagef("give --run DIR or --runs-from DIR")
	}
	cat, err := loadCatalog(e, catalogDir)
	if err != nil {
		return err
	}
	opt := replay.Options{UseLoggedBlocks: logged}
	if calibration != "" {
		p, err := loadProfileFile(calibration)
		if err != nil {
			return usagef("--calibration: %v", err)
		}
		opt.Profile = p
	}
	var comps []replay.Comparison
	for _, dir := range runs {
		run, err := loadRunDir(dir)
		if err != nil {
			return usagef("--run %s: %v", dir, err)
		}
		c, err := replayRun(ctx, run, cat, opt)
		if err != nil {
			return err
		}
		comps = append(comps, c)
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

func replayRun(ctx context.Context, run *measured.Run, cat *catalogs.Catalog, opt replay.Options) (replay.Comparison, error) {
	res, err := replay.Config(run, cat, opt)
	if err != nil {
		return replay.Comparison{}, scenarioError(err)
	}
	rep, err := sim.Run(ctx, res.Config)
	if err != nil {
		return replay.Comparison{}, fmt.Errorf("%s: %w", run.Name, err)
	}
	return replay.Compare(run, res, rep), nil
}

// loadRunDir detects a run directory's format and loads it.
func loadRunDir(dir string) (*measured.Run, error) {
	dir = filepath.Clean(dir)
	parent, base := filepath.Dir(dir), filepath.Base(dir)
	fsys := os.DirFS(parent)
	switch {
	case exists(filepath.Join(dir, "meta.json")) && exists(filepath.Join(dir, "requests.jsonl")):
		return measured.LoadLLMServingSim(fsys, base)
	case exists(filepath.Join(dir, "exp-config.yaml")) && exists(filepath.Join(dir, "otel_requests.csv")):
		return measured.LoadInferenceSim(fsys, base)
	}
	return nil, fmt.Errorf("not a run directory (want meta.json + requests.jsonl, or exp-config.yaml + otel_requests.csv)")
}

func exists(p string) bool { _, err := os.Stat(p); return err == nil }

// findRuns lists run directories below root, sorted.
func findRuns(root string) ([]string, error) {
	var out []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			return nil
		}
		if (exists(filepath.Join(p, "meta.json")) && exists(filepath.Join(p, "requests.jsonl"))) ||
			(exists(filepath.Join(p, "exp-config.yaml")) && exists(filepath.Join(p, "otel_requests.csv"))) {
			out = append(out, p)
			return filepath.SkipDir
		}
		return nil
	})
	sort.Strings(out)
	if err == nil && len(out) == 0 {
		err = fmt.Errorf("no run directories below %s", root)
	}
	return out, err
}

func writeComparisonTable(w io.Writer, comps []replay.Comparison) {
	for _, c := range comps {
		fmt.Fprintf(w, "%s (%s on %s, vLLM %s, %d requests; KV blocks logged %d, predicted %d)\n", c.Run, c.Model, c.GPU, c.EngineVersion, c.Requests, c.LoggedBlocks, c.PredictedBlocks)
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
			worst := 0.0
			for _, q := range replay.Quantiles {
				m, _ := c.Get(metric + "." + q)
				worst = math.Max(worst, math.Abs(m.ErrorPct))
			}
			if worst > accuracyBars[metric] {
				ok = false
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
				m, _ := c.Get(metric + "." + q)
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
