package replay_test

import (
	"context"
	"fmt"
	"math"
	"os"
	"runtime"
	"sort"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/headroom-sim/headroom/catalogs"
	"github.com/headroom-sim/headroom/hardware"
	"github.com/headroom-sim/headroom/internal/adapter/kerneldb"
	"github.com/headroom-sim/headroom/internal/adapter/measured"
	"github.com/headroom-sim/headroom/internal/study/replay"
	"github.com/headroom-sim/headroom/internal/testkit/refdata"
	"github.com/headroom-sim/headroom/sim"
	"github.com/headroom-sim/headroom/sim/steptime"
)

type siliconResult struct {
	run          *measured.Run
	ttft, tpot   float64 // predicted
	mttft, mtpot float64 // measured
	err          error
	wall         time.Duration
}

func kernelLoader(t *testing.T) func(g *hardware.GPU, dir string) (*steptime.KernelDB, error) {
	cat := builtin(t)
	p := &kerneldb.Provider{BuiltIn: catalogs.Kernels(), GPU: func(sys string) (*hardware.GPU, bool) {
		g, err := cat.GPU(sys)
		return g, err == nil
	}}
	return p.Load
}

func TestSiliconProbe(t *testing.T) {
	if os.Getenv("SILICON") == "" {
		t.Skip("SILICON not set")
	}
	f, err := os.Open(refdata.Path(t, "measured/aiconfigurator-silicon/silicon_vllm_agg.csv"))
	if err != nil {
		t.Fatal(err)
	}
	runs, err := measured.ReadSilicon(f, "silicon_vllm_agg.csv")
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := strconv.Atoi(os.Getenv("SILICON_EVERY")); n > 1 {
		var keep []*measured.Run
		for i, r := range runs {
			if i%n == 0 {
				keep = append(keep, r)
			}
		}
		runs = keep
	}
	cat := builtin(t)
	opt := replay.Options{Backend: os.Getenv("BACKEND")}
	if opt.Backend == "table" {
		opt.KernelDB = kernelLoader(t)
	}
	res := make([]siliconResult, len(runs))
	var wg sync.WaitGroup
	next := make(chan int)
	for range runtime.GOMAXPROCS(0) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				r := &res[i]
				r.run = runs[i]
				r.mttft, r.mtpot = runs[i].Aggregate.TTFTMS["mean"], runs[i].Aggregate.TPOTMS["mean"]
				start := time.Now()
				rs, err := replay.Config(runs[i], cat, opt)
				if err != nil {
					r.err = err
					continue
				}
				if v := os.Getenv("FE_REQ_US"); v != "" {
					fmt.Sscan(v, &rs.Config.Profile.Frontend.RequestUS)
				}
				if v := os.Getenv("FE_TOK_US"); v != "" {
					fmt.Sscan(v, &rs.Config.Profile.Frontend.PerPromptTokenUS)
				}
				if v := os.Getenv("FE_OUT_US"); v != "" {
					fmt.Sscan(v, &rs.Config.Profile.Frontend.PerOutputTokenUS)
				}
				if v := os.Getenv("CPU_STEP_US"); v != "" {
					fmt.Sscan(v, &rs.Config.Profile.CPU.StepOverheadUS)
				}
				if v := os.Getenv("CPU_SEQ_US"); v != "" {
					fmt.Sscan(v, &rs.Config.Profile.CPU.PerSeqOverheadUS)
				}
				rep, err := sim.Run(context.Background(), rs.Config)
				if err != nil {
					r.err = err
					continue
				}
				r.wall = time.Since(start)
				r.ttft, r.tpot = rep.TTFTMS.Mean, rep.TPOTMS.Mean
			}
		}()
	}
	for i := range runs {
		next <- i
	}
	close(next)
	wg.Wait()
	var at, ap []float64
	groups := map[string][2][]float64{}
	failed := 0
	var total time.Duration
	out, _ := os.Create("/tmp/eval/silicon.tsv")
	defer out.Close()
	fmt.Fprintln(out, "id\tmodel\tgpu\ttp\tdp\tmoe_tp\tmoe_ep\tisl\tosl\tc\tttft\tmttft\ttpot\tmtpot\terr")
	for _, r := range res {
		a := r.run.Aggregate
		if r.err != nil {
			failed++
			t.Logf("%s: %v", r.run.Name, r.err)
			fmt.Fprintf(out, "%s\t%s\t%s\t%d\t%d\t%d\t%d\t%.0f\t%.0f\t%d\t\t%.3f\t\t%.3f\t%v\n", r.run.Name, r.run.Model, r.run.GPU, r.run.TP, r.run.DP, r.run.MoETP, r.run.MoEEP, a.MeanInputTokens, a.MeanOutputTokens, a.Concurrency, r.mttft, r.mtpot, r.err)
			continue
		}
		total += r.wall
		et, ep := 100*(r.ttft/r.mttft-1), 100*(r.tpot/r.mtpot-1)
		at, ap = append(at, math.Abs(et)), append(ap, math.Abs(ep))
		k := r.run.Model + " " + r.run.GPU
		g := groups[k]
		g[0], g[1] = append(g[0], math.Abs(et)), append(g[1], math.Abs(ep))
		groups[k] = g
		fmt.Fprintf(out, "%s\t%s\t%s\t%d\t%d\t%d\t%d\t%.0f\t%.0f\t%d\t%.3f\t%.3f\t%.3f\t%.3f\t\n", r.run.Name, r.run.Model, r.run.GPU, r.run.TP, r.run.DP, r.run.MoETP, r.run.MoEEP, a.MeanInputTokens, a.MeanOutputTokens, a.Concurrency, r.ttft, r.mttft, r.tpot, r.mtpot)
	}
	med := func(x []float64) float64 {
		s := append([]float64(nil), x...)
		sort.Float64s(s)
		if len(s) == 0 {
			return math.NaN()
		}
		return s[len(s)/2]
	}
	p90 := func(x []float64) float64 {
		s := append([]float64(nil), x...)
		sort.Float64s(s)
		if len(s) == 0 {
			return math.NaN()
		}
		return s[int(0.9*float64(len(s)-1))]
	}
	t.Logf("runs %d, failed %d, sim wall %v", len(runs), failed, total)
	t.Logf("TTFT median APE %.1f%% p90 %.1f%%; TPOT median %.1f%% p90 %.1f%%", med(at), p90(at), med(ap), p90(ap))
	var keys []string
	for k := range groups {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		g := groups[k]
		t.Logf("  %-45s n=%3d TTFT %5.1f%% TPOT %5.1f%%", k, len(g[0]), med(g[0]), med(g[1]))
	}
}
