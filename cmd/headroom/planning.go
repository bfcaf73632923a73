package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/headroom-sim/headroom/catalogs"
	"github.com/headroom-sim/headroom/internal/study/plan"
	"github.com/headroom-sim/headroom/internal/study/scenario"
)

// planFlags are the scenario flags shared by the planning commands.
type planFlags struct {
	scenarioFlags
	format   string
	progress bool
	plotDir  string
}

func (p *planFlags) register(fs *flag.FlagSet, formats string) {
	p.scenarioFlags.register(fs)
	fs.StringVar(&p.format, "output", "table", "output format: "+formats)
	fs.BoolVar(&p.progress, "progress", false, "print a progress bar to stderr")
	fs.StringVar(&p.plotDir, "plot-dir", "", "write SVG plots into this directory")
}

// emit finishes a planning command: maps its error, writes its charts, and
// prints the result as JSON or through table.
func (p *planFlags) emit(e *env, res any, err error, table func(io.Writer) error) error {
	if err != nil {
		return scenarioError(err)
	}
	if err := writePlots(p, res); err != nil {
		return err
	}
	if p.format == "json" {
		return writeJSON(e.stdout, res)
	}
	return table(e.stdout)
}

// parse parses the command's flags (no positional arguments), checks the
// output format, and builds the runner and the base scenario.
func (p *planFlags) parse(e *env, fs *flag.FlagSet, args []string, formats ...string) (*plan.Runner, scenario.Scenario, error) {
	pos, err := parseFlags(fs, args, e.stdout)
	if err != nil {
		return nil, scenario.Scenario{}, err
	}
	if len(pos) > 0 {
		return nil, scenario.Scenario{}, usagef("unexpected argument %q", pos[0])
	}
	if !slices.Contains(formats, p.format) {
		return nil, scenario.Scenario{}, usagef("--output: %q is not %s", p.format, strings.Join(formats, ", "))
	}
	cat, err := loadCatalog(e, p.catalogDir)
	if err != nil {
		return nil, scenario.Scenario{}, err
	}
	env, sc, err := loadScenarioOnly(e, cat, &p.scenarioFlags)
	if err != nil {
		return nil, scenario.Scenario{}, err
	}
	return &plan.Runner{Env: env}, *sc, nil
}

// requireSLA refuses a scenario without an SLA.
func requireSLA(sc scenario.Scenario) error {
	if sc.SLA == nil {
		return usagef("sla: the scenario needs an sla (e.g. --set sla.ttft_ms.p99=1000 --set sla.tpot_ms.p99=150)")
	}
	return nil
}

func parseFloats(flag, s string) ([]float64, error) {
	var out []float64
	for _, f := range strings.Split(s, ",") {
		v, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
		if err != nil || !(v > 0) {
			return nil, usagef("--%s: %q is not a positive number", flag, f)
		}
		out = append(out, v)
	}
	return out, nil
}

// parseGPUs resolves a comma-separated list of GPU ids or aliases to
// catalog ids (nil for an empty list).
func parseGPUs(cat *catalogs.Catalog, flag, s string) ([]string, error) {
	if s == "" {
		return nil, nil
	}
	var out []string
	for _, id := range strings.Split(s, ",") {
		g, err := cat.GPU(strings.TrimSpace(id))
		if err != nil {
			return nil, usagef("--%s: %v", flag, err)
		}
		out = append(out, g.ID)
	}
	return out, nil
}

func parseInts(flag, s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		v, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || v < 1 {
			return nil, usagef("--%s: %q is not a positive integer", flag, f)
		}
		out = append(out, v)
	}
	return out, nil
}

