package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/headroom-sim/headroom/internal/adapter/plot"
	"github.com/headroom-sim/headroom/internal/study/plan"
	"github.com/headroom-sim/headroom/sim"
)

// The charts link gonum/plot and its fonts: on empty caches they add no
// measurable time to the first build of headroom (they compile beside the
// rest on two cores), so every build has them.

// accuracyBandPct is the band drawn around y = x in the predicted-vs-measured chart.
const accuracyBandPct = 20

// writePlotFiles renders the charts of a planning result into dir.
func writePlotFiles(dir string, v any) error {
	name := ""
	switch r := v.(type) {
	case *plan.SweepResult:
		name = "sweep-heatmap.svg"
	case *plan.PlanResult:
		if r.Day != nil {
			if err := writeSVG(filepath.Join(dir, "plan-day.svg"), func(w io.Writer) error { return plot.Day(w, r.Day) }); err != nil {
				return err
			}
		}
		name = "plan-pareto.svg"
	case *plan.CurveResult:
		name = "curve.svg"
	case *plan.LoadResult:
		name = "maxload.svg"
	case *plan.CompareResult:
		return nil // both sides' reports are in the output; no single chart
	default:
		return fmt.Errorf("--plot-dir: no chart for %T", v)
	}
	return writeSVG(filepath.Join(dir, name), func(w io.Writer) error { return plot.Render(w, v) })
}

// writeSVG renders to a buffer first so a failed chart leaves no file.
func writeSVG(path string, render func(io.Writer) error) error {
	var b bytes.Buffer
	if err := render(&b); err != nil {
		return fmt.Errorf("%s: %w", filepath.Base(path), err)
	}
	return os.WriteFile(path, b.Bytes(), 0o644)
}

// runCharts gathers a simulation's distributions for its charts.
type runCharts struct{ d *plot.Distributions }

func newRunCharts() *runCharts { return &runCharts{plot.NewDistributions()} }

func (c *runCharts) Request(r sim.RequestSample) { c.d.Request(r) }
func (c *runCharts) Token(tS, gapMS float64)     { c.d.Token(tS, gapMS) }

// write renders the run's charts into dir.
func (c *runCharts) write(dir string, rep *sim.Report) error {
	charts := []struct {
		file   string
		render func(io.Writer) error
	}{
		{"ttft-cdf.svg", func(w io.Writer) error { return plot.TTFTCDF(w, c.d) }},
		{"tpot-cdf.svg", func(w io.Writer) error { return plot.TPOTCDF(w, c.d) }},
		{"itl-cdf.svg", func(w io.Writer) error { return plot.ITLCDF(w, c.d) }},
		{"e2e-cdf.svg", func(w io.Writer) error { return plot.E2ECDF(w, c.d) }},
		{"timeline.svg", func(w io.Writer) error { return plot.Timeline(w, rep) }},
	}
	for _, ch := range charts {
		err := writeSVG(filepath.Join(dir, ch.file), ch.render)
		if err != nil && !errors.Is(err, plot.ErrNoData) {
			return err
		}
	}
	return nil
}

// writeAccuracyPlot draws the closed-loop runs' predicted against measured
// means, one colour per model, into path.
func writeAccuracyPlot(path string, tables []closedLoopTable) error {
	var pts []plot.AccuracyPoint
	for _, t := range tables {
		for i := range t.results {
			if r := &t.results[i]; r.Replayed() {
				pts = append(pts, plot.AccuracyPoint{Series: r.Model, MeasuredTTFTMS: r.MeasuredTTFTMS, PredictedTTFTMS: r.TTFTMS,
					MeasuredTPOTMS: r.MeasuredTPOT, PredictedTPOTMS: r.TPOTMS})
			}
		}
	}
	title := fmt.Sprintf("Predicted vs measured mean TTFT and TPOT, %d closed-loop runs", len(pts))
	return writeSVG(path, func(w io.Writer) error { return plot.PredictedVsMeasured(w, title, pts, accuracyBandPct) })
}
