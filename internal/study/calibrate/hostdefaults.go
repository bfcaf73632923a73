package calibrate

import (
	"context"
	"fmt"
	"io/fs"
	"math"
	"path"
	"strings"

	"github.com/headroom-sim/headroom/catalogs"
	"github.com/headroom-sim/headroom/hardware"
	"github.com/headroom-sim/headroom/internal/adapter/kerneldb"
	"github.com/headroom-sim/headroom/internal/adapter/measured"
	"github.com/headroom-sim/headroom/internal/study/replay"
	"github.com/headroom-sim/headroom/sim/steptime"
)

// The default host costs (sim/steptime/profiles/host.json) are
// FitHostDefaults's joint fit, and internal/study/calibrate/testdata/
// host-families.json its table of fits scored on every family;
// cmd/headroom-fit writes both and CheckHostDefaults checks them.

// JointHostSource is the Source of the host costs FitHostDefaults fits to
// every family at once.
const JointHostSource = "fitted by calibrate.FitHostFamilies to every family of measured runs at once (the closed loops' fit half, every fourth run); the request path's sourced coefficients (docs/request-path.md) kept at their sources' values"

// Rows of the host-families table: the start, the fit on every family
// (the defaults), and the committed defaults scored as they are (the
// joint row of a table refitted per family only, HostFamiliesOnly).
const (
	FitOnStart   = "none (sourced start)"
	FitOnAll     = "all"
	FitOnDefault = "all (host.json, the default)"
)

// Which fits FitHostDefaults runs.
const (
	// HostJoint fits every family together only: the defaults, with the
	// start's row (HEADROOM_FIT_HOST=joint).
	HostJoint = "joint"
	// HostAll fits each family alone too (HEADROOM_FIT_HOST=1).
	HostAll = "all"
	// HostFamiliesOnly fits each family alone from the committed
	// defaults and scores those as the joint row, keeping host.json and
	// the start's row of the committed table (HEADROOM_FIT_HOST=families).
	HostFamiliesOnly = "families"
	// HostRescore searches nothing: the committed table's rows re-scored
	// with today's code (RescoreHostTable), host.json kept.
	HostRescore = "rescore"
)

// SourcedHost is the host costs' starting point: the fitted coefficients
// of the embedded host.json with every sourced one at its source's value
// (docs/accuracy.md lists them).
func SourcedHost() steptime.Host {
	h := steptime.HostCosts()
	f := &h.Frontend
	f.PerPromptTokenUS, f.TokenizerWindowUS, f.TokenizerBatch = 1, 2000, 32
	f.RequestUS, f.RequestSigma = 1200, 0.3
	f.PerOutputTokenUS = 10
	f.ClientReceiveUS, f.TurnaroundUS, f.ClientSigma = 200, 1000, 0.3
	if h.CPUV0 == (steptime.CPUCoeffs{}) {
		// The V0 engine's: RFC #6854 measured 5-13 ms of CPU between V0's
		// decode steps; 60 µs a sequence at the 128 of the stepped V0 run,
		// none of it hidden (its output processing overlaps the GPU only
		// partly: the fit moves the per-sequence cost).
		h.CPUV0 = steptime.CPUCoeffs{StepOverheadUS: h.CPU.StepOverheadUS, PerSeqOverheadUS: 60, PerPrefillOverheadUS: h.CPU.PerPrefillOverheadUS}
	}
	return h
}

// KernelOptions replays runs on the built-in kernel tables of the catalog's
// GPUs.
func KernelOptions(cat *catalogs.Catalog) replay.Options {
	p := &kerneldb.Provider{BuiltIn: catalogs.Kernels(), GPU: func(sys string) (*hardware.GPU, bool) {
		g, err := cat.GPU(sys)
		return g, err == nil
	}}
	return replay.Options{KernelDB: p.Load}
}

// siliconTable is the closed-loop family's table under the reference data.
const siliconTable = "measured/aiconfigurator-silicon/silicon_vllm_agg.csv"

