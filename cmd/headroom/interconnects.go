package main

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/headroom-sim/headroom/catalogs"
	"github.com/headroom-sim/headroom/hardware"
	"github.com/headroom-sim/headroom/sim"
	"github.com/headroom-sim/headroom/sim/stats"
)

// listInterconnects prints the links a disaggregated scenario's KV cache
// can cross (disaggregation.kv_transfer.link).
func listInterconnects(e *env, format string) error {
	ic, err := catalogs.BuiltinInterconnects()
	if err != nil {
		return err
	}
	if format == "json" {
		return writeJSON(e.stdout, ic.All())
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tSCOPE\tGPU_LINK\tLINE_RATE_GBPS\tACHIEVED_GBPS\tLATENCY_US\tNAME")
	for _, l := range ic.All() {
		gl := l.GPULink
		if gl == "" {
			gl = "any"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%.0f\t%.1f\t%.0f\t%s\n", l.ID, l.Scope, gl, l.LineRateGBps, l.BandwidthGBps(), l.LatencyUS, l.Name)
	}
	return tw.Flush()
}

func interconnect(id string) (*hardware.Interconnect, error) {
	ic, err := catalogs.BuiltinInterconnects()
	if err != nil {
		return nil, err
	}
	l, err := ic.Get(id)
	if err != nil {
		return nil, usagef("catalog show interconnects: %v", err)
	}
	return l, nil
}

// writeDisaggTable prints a disaggregated run's pools, KV transfer and
// TTFT parts (nothing for an aggregated run).
func writeDisaggTable(tw io.Writer, r *sim.Report) {
	d := r.Disaggregation
	if d == nil {
		return
	}
	x := d.KVTransfer
	how := "read after the prefill"
	if x.Overlap == sim.OverlapLayerwise {
		how = "pushed layer by layer during the prefill"
	}
	fmt.Fprintln(tw)
	fmt.Fprintf(tw, "Disaggregated\tprefill %d× %s (tp %d, %d GPUs), decode %d× %s (tp %d, %d GPUs)\n",
		d.Prefill.Replicas, d.Prefill.GPU, d.Prefill.TP, d.Prefill.GPUs, d.Decode.Replicas, d.Decode.GPU, d.Decode.TP, d.Decode.GPUs)
	fmt.Fprintf(tw, "KV transfer\t%s at %.1f GB/s per GPU + %.0f µs, %s; %.1f MB per request per GPU; busiest link %.1f%% busy\n",
		x.Link, x.BandwidthGBps, x.LatencyUS, how, x.MBPerRequestPerGPU, 100*x.LinkBusyRatio)
	fmt.Fprintln(tw, "TTFT parts (ms)\tmean\tp50\tp90\tp95\tp99\tp99.9\tmax")
	b := d.TTFTBreakdown
	for _, p := range []struct {
		name string
		s    stats.Summary
	}{
		{"  prefill queue", b.PrefillQueueMS}, {"  prefill", b.PrefillMS}, {"  KV admission", b.KVAdmissionMS},
		{"  KV transfer", b.KVTransferMS}, {"  first decode step", b.FirstDecodeMS},
	} {
		fmt.Fprintf(tw, "%s\t%.1f\t%.1f\t%.1f\t%.1f\t%.1f\t%.1f\t%.1f\n", p.name, p.s.Mean, p.s.P50, p.s.P90, p.s.P95, p.s.P99, p.s.P999, p.s.Max)
	}
	for _, p := range []struct {
		name string
		r    sim.PoolReport
	}{{"Prefill pool", d.Prefill}, {"Decode pool", d.Decode}} {
		t := p.r.Throughput
		fmt.Fprintf(tw, "%s\tbusy %.1f%%, KV peak %.1f%% mean %.1f%% of %d blocks, %d preemptions; %.0f prompt tok/s/GPU, %.0f output tok/s/GPU\n",
			p.name, 100*p.r.UtilizationRatio, 100*p.r.KVCache.PeakUsageRatio, 100*p.r.KVCache.MeanUsageRatio, p.r.KVCache.NumGPUBlocks,
			p.r.Preemptions, t.PromptTokensPerSPerGPU, t.OutputTokensPerSPerGPU)
	}
}
