package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/headroom-sim/headroom/catalogs"
	"github.com/headroom-sim/headroom/internal/adapter/measured"
	"github.com/headroom-sim/headroom/internal/study/accuracy"
	"github.com/headroom-sim/headroom/internal/study/replay"
)

// maxValidateWorkers bounds --workers.
const maxValidateWorkers = 256

// worstShown is how many of the worst closed-loop runs the outputs list,
// by TTFT and by TPOT error; failedShown how many that did not simulate.
const (
	worstShown  = 10
	failedShown = 20
)

// closedLoopTable is a table of closed-loop runs (one per row), replayed.
type closedLoopTable struct {
	path    string
	rows    int
	skipped int // rows whose model or GPU the catalog does not know
	unread  int // rows the reader skipped (said on stderr, row by row)
	results []replay.MeanResult
	wall    time.Duration
}

// splitTables separates the --run paths that are tables of closed-loop
// runs from the rest.
func splitTables(paths []string) (runs, tables []string) {
	for _, p := range paths {
		if st, err := os.Stat(p); err == nil && !st.IsDir() && measured.IsSiliconFile(os.DirFS(filepath.Dir(p)), filepath.Base(p)) {
			tables = append(tables, p)
		} else {
			runs = append(runs, p)
		}
	}
	return runs, tables
}

// replayTable reads a table of closed-loop runs and replays every row
// that names a catalog model and GPU. The engine flags apply to every
// row; --model, --gpu and --tp do not (each row names its own).
func replayTable(ctx context.Context, e *env, path string, o *runOverrides, cat *catalogs.Catalog, opt replay.MeanOptions, progress bool) (*closedLoopTable, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, usagef("--run %s: %v", path, err)
	}
	tab, err := measured.ReadSilicon(f, filepath.Base(path))
	f.Close()
	if err != nil {
		return nil, usagef("--run %s: %v", path, err)
	}
	rows := tab.Runs
	for _, s := range tab.Skipped {
		fmt.Fprintf(e.stderr, "headroom validate: %s: %s\n", path, s)
	}
	ov := o.overrides()
	ov.Model, ov.GPU, ov.TP = "", "", 0
	t := &closedLoopTable{path: path, rows: len(rows) + len(tab.Skipped), unread: len(tab.Skipped)}
	skipped := map[string]int{}
	var keep []*measured.Run
	for _, run := range rows {
		ov.Apply(run)
		if err := resolveRunNames(run, cat); err != nil {
			skipped[err.Error()]++
			t.skipped++
			continue
		}
		keep = append(keep, run)
	}
	reasons := make([]string, 0, len(skipped))
	for r := range skipped {
		reasons = append(reasons, r)
	}
	slices.Sort(reasons)
	for _, r := range reasons {
		fmt.Fprintf(e.stderr, "headroom validate: %s: skipped %d of %d rows: %s\n", path, skipped[r], len(rows), r)
	}
	if len(keep) == 0 {
		return nil, usagef("--run %s: no row names a catalog model and GPU", path)
	}
	if bar := progressBar(e.stderr, progress, "validate "+filepath.Base(path)); bar != nil {
		opt.Progress = func(done, total int) { bar(float64(done) / float64(total)) }
	}
	start := time.Now()
	t.results = replay.ReplayMeans(ctx, keep, cat, opt)
	t.wall = time.Since(start)
	if progress {
		fmt.Fprintf(e.stderr, "headroom validate: replayed %d closed-loop runs of %s in %s\n", len(keep), path, t.wall.Round(time.Second))
	}
	return t, nil
}

// grid is a table the outputs print either aligned (text) or as markdown.
type grid struct {
	head []string
	rows [][]string
}

func (g *grid) add(cells ...string) { g.rows = append(g.rows, cells) }

func (g *grid) text(w io.Writer) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join(g.head, "\t"))
	for _, r := range g.rows {
		fmt.Fprintln(tw, strings.Join(r, "\t"))
	}
	tw.Flush()
}

func (g *grid) markdown(w io.Writer) {
	cells := func(r []string) string {
		out := make([]string, len(r))
		for i, c := range r {
			out[i] = strings.ReplaceAll(c, "|", `\|`)
		}
		return strings.Join(out, " | ")
	}
	fmt.Fprintf(w, "| %s |\n", cells(g.head))
	fmt.Fprintf(w, "|%s\n", strings.Repeat("---|", len(g.head)))
	for _, r := range g.rows {
		fmt.Fprintf(w, "| %s |\n", cells(r))
	}
}

