package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/headroom-sim/headroom/catalogs"
	"github.com/headroom-sim/headroom/internal/study/calibrate"
	"github.com/headroom-sim/headroom/internal/study/kernelfit"
	"github.com/headroom-sim/headroom/sim/steptime"
)

const (
	profilesDir   = "sim/steptime/profiles"
	steptimeDoc   = "docs/steptime.md"
	hostJSON      = profilesDir + "/host.json"
	hostFamilies  = "internal/study/calibrate/testdata/host-families.json"
	hostCostsDoc  = "docs/host-costs.md"
	accuracyDoc   = "docs/accuracy.md"
	accuracyPlot  = "docs/figures/accuracy-silicon.svg"
	calibrateDoc  = "docs/calibration.md"
	docsOutEnvVar = "HEADROOM_DOCS_OUT" // where the gen scripts write (default docs/)
)

// kernels fits every measured GPU's profile to catalogs/kernels and
// renders docs/steptime.md's generated section (about 75 s on two cores).
func (t *tool) kernels() (bool, error) {
	cat, err := catalogs.Builtin()
	if err != nil {
		return false, err
	}
	d, err := kernelfit.FitDefaults(catalogs.Kernels(), cat)
	if err != nil {
		return false, err
	}
	var arts []artifact
	for _, r := range d.Results {
		b, err := kernelfit.ProfileJSON(r)
		if err != nil {
			return false, err
		}
		arts = append(arts, artifact{profilesDir + "/" + r.System + ".json", b})
	}
	doc, err := os.ReadFile(filepath.Join(t.root, steptimeDoc))
	if err != nil {
		return false, err
	}
	s, err := kernelfit.SpliceReport(string(doc), kernelfit.Report(d.Results, d.Interp))
	if err != nil {
		return false, fmt.Errorf("%s: %w", steptimeDoc, err)
	}
	arts = append(arts, artifact{steptimeDoc, []byte(s)})
	return t.settle("kernels", arts)
}

// host fits the default host costs to the reference data's families (with
// --check: re-scores the committed fits, calibrate.CheckHostDefaults).
func (t *tool) host(ctx context.Context) (bool, error) {
	cat, err := catalogs.Builtin()
	if err != nil {
		return false, err
	}
	start := time.Now()
	hc, err := calibrate.LoadHostCases(os.DirFS(t.data), cat)
	if err != nil {
		return false, err
	}
	fmt.Fprintf(t.stderr, "host: %d fit + %d check closed loops, %d other cases loaded in %.1f s\n", len(hc.FitClosed), len(hc.CheckClosed), len(hc.Others), time.Since(start).Seconds())
	if t.opt.check {
		return false, t.checkHost(ctx, hc)
	}
	prev, err := t.hostRows()
	if err != nil && (t.opt.hostMode == calibrate.HostFamiliesOnly || t.opt.hostMode == calibrate.HostRescore) {
		return false, err
	}
	if t.opt.hostMode == calibrate.HostRescore {
		// The stepped EAGLE run's acceptance is fitted with the committed
		// host.json when the cases load, so the table follows host.json.
		rows := calibrate.RescoreHostTable(ctx, hc, prev)
		rb, err := indentJSON(rows)
		if err != nil {
			return false, err
		}
		changed, err := t.settle("host", []artifact{{hostFamilies, rb}})
		if err != nil {
			return false, err
		}
		docChanged, err := t.hostDoc(rows)
		return changed || docChanged, err
	}
	opt := calibrate.HostDefaultsOptions{Mode: t.opt.hostMode, Previous: prev, MaxEvals: t.opt.hostEvals, Progress: func(name string, h calibrate.HostFit) {
		fmt.Fprintf(t.stderr, "%s host fit on %s: eval %d loss %.4f cpu %+v cpu_v0 %+v client %.0f per_step %.0f\n", time.Now().Format("15:04:05"), name, h.Evaluations, h.Loss, h.Host.CPU, h.Host.CPUV0, h.Host.Frontend.ClientUS, h.Host.Frontend.PerStepUS)
	}}
	rows, h, err := calibrate.FitHostDefaults(ctx, hc, opt)
	if err != nil {
		return false, err
	}
	rb, err := indentJSON(rows)
	if err != nil {
		return false, err
	}
	arts := []artifact{{hostFamilies, rb}}
	if h != nil { // --host families keeps host.json
		hb, err := indentJSON(h)
		if err != nil {
			return false, err
		}
		arts = append(arts, artifact{hostJSON, hb})
	}
	changed, err := t.settle("host", arts)
	if err != nil {
		return false, err
	}
	docChanged, err := t.hostDoc(rows)
	return changed || docChanged, err
}

// hostRows reads the committed host-families.json.
func (t *tool) hostRows() ([]calibrate.FamilyRow, error) {
	rb, err := os.ReadFile(filepath.Join(t.root, hostFamilies))
	if err != nil {
		return nil, fmt.Errorf("%w (go run ./cmd/headroom-fit --only host writes it)", err)
	}
	var rows []calibrate.FamilyRow
	if err := json.Unmarshal(rb, &rows); err != nil {
		return nil, fmt.Errorf("%s: %w", hostFamilies, err)
	}
	return rows, nil
}