func runSweep(ctx context.Context, e *env, args []string) error {
	var p planFlags
	var axes setFlags
	var list bool
	fs := newFlagSet("sweep")
	p.register(fs, "table|csv|json")
	fs.Var(&axes, "axis", "swept field and values: --axis engine.max_num_seqs=32,64,128 (repeatable; values in YAML syntax, mappings too: --axis 'disaggregation=null,{decode: {gpu: h200}}')")
	fs.BoolVar(&list, "list", false, "pair the axes' values index by index instead of crossing them")
	r, sc, err := p.parse(e, fs, args, "table", "csv", "json")
	if err != nil {
		return err
	}
	if len(axes) == 0 {
		return usagef("--axis: give at least one swept field, e.g. --axis engine.max_num_seqs=32,64,128")
	}
	spec := plan.SweepSpec{Scenario: sc, List: list}
	for _, a := range axes {
		path, vals, ok := strings.Cut(a, "=")
		if !ok || path == "" || vals == "" {
			return usagef("--axis: %q is not path=v1,v2,...", a)
		}
		ax := plan.Axis{Path: path}
		for _, v := range splitValues(vals) {
			o, err := scenario.ParseOverride(path + "=" + v)
			if err != nil {
				return usagef("--axis %s: %v", path, err)
			}
			ax.Values = append(ax.Values, o.Value)
		}
		spec.Axes = append(spec.Axes, ax)
	}
	res, err := r.Sweep(ctx, spec, progressBar(e.stderr, p.progress, "sweep"))
	return p.emit(e, res, err, func(w io.Writer) error {
		if p.format == "csv" {
			return res.WriteCSV(w)
		}
		writeSweepTable(w, res)
		return nil
	})
}

// splitValues splits an --axis list at its top-level commas, so that a
// value may be a YAML mapping or sequence with commas of its own
// ("null,{prefill: {replicas: 1}, decode: {replicas: 2}}").
func splitValues(s string) []string {
	var out []string
	depth, start := 0, 0
	for i, c := range s {
		switch c {
		case '{', '[':
			depth++
		case '}', ']':
			depth--
		case ',':
			if depth == 0 {
				out = append(out, s[start:i])
				start = i + 1
			}
		}
	}
	return append(out, s[start:])
}

// sweepColumns are the metrics the sweep table shows.
var sweepColumns = []string{"throughput.requests_per_s", "throughput.output_tokens_per_s", "ttft_ms.p50", "ttft_ms.p99", "tpot_ms.p50", "tpot_ms.p99", "e2e_ms.p99", "preemptions", "kv_cache.peak_usage_ratio"}

func writeSweepTable(w io.Writer, res *plan.SweepResult) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	idx := map[string]int{}
	for i, c := range res.Columns {
		idx[c] = i
	}
	head := append(append([]string{}, res.Axes...), sweepColumns...)
	fmt.Fprintln(tw, strings.Join(head, "\t")+"\t")
	for _, pt := range res.Points {
		var cells []string
		for _, v := range pt.Values {
			cells = append(cells, fmt.Sprint(v))
		}
		if pt.Error != "" {
			cells = append(cells, "error: "+pt.Error)
			fmt.Fprintln(tw, strings.Join(cells, "\t")+"\t")
			continue
		}
		for _, c := range sweepColumns {
			if i, ok := idx[c]; ok && i < len(pt.Metrics) {
				cells = append(cells, strconv.FormatFloat(pt.Metrics[i], 'f', 2, 64))
			}
		}
		fmt.Fprintln(tw, strings.Join(cells, "\t")+"\t")
	}
	tw.Flush()
	writeSpeculationVerdict(w, "in the base scenario", res.Speculation)
}

func runCurve(ctx context.Context, e *env, args []string) error {
	var p planFlags
	var rates, concs string
	var step float64
	fs := newFlagSet("curve")
	p.register(fs, "table|json")
	fs.StringVar(&rates, "rates", "", "staircase of arrival rates, req/s: 1,2,4,8")
	fs.StringVar(&concs, "concurrencies", "", "staircase of closed-loop concurrencies: 1,4,16,64")
	fs.Float64Var(&step, "step-duration-s", 60, "seconds per step")
	r, sc, err := p.parse(e, fs, args, "table", "json")
	if err != nil {
		return err
	}
	if (rates == "") == (concs == "") {
		return usagef("--rates or --concurrencies: give one of them")
	}
	spec := plan.CurveSpec{Scenario: sc, StepDurationS: step}
	if rates != "" {
		if spec.RatesRPS, err = parseFloats("rates", rates); err != nil {
			return err
		}
	} else if spec.Concurrencies, err = parseInts("concurrencies", concs); err != nil {
		return err
	}
	res, err := r.Curve(ctx, spec, progressBar(e.stderr, p.progress, "curve"))
	return p.emit(e, res, err, func(w io.Writer) error {
		writeCurveTable(w, res)
		return nil
	})
}

