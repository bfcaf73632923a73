package uncertainty

import (
	"context"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/headroom-sim/headroom/catalogs"
	"github.com/headroom-sim/headroom/internal/adapter/kerneldb"
	"github.com/headroom-sim/headroom/internal/study/calibrate"
	"github.com/headroom-sim/headroom/internal/study/replay"
	"github.com/headroom-sim/headroom/internal/testkit/golden"
	"github.com/headroom-sim/headroom/internal/testkit/refdata"
	"github.com/headroom-sim/headroom/sim/steptime"
)

var update = flag.Bool("update", false, "replay the validation runs of ../shared/data and rewrite testdata/residuals.json, catalogs/errormodel.json and testdata/coverage.txt")

// modelFile is the shipped model.
var modelFile = filepath.Join("..", "..", "..", "catalogs", "errormodel.json")

// TestErrorModel checks the shipped model is the fit of the committed
// residuals, with the statement of what it was fitted on and how it
// held up out of sample. With -update it first replays every family's
// runs with the default host costs (minutes; skipped without
// ../shared/data) and rewrites the residuals.
func TestErrorModel(t *testing.T) {
	if *update {
		writeResiduals(t)
	}
	src, rs := readResiduals(t)
	m := shippedFit(t, src, rs)
	b, err := m.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	golden.Check(t, modelFile, b, *update)
	if _, err := Parse(catalogs.ErrorModel()); err != nil && !*update {
		t.Fatalf("the embedded model: %v", err)
	}
}

// shippedFit fits the residuals with DefaultFit and the statements the
// model carries.
func shippedFit(t *testing.T, src string, rs []Residual) *Model {
	t.Helper()
	c, err := LeaveGroupOut(rs, DefaultFit)
	if err != nil {
		t.Fatal(err)
	}
	opt := DefaultFit
	opt.Source = src
	var parts []string
	for _, metric := range []string{"ttft_ms.mean", "ttft_ms.p99", "tpot_ms.mean", "tpot_ms.p99", "itl_ms.mean", "e2e_ms.mean", "e2e_ms.p99", "throughput.requests_per_s"} {
		if x := c.Metric[metric]; x != nil && x.N > 0 {
			parts = append(parts, fmt.Sprintf("%s %.0f%% of %d", metric, 100*x.Ratio80(), x.N))
		} else {
			parts = append(parts, metric+" not checked (no held-out band)")
		}
	}
	opt.Checked = fmt.Sprintf("each of the %d groups (family, model@GPU) held out of the fit in turn, its measured values inside the 80%% band: %s "+
		"(every metric and regime: internal/study/uncertainty/testdata/coverage.txt)", c.Groups, strings.Join(parts, ", "))
	m, err := Fit(rs, opt)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestResidualsCurrent replays every 40th case and checks its figures
// are the committed residuals': a change of the defaults (host costs,
// kernel profiles, the replay) that was not followed by TestErrorModel
// -update fails here. Needs ../shared/data; -short skips it.
func TestResidualsCurrent(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: replays a sample of the validation runs")
	}
	cases := validationCases(t)
	var sample []calibrate.Case
	for i := 0; i < len(cases); i += 40 {
		sample = append(sample, cases[i])
	}
	got, err := Replay(context.Background(), sample, steptime.HostCosts(), 0)
	if err != nil {
		t.Fatal(err)
	}
	_, committed := readResiduals(t)
	want := map[string]Residual{}
	for _, r := range committed {
		want[r.Family+" "+r.Case+" "+r.Metric] = r
	}
	n := 0
	for _, r := range got {
		if !slices.Contains(Headline, r.Metric) {
			continue
		}
		n++
		w, ok := want[r.Family+" "+r.Case+" "+r.Metric]
		if !ok || math.Abs(r.Predicted/w.Predicted-1) > 1e-9 || r.Measured != w.Measured {
			t.Errorf("%s %s %s: predicted %v measured %v, the committed residuals %v and %v (ok %v): run TestErrorModel with -update",
				r.Family, r.Case, r.Metric, r.Predicted, r.Measured, w.Predicted, w.Measured, ok)
		}
	}
	if n == 0 {
		t.Fatal("the sample has no headline residual")
	}
}

// validationCases are every family's cases of the reference data.
func validationCases(t *testing.T) []calibrate.Case {
	t.Helper()
	refdata.Path(t, "measured")
	cat, err := catalogs.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	cases, err := calibrate.LoadCases(os.DirFS(refdata.Dir()), cat, replay.Options{KernelDB: kernels(cat).Load}, calibrate.Families)
	if err != nil {
		t.Fatal(err)
	}
	return cases
}

// writeResiduals replays every family's cases with the default host
// costs and writes their headline residuals.
func writeResiduals(t *testing.T) {
	t.Helper()
	cases := validationCases(t)
	rs, err := Replay(context.Background(), cases, steptime.HostCosts(), 0)
	if err != nil {
		t.Fatal(err)
	}
	runs, groups := map[string]bool{}, map[string]bool{}
	for _, r := range rs {
		runs[r.Family+" "+r.Case], groups[r.Group] = true, true
	}
	src := fmt.Sprintf("fitted by `go test ./internal/study/uncertainty -run TestErrorModel -update` on the residuals of %d simulated cases in %d groups "+
		"(calibrate's families %s over ../shared/data/measured: the aiconfigurator-silicon closed loops, the vLLM 0.23 residency traces, "+
		"the inference-perf stages, the LLMServingSim and inference-sim request-level runs), replayed with the default host costs "+
		"(sim/steptime/profiles/host.json) and the built-in kernel tables", len(runs), len(groups), strings.Join(calibrate.Families, ", "))
	if err := os.WriteFile(residualsFile, encodeResiduals(src, rs), 0o644); err != nil {
		t.Fatal(err)
	}
}

// kernels are the built-in kernel tables as the CLI reads them.
func kernels(cat *catalogs.Catalog) *kerneldb.Provider {
	return kerneldb.ForCatalog(cat.GPU)
}