// SiliconRuns reads the measured closed-loop runs (fsys rooted at
// ../shared/data).
func SiliconRuns(fsys fs.FS) ([]*measured.Run, error) {
	f, err := fsys.Open(siliconTable)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	tab, err := measured.ReadSilicon(f, path.Base(siliconTable))
	if err != nil {
		return nil, err
	}
	return tab.Runs, nil
}

// HostCases are the families' cases the host defaults are fitted and
// scored on: the closed-loop family split by HostSplit into its fit half,
// thinned to every fourth run for time, and its check half.
type HostCases struct {
	FitClosed, CheckClosed, Others []Case
}

// LoadHostCases loads every family's cases from fsys (rooted at
// ../shared/data) and splits the closed loops.
func LoadHostCases(fsys fs.FS, cat *catalogs.Catalog) (*HostCases, error) {
	cases, err := LoadCases(fsys, cat, KernelOptions(cat), Families)
	if err != nil {
		return nil, err
	}
	runs, err := SiliconRuns(fsys)
	if err != nil {
		return nil, err
	}
	fit, _ := HostSplit(runs)
	inFit, fitAll := map[string]bool{}, map[string]bool{}
	for i, r := range fit {
		fitAll[r.Name] = true
		if i%4 == 0 {
			inFit[r.Name] = true
		}
	}
	hc := &HostCases{}
	for _, c := range cases {
		switch {
		case c.Family != FamilyClosedLoop:
			hc.Others = append(hc.Others, c)
		case inFit[c.Name]:
			hc.FitClosed = append(hc.FitClosed, c)
		case !fitAll[c.Name]:
			hc.CheckClosed = append(hc.CheckClosed, c)
		}
	}
	return hc, nil
}

// Check is what every fit is scored on: the closed loops' check half and
// every other family whole.
func (hc *HostCases) Check() []Case {
	return append(append([]Case{}, hc.CheckClosed...), hc.Others...)
}

// HostFitSet is the cases one row of the table is fitted on.
type HostFitSet struct {
	Name  string
	Cases []Case
}

// FitSets are the table's fits in order: on each family alone (closed
// loops: their thinned fit half) and on all of them (FitOnAll, the
// defaults).
func (hc *HostCases) FitSets() []HostFitSet {
	by := map[string][]Case{FamilyClosedLoop: hc.FitClosed}
	for _, c := range hc.Others {
		by[c.Family] = append(by[c.Family], c)
	}
	all := append([]Case{}, hc.FitClosed...)
	for _, fam := range []string{FamilyOpenLoop, FamilyStepped, FamilyRequestLevel} {
		all = append(all, by[fam]...)
	}
	return []HostFitSet{
		{FamilyClosedLoop, by[FamilyClosedLoop]},
		{FamilyOpenLoop, by[FamilyOpenLoop]},
		{FamilyStepped, by[FamilyStepped]},
		{FitOnAll, all},
	}
}

// HostDefaultsOptions say which fits FitHostDefaults runs.
type HostDefaultsOptions struct {
	// Mode is HostJoint (the zero value), HostAll or HostFamiliesOnly.
	Mode string
	// Previous is the committed table: HostFamiliesOnly keeps its start's
	// row.
	Previous []FamilyRow
	// MaxEvals caps each fit's evaluations (0: 40).
	MaxEvals int
	// Progress, when not nil, sees every evaluation of the fit named.
	Progress func(fitOn string, h HostFit)
}

