package sim

import (
	"context"
	"fmt"
	"os"
	"sort"
	"testing"

	"github.com/headroom-sim/headroom/catalogs"
	"github.com/headroom-sim/headroom/hardware"
	"github.com/headroom-sim/headroom/internal/adapter/kerneldb"
	"github.com/headroom-sim/headroom/sim/engine"
	"github.com/headroom-sim/headroom/sim/steptime"
	"github.com/headroom-sim/headroom/sim/workload"
)

func TestDebugCohorts(t *testing.T) {
	if os.Getenv("DEBUGCOH") == "" {
		t.Skip()
	}
	cat, _ := catalogs.Builtin()
	m, _ := cat.Model(os.Getenv("M"))
	g, _ := cat.GPU(os.Getenv("G"))
	var tp, c, isl, osl int
	var req, tok, outus float64
	fmt.Sscan(os.Getenv("TP"), &tp)
	fmt.Sscan(os.Getenv("C"), &c)
	fmt.Sscan(os.Getenv("ISL"), &isl)
	fmt.Sscan(os.Getenv("OSL"), &osl)
	fmt.Sscan(os.Getenv("REQ"), &req)
	fmt.Sscan(os.Getenv("TOK"), &tok)
	fmt.Sscan(os.Getenv("OUT"), &outus)
	e := engine.Defaults()
	if v := os.Getenv("MBT"); v != "" {
		fmt.Sscan(v, &e.MaxNumBatchedTokens)
	}
	e, _ = e.Resolve(m, g)
	in, _ := workload.NewLengthSampler(workload.LengthSpec{Type: "fixed", Value: isl}, "in", nil)
	out, _ := workload.NewLengthSampler(workload.LengthSpec{Type: "fixed", Value: osl}, "out", nil)
	prov := &kerneldb.Provider{BuiltIn: catalogs.Kernels(), GPU: func(s string) (*hardware.GPU, bool) { g, err := cat.GPU(s); return g, err == nil }}
	db, _ := prov.Load(g, "")
	p := steptime.DefaultProfile(g)
	p.Frontend.RequestUS, p.Frontend.PerPromptTokenUS, p.Frontend.PerOutputTokenUS = req, tok, outus
	cfg := Config{Model: m, GPU: g, Precision: m.DefaultPrecision(), TP: tp, Replicas: 1, Router: RouterRoundRobin, Engine: e,
		NumGPUBlocks: 60000, Profile: p, KernelDB: db, MoETP: tp, MoEEP: 1,
		Workload: Workload{Requests: 20 * c, Warmup: 2 * c, Arrival: workload.ArrivalSpec{Type: "closed_loop", Concurrency: c}, Input: in, Output: out},
		Report:   ReportOptions{StallThresholdMS: 300}}
	var samples []RequestSample
	rep, err := Run(context.Background(), cfg, WithRequestSink(func(s RequestSample) { samples = append(samples, s) }))
	if err != nil {
		t.Fatal(err)
	}
	sort.Slice(samples, func(i, j int) bool { return samples[i].SentS < samples[j].SentS })
	line := ""
	for i, s := range samples {
		if i >= len(samples)-3*c {
			line += fmt.Sprintf("%.3f:%.0f ", s.SentS, s.TTFTMS)
		}
	}
	fmt.Println(line)
	fmt.Printf("TTFT mean %.1f p50 %.1f TPOT %.2f\n", rep.TTFTMS.Mean, rep.TTFTMS.P50, rep.TPOTMS.Mean)
}