func writeCurveTable(w io.Writer, res *plan.CurveResult) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "%s\treq/s\tout tok/s\tTTFT p50\tTTFT p99\tTPOT p50\tTPOT p99\tE2E p99\tsla\tknee\t\n", res.Dimension)
	for _, pt := range res.Points {
		sla := "-"
		if pt.SLAMet != nil {
			sla = map[bool]string{true: "met", false: "MISSED"}[*pt.SLAMet]
		}
		knee := ""
		if pt.Knee {
			knee = "<- knee"
		}
		fmt.Fprintf(tw, "%g\t%.2f\t%.0f\t%.0f\t%s\t%.1f\t%s\t%s\t%s\t%s\t\n", pt.Load, pt.ThroughputRPS, pt.OutputTokensPerS, pt.TTFTMS.P50,
			withBand(pt.TTFTMS.P99, pt.TTFTMSInterval.At("p99"), "%.0f"), pt.TPOTMS.P50, withBand(pt.TPOTMS.P99, pt.TPOTMSInterval.At("p99"), "%.1f"),
			withBand(pt.E2EMS.P99, pt.E2EMSInterval.At("p99"), "%.0f"), sla, knee)
	}
	tw.Flush()
	if res.Knee >= 0 {
		fmt.Fprintf(w, "\nKnee: %g (%s)\n", res.Points[res.Knee].Load, res.KneeReason)
	}
	fmt.Fprintln(w, "p99 columns: the point value (80% band of what a benchmark would measure, each step judged at its own load)")
}

func runMaxLoad(ctx context.Context, e *env, args []string) error {
	var p planFlags
	var maxProbes int
	var tol float64
	var bands bool
	fs := newFlagSet("maxload")
	p.register(fs, "table|json")
	fs.IntVar(&maxProbes, "max-probes", 24, "most simulations to run")
	fs.Float64Var(&tol, "tolerance", 0.02, "relative precision of the answer")
	fs.BoolVar(&bands, "bands", true, "also search the answer's error band (up to --max-probes/2 more simulations for each of its four ends; =false skips it)")
	r, sc, err := p.parse(e, fs, args, "table", "json")
	if err != nil {
		return err
	}
	if err := requireSLA(sc); err != nil {
		return err
	}
	res, err := r.MaxLoad(ctx, plan.LoadSpec{Scenario: sc, MaxProbes: maxProbes, Tolerance: tol, SkipBands: !bands}, plan.NewProgress(1, progressBar(e.stderr, p.progress, "search")))
	return p.emit(e, res, err, func(w io.Writer) error {
		writeLoadTable(w, res)
		return nil
	})
}

func writeLoadTable(w io.Writer, res *plan.LoadResult) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "%s\tSLA\tgoodput req/s\treq/s\tout tok/s\tlimiting\t\n", res.Dimension)
	for _, pr := range res.Probes {
		fmt.Fprintf(tw, "%.3g\t%s\t%.2f\t%.2f\t%.0f\t%s\t\n", pr.Load, map[bool]string{true: "met", false: "MISSED"}[pr.Met], pr.GoodputRPS, pr.ThroughputRPS, pr.OutputTokensS, pr.Limiting)
	}
	tw.Flush()
	if res.MaxLoad == 0 && res.Reason != "" {
		fmt.Fprintf(w, "\nNo sustainable %s: %s\n", res.Dimension, res.Reason)
		return
	}
	fmt.Fprintf(w, "\nMax sustainable %s: %.3g (limited by %s); goodput knee at %.3g (%.2f req/s)\n", res.Dimension, res.MaxLoad, res.LimitingMetric, res.Knee.Load, res.Knee.GoodputRPS)
	if in := res.MaxLoadInterval; in != nil {
		fmt.Fprintf(w, "Its band: %.3g–%.3g at 80%%, %.3g–%.3g at 95%% (the SLA held with its figures at the ends of their error bands; 0: no load probed holds it)\n",
			in.P80[0], in.P80[1], in.P95[0], in.P95[1])
	}
}