func absPct(v float64) string    { return fmt.Sprintf("%.1f%%", v) }
func signedPct(v float64) string { return fmt.Sprintf("%+.1f%%", v) }

// barsVerdict says whether a group's medians meet the bars, and which miss.
func barsVerdict(e replay.MeanErrors, ttftBar, tpotBar float64) string {
	var miss []string
	if !(e.TTFTMedian <= ttftBar) {
		miss = append(miss, "TTFT")
	}
	if !(e.TPOTMedian <= tpotBar) {
		miss = append(miss, "TPOT")
	}
	if len(miss) == 0 {
		return "yes"
	}
	return "no (" + strings.Join(miss, ", ") + ")"
}

// summaryGrid is the overall line and one line per (model, GPU).
func (t *closedLoopTable) summaryGrid() *grid {
	g := &grid{head: []string{"group", "runs", "TTFT signed median", "TTFT median |error|", "TTFT P90 |error|",
		"TPOT signed median", "TPOT median |error|", "TPOT P90 |error|", "within the bars"}}
	line := func(name string, e replay.MeanErrors, ttftBar, tpotBar float64) {
		if e.N == 0 {
			g.add(name, "0", "—", "—", "—", "—", "—", "—", "no run simulated")
			return
		}
		g.add(name, fmt.Sprint(e.N), signedPct(e.TTFTBias), absPct(e.TTFTMedian), absPct(e.TTFTP90),
			signedPct(e.TPOTBias), absPct(e.TPOTMedian), absPct(e.TPOTP90), barsVerdict(e, ttftBar, tpotBar))
	}
	line(fmt.Sprintf("all (bars %d%% / %d%%)", accuracy.OverallTTFTPct, accuracy.OverallTPOTPct), replay.SummarizeMeans(t.results), accuracy.OverallTTFTPct, accuracy.OverallTPOTPct)
	for _, gr := range replay.GroupMeans(t.results, false) {
		line(gr.Name(), gr.MeanErrors, accuracy.GroupTTFTPct, accuracy.GroupTPOTPct)
	}
	return g
}

// layoutGrid is one line per (model, GPU, layout).
func (t *closedLoopTable) layoutGrid() *grid {
	g := &grid{head: []string{"model", "GPU", "TP", "DP", "experts (moe_tp×moe_ep)", "runs",
		"TTFT signed median", "TTFT median |error|", "TPOT signed median", "TPOT median |error|"}}
	for _, gr := range replay.GroupMeans(t.results, true) {
		l := gr.Layout
		cells := []string{gr.Model, gr.GPU, fmt.Sprint(l.TP), fmt.Sprint(l.DP), fmt.Sprintf("%d×%d", l.MoETP, l.MoEEP), fmt.Sprint(gr.N)}
		if gr.N == 0 {
			cells = append(cells, "—", "—", "—", "—")
		} else {
			cells = append(cells, signedPct(gr.TTFTBias), absPct(gr.TTFTMedian), signedPct(gr.TPOTBias), absPct(gr.TPOTMedian))
		}
		if gr.Failed > 0 {
			cells[5] += fmt.Sprintf(" (+%d failed)", gr.Failed)
		}
		g.add(cells...)
	}
	return g
}

// worstGrid lists the runs with the largest TTFT (or TPOT) errors.
func (t *closedLoopTable) worstGrid(tpot bool) *grid {
	g := &grid{head: []string{"run", "model", "GPU", "layout", "ISL / OSL", "users",
		"TTFT measured / predicted ms", "TTFT error", "TPOT measured / predicted ms", "TPOT error"}}
	for _, i := range replay.WorstMeans(t.results, worstShown, tpot) {
		r := &t.results[i]
		a := r.Run.Aggregate
		g.add(r.Run.Name, r.Model, r.GPU, replay.RunLayout(r).String(), fmt.Sprintf("%.0f / %.0f", a.MeanInputTokens, a.MeanOutputTokens), fmt.Sprint(a.Concurrency),
			num(r.MeasuredTTFTMS)+" / "+num(r.TTFTMS), signedPct(100*r.TTFTError()), num(r.MeasuredTPOT)+" / "+num(r.TPOTMS), signedPct(100*r.TPOTError()))
	}
	return g
}