// FitHostDefaults fits the host costs from SourcedHost on hc.FitSets (as
// opt.Mode says) and scores the start and every fit on hc.Check. The
// defaults are the FitOnAll fit with its Source set; with
// HostFamiliesOnly there are none (nil: host.json stays).
func FitHostDefaults(ctx context.Context, hc *HostCases, opt HostDefaultsOptions) ([]FamilyRow, *steptime.Host, error) {
	maxEvals := opt.MaxEvals
	if maxEvals <= 0 {
		maxEvals = 40
	}
	switch opt.Mode {
	case "", HostJoint, HostAll, HostFamiliesOnly:
	default:
		return nil, nil, fmt.Errorf("host fit: no mode %q (want %s, %s or %s)", opt.Mode, HostJoint, HostAll, HostFamiliesOnly)
	}
	check := hc.Check()
	start := SourcedHost()
	score := func(name string, h steptime.Host, loss float64) FamilyRow {
		return FamilyRow{FitOn: name, Host: h, Loss: loss, Figures: Summarize(EvaluateHost(ctx, check, h, 0))}
	}
	var rows []FamilyRow
	if opt.Mode == HostFamiliesOnly {
		// The per-family fits start from the committed default, scored
		// as it is: the table without refitting host.json.
		if len(opt.Previous) > 0 && strings.HasPrefix(opt.Previous[0].FitOn, "none") {
			rows = append(rows, opt.Previous[0])
		}
		rows = append(rows, score(FitOnDefault, start, 0))
	} else {
		rows = append(rows, score(FitOnStart, start, 0))
	}
	var joint *HostFit
	for _, f := range hc.FitSets() {
		isAll := f.Name == FitOnAll
		if (opt.Mode == HostFamiliesOnly && isAll) || ((opt.Mode == "" || opt.Mode == HostJoint) && !isAll) {
			continue
		}
		res, err := FitHostFamilies(ctx, f.Cases, start, maxEvals, func(h HostFit) {
			if opt.Progress != nil {
				opt.Progress(f.Name, h)
			}
		})
		if err != nil {
			return nil, nil, fmt.Errorf("fit on %s: %w", f.Name, err)
		}
		rows = append(rows, score(f.Name, res.Host, res.Loss))
		if isAll {
			joint = res
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	if joint == nil {
		return rows, nil, nil
	}
	h := joint.Host
	h.Source = JointHostSource
	return rows, &h, nil
}

// hostLossTolerance bounds how far the joint fit's loss, re-evaluated with
// the rounded coefficients host.json holds, may sit from the loss the
// search recorded at its unrounded ones (three significant figures move a
// coefficient by at most 0.5%).
const hostLossTolerance = 0.02

// CheckHostDefaults verifies host (the committed host.json) and rows (the
// committed host-families.json) without re-running the search: host is
// the FitOnAll row's fit, every row's figures are what its host costs
// score on hc.Check today, and the joint fit's loss on its cases is the
// recorded one (within hostLossTolerance, relative). It takes one
// evaluation of the check cases per row and one of the fit cases, and
// returns the re-evaluated loss (0 when the joint row records none).
func CheckHostDefaults(ctx context.Context, hc *HostCases, rows []FamilyRow, host steptime.Host) (float64, error) {
	var joint *FamilyRow
	for i := range rows {
		if IsDefaultRow(rows[i].FitOn) {
			joint = &rows[i]
		}
	}
	if joint == nil {
		return 0, fmt.Errorf("host-families: no row of the defaults (%q, or one marked \"(host.json, the default)\")", FitOnAll)
	}
	a, b := host, joint.Host
	a.Source, b.Source = "", ""
	if a != b {
		return 0, fmt.Errorf("host.json is not host-families' %q row:\n  host.json: %+v\n  table:     %+v", joint.FitOn, a, b)
	}
	check := hc.Check()
	var stale []string
	for _, r := range rows {
		got := Summarize(EvaluateHost(ctx, check, r.Host, 0))
		if err := sameFigures(got, r.Figures); err != nil {
			stale = append(stale, fmt.Sprintf("fit on %s: %v", r.FitOn, err))
		}
	}
	if len(stale) > 0 {
		return 0, fmt.Errorf("host-families: %d of %d rows do not re-score as recorded:\n    %s", len(stale), len(rows), strings.Join(stale, "\n    "))
	}
	fitOn, _, _ := strings.Cut(joint.FitOn, " (")
	var fitCases []Case
	for _, f := range hc.FitSets() {
		if f.Name == fitOn {
			fitCases = f.Cases
		}
	}
	if joint.Loss == 0 || fitCases == nil {
		return 0, ctx.Err() // the defaults scored as they are, not a fit: no loss to re-evaluate
	}
	l := FamilyLoss(EvaluateHost(ctx, fitCases, host, 0))
	if math.Abs(l-joint.Loss) > hostLossTolerance*joint.Loss {
		return l, fmt.Errorf("host.json's loss on the joint fit's %d cases is %.5f, the table records %.5f (more than %.0f%% apart)", len(fitCases), l, joint.Loss, 100*hostLossTolerance)
	}
	return l, ctx.Err()
}

// IsDefaultRow says whether a row of the table is the defaults: the
// joint fit (FitOnAll), the defaults scored as they are (FitOnDefault),
// or any fit the table marks "(host.json, the default)".
func IsDefaultRow(fitOn string) bool {
	return fitOn == FitOnAll || fitOn == FitOnDefault || strings.Contains(fitOn, "(host.json, the default)")
}

// sameFigures compares figures as re-scored with as recorded: counts
// exactly, errors to 1e-9 relative (a loss sums in map order).
func sameFigures(got, want []FamilyFigures) error {
	if len(got) != len(want) {
		return fmt.Errorf("%d families scored, %d recorded", len(got), len(want))
	}
	near := func(x, y float64) bool { return math.Abs(x-y) <= 1e-9*math.Max(math.Abs(x), math.Abs(y)) }
	for i, g := range got {
		w := want[i]
		if g.Family != w.Family || g.N != w.N || g.Failed != w.Failed || len(g.Metrics) != len(w.Metrics) {
			return fmt.Errorf("%s: %d cases (%d failed), %d metrics; recorded %s: %d (%d), %d", g.Family, g.N, g.Failed, len(g.Metrics), w.Family, w.N, w.Failed, len(w.Metrics))
		}
		if !near(g.Loss, w.Loss) {
			return fmt.Errorf("%s: loss %.6g, recorded %.6g", g.Family, g.Loss, w.Loss)
		}
		for name, m := range g.Metrics {
			r, ok := w.Metrics[name]
			if !ok || m.N != r.N || !near(m.MedianAbsPct, r.MedianAbsPct) || !near(m.MedianPct, r.MedianPct) || !near(m.WorstPct, r.WorstPct) {
				return fmt.Errorf("%s %s: scored %+v, recorded %+v", g.Family, name, m, r)
			}
		}
	}
	return nil
}

// The markers around docs/host-costs.md's generated table.
const (
	HostDocBegin = "<!-- BEGIN GENERATED from internal/study/calibrate/testdata/host-families.json by go test ./internal/study/calibrate -run TestHostCostsDoc -update -->"
	HostDocEnd   = "<!-- END GENERATED -->"
)

// SpliceFamilyTable replaces docs/host-costs.md's generated table (doc
// between HostDocBegin and HostDocEnd) with FamilyTable(rows).
func SpliceFamilyTable(doc string, rows []FamilyRow) (string, error) {
	i, j := strings.Index(doc, HostDocBegin), strings.Index(doc, HostDocEnd)
	if i < 0 || j < i {
		return "", fmt.Errorf("no generated section (%q … %q)", HostDocBegin, HostDocEnd)
	}
	return doc[:i+len(HostDocBegin)] + "\n" + FamilyTable(rows) + doc[j:], nil
}

// RescoreHostTable re-scores every row's figures on hc.Check with the
// current code, keeping each row's host costs and fit loss: the table
// after a change that moves the scores (the acceptance a speculative run
// is replayed at is fitted with the committed host.json when the cases
// load) without searching again.
func RescoreHostTable(ctx context.Context, hc *HostCases, rows []FamilyRow) []FamilyRow {
	check := hc.Check()
	out := append([]FamilyRow(nil), rows...)
	for i := range out {
		out[i].Figures = Summarize(EvaluateHost(ctx, check, out[i].Host, 0))
	}
	return out
}