func runCompare(ctx context.Context, e *env, args []string) error {
	var p planFlags
	var b, nameA, nameB string
	var bsets setFlags
	var keep bool
	fs := newFlagSet("compare")
	p.register(fs, "table|json")
	fs.StringVar(&b, "b", "", "scenario file for B (default: A with --b-set changes)")
	fs.Var(&bsets, "b-set", "change B: --b-set engine.max_num_seqs=64 (repeatable)")
	fs.StringVar(&nameA, "name-a", "A", "label of A")
	fs.StringVar(&nameB, "name-b", "B", "label of B")
	fs.BoolVar(&keep, "keep-workloads", false, "run each side on its own workload (not a fair comparison)")
	r, sa, err := p.parse(e, fs, args, "table", "json")
	if err != nil {
		return err
	}
	if b == "" && len(bsets) == 0 {
		return usagef("--b or --b-set: say what B changes")
	}
	fb := p.scenarioFlags
	fb.sets = append(append(setFlags{}, p.sets...), bsets...)
	if b != "" {
		fb = scenarioFlags{file: b, sets: bsets, catalogDir: p.catalogDir}
	}
	_, sb, err := loadScenarioOnly(e, r.Env.Catalog, &fb)
	if err != nil {
		return err
	}
	res, err := r.Compare(ctx, plan.CompareSpec{A: sa, B: *sb, NameA: nameA, NameB: nameB, KeepWorkloads: keep}, progressBar(e.stderr, p.progress, "compare"))
	return p.emit(e, res, err, func(w io.Writer) error {
		writeCompareTable(w, res)
		return nil
	})
}

var compareRows = []string{"throughput.requests_per_s", "throughput.output_tokens_per_s", "ttft_ms.p50", "ttft_ms.p99", "tpot_ms.p50", "tpot_ms.p99", "itl_ms.p99", "e2e_ms.p50", "e2e_ms.p99", "queue_ms.p99", "preemptions", "kv_cache.num_gpu_blocks", "kv_cache.peak_usage_ratio", "fluency.stalls", "goodput_rps"}

func writeCompareTable(w io.Writer, res *plan.CompareResult) {
	fmt.Fprintf(w, "%s vs %s, differing in:", res.NameA, res.NameB)
	for _, d := range res.Differences {
		fmt.Fprintf(w, " %s (%v → %v)", d.Path, d.A, d.B)
	}
	fmt.Fprintln(w)
	for _, n := range res.Notes {
		fmt.Fprintf(w, "note: %s\n", n)
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "metric\t%s\t%s\tdelta\tdelta %%\t\n", res.NameA, res.NameB)
	idx := map[string]plan.MetricDiff{}
	for _, m := range res.Metrics {
		idx[m.Name] = m
	}
	for _, name := range compareRows {
		if m, ok := idx[name]; ok {
			fmt.Fprintf(tw, "%s\t%.2f\t%.2f\t%+.2f\t%+.1f%%\t\n", name, m.A, m.B, m.Delta, m.DeltaPct)
		}
	}
	tw.Flush()
	if res.SLAA != nil && res.SLAB != nil {
		fmt.Fprintf(w, "\nSLA: %s %s, %s %s\n", res.NameA, verdict(res.SLAA.Met), res.NameB, verdict(res.SLAB.Met))
	}
}

func verdict(met bool) string {
	if met {
		return "met"
	}
	return "MISSED"
}

// writePlots writes the result's charts into --plot-dir, when it is given.
func writePlots(p *planFlags, v any) error {
	if p.plotDir == "" {
		return nil
	}
	if err := os.MkdirAll(p.plotDir, 0o755); err != nil {
		return err
	}
	return writePlotFiles(p.plotDir, v)
}
