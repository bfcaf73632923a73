package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/headroom-sim/headroom/internal/adapter/plot"
	"github.com/headroom-sim/headroom/internal/adapter/promexport"
	"github.com/headroom-sim/headroom/internal/study/plan"
	"github.com/headroom-sim/headroom/sim"
)

// writePlotFiles renders the charts of a planning result into dir.
func writePlotFiles(dir string, v any) error {
	name := ""
	switch v.(type) {
	case *plan.SweepResult:
		name = "sweep-heatmap.svg"
	case *plan.PlanResult:
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

// runOutputs are the per-run artefacts `headroom simulate` can write.
type runOutputs struct {
	plotDir, metricsOut string
	dists               *plot.Distributions
	prom                *promexport.Collector
}

// options returns the simulator options that feed the collectors.
func (o *runOutputs) options() []sim.Option {
	var sinks []plot.Sink
	if o.plotDir != "" {
		o.dists = plot.NewDistributions()
		sinks = append(sinks, o.dists)
	}
	if o.metricsOut != "" {
		o.prom = promexport.NewCollector()
		sinks = append(sinks, o.prom)
	}
	if len(sinks) == 0 {
		return nil
	}
	return plot.SinkOptions(sinks...)
}

// write saves the plots and the OpenMetrics file.
func (o *runOutputs) write(rep *sim.Report, maxModelLen int) error {
	if o.plotDir != "" {
		if err := os.MkdirAll(o.plotDir, 0o755); err != nil {
			return err
		}
		charts := []struct {
			file   string
			render func(io.Writer) error
		}{
			{"ttft-cdf.svg", func(w io.Writer) error { return plot.TTFTCDF(w, o.dists) }},
			{"tpot-cdf.svg", func(w io.Writer) error { return plot.TPOTCDF(w, o.dists) }},
			{"itl-cdf.svg", func(w io.Writer) error { return plot.ITLCDF(w, o.dists) }},
			{"e2e-cdf.svg", func(w io.Writer) error { return plot.E2ECDF(w, o.dists) }},
			{"timeline.svg", func(w io.Writer) error { return plot.Timeline(w, rep) }},
		}
		for _, c := range charts {
			err := writeSVG(filepath.Join(o.plotDir, c.file), c.render)
			if err != nil && !errors.Is(err, plot.ErrNoData) {
				return fmt.Errorf("--plot-dir: %w", err)
			}
		}
	}
	if o.metricsOut != "" {
		var b bytes.Buffer
		opts := promexport.Options{Start: time.Now().UTC().Truncate(time.Second), ModelName: rep.Model, MaxModelLen: maxModelLen}
		if err := promexport.Write(&b, rep, o.prom, opts); err != nil {
			return fmt.Errorf("--metrics-out: %w", err)
		}
		if err := os.WriteFile(o.metricsOut, b.Bytes(), 0o644); err != nil {
			return fmt.Errorf("--metrics-out: %w", err)
		}
	}
	return nil
}
