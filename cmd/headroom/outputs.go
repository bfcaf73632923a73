package main

import (
	"bytes"
	"fmt"
	"os"
	"time"

	"github.com/headroom-sim/headroom/internal/adapter/promexport"
	"github.com/headroom-sim/headroom/sim"
)

// runOutputs are the per-run artefacts `headroom simulate` can write: SVG
// charts (charts.go) and an OpenMetrics file.
type runOutputs struct {
	plotDir, metricsOut string
	charts              *runCharts
	prom                *promexport.Collector
}

// options returns the simulator options that feed the collectors.
func (o *runOutputs) options() []sim.Option {
	var sinks []sim.Sink
	if o.plotDir != "" {
		o.charts = newRunCharts()
		sinks = append(sinks, o.charts)
	}
	if o.metricsOut != "" {
		o.prom = promexport.NewCollector()
		sinks = append(sinks, o.prom)
	}
	if len(sinks) == 0 {
		return nil
	}
	return []sim.Option{sim.WithSinks(sinks...)}
}

// write saves the charts and the OpenMetrics file.
func (o *runOutputs) write(rep *sim.Report, maxModelLen int) error {
	if o.plotDir != "" {
		if err := os.MkdirAll(o.plotDir, 0o755); err != nil {
			return err
		}
		if err := o.charts.write(o.plotDir, rep); err != nil {
			return fmt.Errorf("--plot-dir: %w", err)
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
