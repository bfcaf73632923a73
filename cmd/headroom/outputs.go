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
// charts (in the full build, see charts.go) and an OpenMetrics file.
type runOutputs struct {
	plotDir, metricsOut string
	charts              *runCharts
	prom                *promexport.Collector
}

// sink receives what a run observes: each completed request and each
// inter-token gap (the time of the later token in s, the gap in ms).
type sink interface {
	Request(r sim.RequestSample)
	Token(tS, gapMS float64)
}

// options returns the simulator options that feed the collectors.
func (o *runOutputs) options() []sim.Option {
	var sinks []sink
	if o.plotDir != "" {
		o.charts = newRunCharts()
		sinks = append(sinks, o.charts)
	}
	if o.metricsOut != "" {
		o.prom = promexport.NewCollector()
		sinks = append(sinks, o.prom)
	}
	switch len(sinks) {
	case 0:
		return nil
	case 1:
		return []sim.Option{sim.WithRequestSink(sinks[0].Request), sim.WithTokenSink(sinks[0].Token)}
	}
	return []sim.Option{
		sim.WithRequestSink(func(r sim.RequestSample) {
			for _, s := range sinks {
				s.Request(r)
			}
		}),
		sim.WithTokenSink(func(tS, gapMS float64) {
			for _, s := range sinks {
				s.Token(tS, gapMS)
			}
		}),
	}
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
