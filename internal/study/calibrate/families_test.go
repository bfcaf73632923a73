package calibrate

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/headroom-sim/headroom/catalogs"
	"github.com/headroom-sim/headroom/internal/testkit/refdata"
	"github.com/headroom-sim/headroom/sim/steptime"
)

// sourcedHost is the host costs' starting point: the fitted coefficients
// of the embedded host.json with every sourced one at its source's value
// (docs/accuracy.md lists them).
func sourcedHost() steptime.Host {
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

// familyCases loads the families' cases; the closed-loop family is split
// (HostSplit) into its fit half, thinned to every fourth run for time, and
// its check half.
func familyCases(t *testing.T, cat *catalogs.Catalog) (fitClosed, checkClosed, others []Case) {
	t.Helper()
	cases, err := LoadCases(os.DirFS(refdata.Dir()), cat, kernelOptions(cat), Families)
	if err != nil {
		t.Fatal(err)
	}
	fit, _ := HostSplit(siliconRuns(t))
	inFit := map[string]bool{}
	for i, r := range fit {
		if i%4 == 0 {
			inFit[r.Name] = true
		}
	}
	fitAll := map[string]bool{}
	for _, r := range fit {
		fitAll[r.Name] = true
	}
	for _, c := range cases {
		switch {
		case c.Family != FamilyClosedLoop:
			others = append(others, c)
		case inFit[c.Name]:
			fitClosed = append(fitClosed, c)
		case !fitAll[c.Name]:
			checkClosed = append(checkClosed, c)
		}
	}
	return fitClosed, checkClosed, others
}

// TestFitHostFamilies fits the host costs on one family at a time and on
// all together, scores each fit on every family (the closed loops on the
// half they were not fitted on), and with -update writes the joint fit to
// sim/steptime/profiles/host.json and the table to
// testdata/host-families.json (docs/gen-accuracy.sh renders it). It takes
// hours on two cores, so it runs only with HEADROOM_FIT_HOST=1;
// HEADROOM_FIT_HOST=joint fits all the families together only (the
// defaults without the per-family rows), HEADROOM_FIT_HOST=families fits
// each family alone from the committed host.json and scores that as the
// joint row (the table without refitting the defaults);
// HEADROOM_FIT_EVALS caps each fit's evaluations (default 40).
func TestFitHostFamilies(t *testing.T) {
	if os.Getenv("HEADROOM_FIT_HOST") == "" {
		t.Skip("HEADROOM_FIT_HOST not set: the host fits take hours")
	}
	refdata.Path(t, "measured")
	cat, err := catalogs.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	fitClosed, checkClosed, others := familyCases(t, cat)
	byFamily := map[string][]Case{FamilyClosedLoop: fitClosed}
	for _, c := range others {
		byFamily[c.Family] = append(byFamily[c.Family], c)
	}
	check := append(append([]Case{}, checkClosed...), others...)
	start := sourcedHost()
	type row = FamilyRow
	var rows []row
	ctx := context.Background()
	score := func(name string, h steptime.Host, loss float64) {
		figs := Summarize(EvaluateHost(ctx, check, h, 0))
		rows = append(rows, row{FitOn: name, Host: h, Loss: loss, Figures: figs})
		for _, f := range figs {
			t.Logf("fit on %s → %s: %+v", name, f.Family, f.Metrics)
		}
	}
	mode := os.Getenv("HEADROOM_FIT_HOST")
	if mode == "families" {
		// The per-family fits start from the committed default, which is
		// scored as it is: the table without refitting host.json (the
		// sourced start's row kept from the joint fit's table).
		if b, err := os.ReadFile(filepath.Join("testdata", "host-families.json")); err == nil {
			var old []row
			if json.Unmarshal(b, &old) == nil && len(old) > 0 && strings.HasPrefix(old[0].FitOn, "none") {
				rows = append(rows, old[0])
			}
		}
		score("all (host.json, the default)", start, 0)
	} else {
		score("none (sourced start)", start, 0)
	}
	fits := []struct {
		name  string
		cases []Case
	}{
		{FamilyClosedLoop, byFamily[FamilyClosedLoop]},
		{FamilyOpenLoop, byFamily[FamilyOpenLoop]},
		{FamilyStepped, byFamily[FamilyStepped]},
		{"all", append(append(append(append([]Case{}, fitClosed...), byFamily[FamilyOpenLoop]...), byFamily[FamilyStepped]...), byFamily[FamilyRequestLevel]...)},
	}
	maxEvals := 40
	if n, err := strconv.Atoi(os.Getenv("HEADROOM_FIT_EVALS")); err == nil && n > 0 {
		maxEvals = n
	}
	var joint *HostFit
	for _, f := range fits {
		if (mode == "joint" && f.name != "all") || (mode == "families" && f.name == "all") {
			continue // the joint fit alone, or the families' alone
		}
		res, err := FitHostFamilies(ctx, f.cases, start, maxEvals, func(h HostFit) {
			t.Logf("%s %s: eval %d loss %.4f cpu %+v cpu_v0 %+v client %.0f per_step %.0f", time.Now().Format("15:04:05"), f.name, h.Evaluations, h.Loss, h.Host.CPU, h.Host.CPUV0, h.Host.Frontend.ClientUS, h.Host.Frontend.PerStepUS)
		})
		if err != nil {
			t.Fatal(err)
		}
		score(f.name, res.Host, res.Loss)
		if f.name == "all" {
			joint = res
		}
	}
	if *update {
		b, _ := json.MarshalIndent(rows, "", "  ")
		if err := os.WriteFile(filepath.Join("testdata", "host-families.json"), append(b, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
		if joint == nil {
			return // families only: host.json stays
		}
		joint.Host.Source = "fitted by calibrate.FitHostFamilies to every family of measured runs at once (the closed loops' fit half, every fourth run); the request path's sourced coefficients (docs/request-path.md) kept at their sources' values"
		b, _ = json.MarshalIndent(joint.Host, "", "  ")
		if err := os.WriteFile(filepath.Join("..", "..", "..", "sim", "steptime", "profiles", "host.json"), append(b, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
