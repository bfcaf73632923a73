package sim_test

import (
	"context"
	"math"
	"os"
	"runtime"
	"testing"

	"github.com/headroom-sim/headroom/catalogs"
	"github.com/headroom-sim/headroom/internal/study/scenario"
	"github.com/headroom-sim/headroom/sim"
)

// benchConfig is the speed case: Llama-3.1-8B on one H100,
// Poisson 40 req/s, 512 input and 256 output tokens.
func benchConfig(b *testing.B, requests int) sim.Config {
	cat, err := catalogs.Builtin()
	if err != nil {
		b.Fatal(err)
	}
	s := scenario.Default()
	s.Workload.Requests = requests
	s.Workload.Arrival.RateRPS = 40
	res, err := s.Resolve(scenario.Env{Catalog: cat})
	if err != nil {
		b.Fatal(err)
	}
	return res.Config
}

func benchRun(b *testing.B, requests int) {
	cfg := benchConfig(b, requests)
	var events, steps int64
	var tokens float64
	for b.Loop() {
		rep, err := sim.Run(context.Background(), cfg)
		if err != nil {
			b.Fatal(err)
		}
		events, steps = rep.Simulation.Events, rep.Simulation.Steps
		tokens = math.Round(rep.Throughput.OutputTokensPerS * rep.DurationS)
	}
	sec := b.Elapsed().Seconds() / float64(b.N)
	// Every output token is one request's share of one step: the run's
	// cost per decode token-step.
	b.ReportMetric(sec*1e9/tokens, "ns/token-step")
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	// Memory obtained from the OS over the benchmark: an upper bound on
	// the run's resident set (measure RSS itself with /usr/bin/time -v on
	// `headroom simulate`).
	b.ReportMetric(float64(ms.Sys)/(1<<20), "MB-sys")
	b.ReportMetric(float64(requests)/sec, "requests/s")
	b.ReportMetric(float64(events)/sec, "events/s")
	b.ReportMetric(float64(steps)/sec, "steps/s")
}

func BenchmarkSimulate100k(b *testing.B) { benchRun(b, 100_000) }
func BenchmarkSimulate1M(b *testing.B)   { benchRun(b, 1_000_000) }

// BenchmarkSimulate10M is a day and more of the same traffic; it runs
// only with HEADROOM_BENCH_10M=1 (a minute or more a run).
func BenchmarkSimulate10M(b *testing.B) {
	if os.Getenv("HEADROOM_BENCH_10M") == "" {
		b.Skip("set HEADROOM_BENCH_10M=1 to run the 10M-request benchmark")
	}
	benchRun(b, 10_000_000)
}