// hostDoc renders rows (nil: the committed table) into docs/host-costs.md's
// generated section; no reference data needed.
func (t *tool) hostDoc(rows []calibrate.FamilyRow) (bool, error) {
	if rows == nil {
		var err error
		if rows, err = t.hostRows(); err != nil {
			return false, err
		}
	}
	doc, err := os.ReadFile(filepath.Join(t.root, hostCostsDoc))
	if err != nil {
		return false, err
	}
	s, err := calibrate.SpliceFamilyTable(string(doc), rows)
	if err != nil {
		return false, fmt.Errorf("%s: %w", hostCostsDoc, err)
	}
	return t.settle("host-doc", []artifact{{hostCostsDoc, []byte(s)}})
}

func indentJSON(v any) ([]byte, error) {
	b, err := json.MarshalIndent(v, "", "  ")
	return append(b, '\n'), err
}

func (t *tool) checkHost(ctx context.Context, hc *calibrate.HostCases) error {
	hb, err := os.ReadFile(filepath.Join(t.root, hostJSON))
	if err != nil {
		return err
	}
	var h steptime.Host
	if err := json.Unmarshal(hb, &h); err != nil {
		return fmt.Errorf("%s: %w", hostJSON, err)
	}
	rows, err := t.hostRows()
	if err != nil {
		return err
	}
	l, err := calibrate.CheckHostDefaults(ctx, hc, rows, h)
	if err != nil {
		t.stale = append(t.stale, fmt.Sprintf("%s, %s (host: %v)", hostJSON, hostFamilies, err))
		return nil
	}
	fmt.Fprintf(t.stdout, "host: %s is the default row of %s, its %d rows re-score as recorded, and its loss on the fit cases is %.5f (the search's, before rounding: %.5f)\n", hostJSON, hostFamilies, len(rows), l, jointLoss(rows))
	return nil
}

// docs runs docs/gen-accuracy.sh and docs/gen-calibration.sh on the
// reference data (with --check into a temporary folder, compared with the
// committed files).
func (t *tool) docs(ctx context.Context) (bool, error) {
	out := filepath.Join(t.root, "docs")
	if t.opt.check {
		tmp, err := os.MkdirTemp("", "headroom-fit-docs-")
		if err != nil {
			return false, err
		}
		out = tmp
	}
	measured := filepath.Join(t.data, "measured")
	for _, script := range []string{"docs/gen-accuracy.sh", "docs/gen-calibration.sh"} {
		start := time.Now()
		cmd := exec.CommandContext(ctx, "bash", script, measured)
		cmd.Dir = t.root
		cmd.Env = append(os.Environ(), docsOutEnvVar+"="+out)
		cmd.Stdout, cmd.Stderr = t.stderr, t.stderr // the scripts' progress and messages
		if err := cmd.Run(); err != nil {
			return false, fmt.Errorf("%s: %w", script, err)
		}
		fmt.Fprintf(t.stderr, "docs: %s in %.1f s\n", script, time.Since(start).Seconds())
	}
	if !t.opt.check {
		fmt.Fprintf(t.stdout, "docs: wrote %s, %s, %s\n", accuracyDoc, accuracyPlot, calibrateDoc)
		return true, nil
	}
	var arts []artifact
	for _, p := range []string{accuracyDoc, accuracyPlot, calibrateDoc} {
		b, err := os.ReadFile(filepath.Join(out, strings.TrimPrefix(p, "docs/")))
		if err != nil {
			return false, err
		}
		arts = append(arts, artifact{p, b})
	}
	changed, err := t.settle("docs", arts)
	if changed {
		fmt.Fprintf(t.stderr, "docs: the regenerated files are in %s (diff them with the committed ones)\n", out)
	} else {
		os.RemoveAll(out)
	}
	return changed, err
}

// rerun continues with the given steps in a fresh build of the tool
// (go run), so that they embed the artifacts just written.
func (t *tool) rerun(ctx context.Context, next ...string) error {
	var only []string
	for _, s := range next {
		if t.opt.only[s] {
			only = append(only, s)
		}
	}
	args := []string{"run", "./cmd/headroom-fit", "--only", strings.Join(only, ","), "--host-evals", strconv.Itoa(t.opt.hostEvals)}
	args = append(args, "--host", t.opt.hostMode)
	if t.opt.data != "" {
		args = append(args, "--data", t.opt.data)
	}
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir, cmd.Stdout, cmd.Stderr = t.root, t.stdout, t.stderr
	return cmd.Run()
}

// jointLoss is the loss the table records for its joint fit.
func jointLoss(rows []calibrate.FamilyRow) float64 {
	for _, r := range rows {
		if calibrate.IsDefaultRow(r.FitOn) {
			return r.Loss
		}
	}
	return 0
}
