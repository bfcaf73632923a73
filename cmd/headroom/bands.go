package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/headroom-sim/headroom/internal/study/uncertainty"
	"github.com/headroom-sim/headroom/sim"
	"github.com/headroom-sim/headroom/sim/stats"
)

// judge sets rep's error bands from the built-in error model.
func judge(cfg *sim.Config, rep *sim.Report) error {
	m, err := uncertainty.Builtin()
	if err != nil {
		return err
	}
	m.Judge(cfg, rep)
	return nil
}

// writeBands writes the headline figures with their 80% bands
// ("412.0 (330.0–520.0)"), the regime they were judged in and what of the
// scenario is outside the validation runs.
func writeBands(tw io.Writer, r *sim.Report) {
	u := r.Uncertainty
	if u == nil {
		return
	}
	fmt.Fprintln(tw)
	fmt.Fprintln(tw, "80% band (ms)\tmean\tp50\tp90\tp99")
	for _, row := range []struct {
		name string
		s    stats.Summary
		in   *sim.SummaryInterval
	}{{"TTFT", r.TTFTMS, r.TTFTMSInterval}, {"TPOT", r.TPOTMS, r.TPOTMSInterval}, {"ITL", r.ITLMS, r.ITLMSInterval}, {"E2E", r.E2EMS, r.E2EMSInterval}} {
		cells := []string{row.name}
		for _, q := range []string{"mean", "p50", "p90", "p99"} {
			x, _ := row.s.At(q)
			cells = append(cells, withBand(x, row.in.At(q), "%.1f"))
		}
		fmt.Fprintln(tw, strings.Join(cells, "\t"))
	}
	if t := r.ThroughputInterval; t != nil {
		fmt.Fprintf(tw, "Throughput band\t%s req/s\n", withBand(r.Throughput.RequestsPerS, t.RequestsPerS, "%.2f"))
	}
	var reg []string
	for _, f := range uncertainty.Features {
		reg = append(reg, f+" "+u.Regime[f])
	}
	fmt.Fprintf(tw, "Judged in\t%s\n", strings.Join(reg, ", "))
	for _, o := range u.Outside {
		fmt.Fprintf(tw, "Outside\t%s %s: %s\n", o.Feature, o.Value, o.Reason)
	}
	if len(u.Outside) > 0 {
		fmt.Fprintf(tw, "\tbands widened ×%.1f (in log space) for %d feature(s) outside the validation runs\n", u.WidenRatio, len(u.Outside))
	}
}

// withBand writes x and its 80% band, or x alone ("no band") without one.
func withBand(x float64, in *sim.Interval, format string) string {
	if in == nil {
		return fmt.Sprintf(format+" (no band)", x)
	}
	return fmt.Sprintf(format+" ("+format+"–"+format+")", x, in.P80[0], in.P80[1])
}