// failed lists the runs that did not simulate, up to failedShown.
func (t *closedLoopTable) failed() (lines []string, more int) {
	for i := range t.results {
		if r := &t.results[i]; r.Err != nil {
			if len(lines) == failedShown {
				more++
				continue
			}
			lines = append(lines, fmt.Sprintf("%s (%s on %s, %s): %v", r.Run.Name, r.Model, r.GPU, replay.RunLayout(r), r.Err))
		}
	}
	return lines, more
}

func (t *closedLoopTable) headline() string {
	e := replay.SummarizeMeans(t.results)
	s := fmt.Sprintf("%s (%s): %d closed-loop runs, %d simulated", t.path, measured.FormatSilicon, t.rows, e.N)
	if e.Failed > 0 {
		s += fmt.Sprintf(", %d did not", e.Failed)
	}
	if t.skipped > 0 {
		s += fmt.Sprintf(", %d skipped (model or GPU not in the catalog)", t.skipped)
	}
	if t.unread > 0 {
		s += fmt.Sprintf(", %d not read (each named with its reason on stderr)", t.unread)
	}
	return s
}

const closedLoopMeasured = "measured: the client's mean TTFT and TPOT of each run (fixed lengths, a closed loop of `users`); error = (predicted − measured) / measured"

func writeClosedLoopTable(w io.Writer, t *closedLoopTable) {
	fmt.Fprintln(w, t.headline())
	fmt.Fprintln(w, strings.ReplaceAll(closedLoopMeasured, "`", ""))
	fmt.Fprintln(w)
	t.summaryGrid().text(w)
	fmt.Fprintln(w)
	fmt.Fprintln(w, "per layout:")
	t.layoutGrid().text(w)
	fmt.Fprintln(w)
	fmt.Fprintf(w, "worst %d runs by TTFT error:\n", worstShown)
	t.worstGrid(false).text(w)
	fmt.Fprintln(w)
	fmt.Fprintf(w, "worst %d runs by TPOT error:\n", worstShown)
	t.worstGrid(true).text(w)
	if lines, more := t.failed(); len(lines) > 0 {
		fmt.Fprintln(w)
		fmt.Fprintln(w, "did not simulate:")
		for _, l := range lines {
			fmt.Fprintln(w, "  "+l)
		}
		if more > 0 {
			fmt.Fprintf(w, "  … and %d more\n", more)
		}
	}
	fmt.Fprintln(w)
}

func writeClosedLoopMarkdown(w io.Writer, t *closedLoopTable) {
	fmt.Fprintf(w, "## Closed-loop runs: %s\n\n", filepath.Base(t.path))
	fmt.Fprintf(w, "%s.\n\n", strings.Replace(t.headline(), t.path, "`"+filepath.Base(t.path)+"`", 1))
	fmt.Fprintf(w, "Measured: the client's mean TTFT and TPOT of each run (fixed lengths, a closed loop of `users`); error = (predicted − measured) / measured. "+
		"The bars: median |error| over all runs ≤ %d%% (TTFT) and ≤ %d%% (TPOT); per model and GPU ≤ %d%% and ≤ %d%%.\n\n",
		accuracy.OverallTTFTPct, accuracy.OverallTPOTPct, accuracy.GroupTTFTPct, accuracy.GroupTPOTPct)
	fmt.Fprintln(w, "### Per model and GPU")
	fmt.Fprintln(w)
	t.summaryGrid().markdown(w)
	fmt.Fprintln(w)
	fmt.Fprintln(w, "### Per layout")
	fmt.Fprintln(w)
	t.layoutGrid().markdown(w)
	fmt.Fprintln(w)
	fmt.Fprintf(w, "### The %d worst runs by TTFT error\n\n", worstShown)
	t.worstGrid(false).markdown(w)
	fmt.Fprintln(w)
	fmt.Fprintf(w, "### The %d worst runs by TPOT error\n\n", worstShown)
	t.worstGrid(true).markdown(w)
	if lines, more := t.failed(); len(lines) > 0 {
		fmt.Fprintln(w)
		fmt.Fprintln(w, "### Runs that did not simulate")
		fmt.Fprintln(w)
		for _, l := range lines {
			fmt.Fprintln(w, "- "+l)
		}
		if more > 0 {
			fmt.Fprintf(w, "- … and %d more\n", more)
		}
	}
}
