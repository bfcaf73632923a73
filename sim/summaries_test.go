package sim

import (
	"context"
	"math"
	"testing"

	"github.com/headroom-sim/headroom/sim/stats"
	"github.com/headroom-sim/headroom/sim/workload"
)

// stagedSLAConfig is a staged load (two open-loop stages and a closed
// loop) with an SLA tight enough that some requests miss it.
func stagedSLAConfig(t *testing.T) Config { return stagedSLAConfigSeed(t, 13) }

func stagedSLAConfigSeed(t *testing.T, seed uint64) Config {
	cfg := randomConfig(t, seed)
	cfg.Workload.Requests = 0
	cfg.Workload.Arrival = workload.ArrivalSpec{}
	cfg.Workload.MultiTurn = nil
	cfg.Workload.Stages = []workload.StageSpec{{DurationS: 6, RateRPS: 12}, {DurationS: 5, Concurrency: 10}, {DurationS: 4, RateRPS: 30}}
	in, _ := workload.NewLengthSampler(workload.LengthSpec{Type: "uniform", Min: 20, Max: 600}, "in", nil)
	out, _ := workload.NewLengthSampler(workload.LengthSpec{Type: "lognormal", Mean: 60, Stddev: 60, Max: 400}, "out", nil)
	cfg.Workload.Input, cfg.Workload.Output = in, out
	cfg.NumGPUBlocks = 160 // some preemptions
	cfg.SLA = &SLA{TTFTMS: map[string]float64{"p99": 200, "p50": 100}, TPOTMS: map[string]float64{"p90": 10.5}, E2EMS: map[string]float64{"p99": 2000}}
	return cfg
}

// runSamples runs cfg keeping at most limit values of each per-request
// distribution exactly, and returns the report and every completed
// request's sample.
func runSamples(t *testing.T, cfg Config, limit int) (*Report, []RequestSample) {
	t.Helper()
	s, err := newSimulator(&cfg)
	if err != nil {
		t.Fatal(err)
	}
	s.m.all.setExactLimit(limit)
	for _, c := range s.m.stages {
		c.setExactLimit(limit)
	}
	var out []RequestSample
	s.m.requestSink = func(r RequestSample) { out = append(out, r) }
	rep, err := s.run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return rep, out
}

// TestSummariesFromRequests checks the report's per-request figures
// against the requests themselves: exact summaries equal the samples'
// own, histogram summaries (a run past the exact limit) are within the
// documented error and say so, and goodput, stage completions and stage
// preemptions, counted as requests finish, match a count over the samples.
func TestSummariesFromRequests(t *testing.T) {
	cfg := stagedSLAConfig(t)
	exact, samples := runSamples(t, cfg, stats.ExactLimit)
	if len(samples) < 150 {
		t.Fatalf("only %d requests completed", len(samples))
	}
	hist, _ := runSamples(t, stagedSLAConfig(t), 50)
	if exact.Percentiles.PerRequest != stats.MethodExact || hist.Percentiles.PerRequest != stats.MethodHistogram {
		t.Fatalf("methods %q and %q, want exact and histogram", exact.Percentiles.PerRequest, hist.Percentiles.PerRequest)
	}
	var ttft, tpot, e2e []float64
	good := 0
	for _, r := range samples {
		ttft, e2e = append(ttft, r.TTFTMS), append(e2e, r.E2EMS)
		if r.OutputTokens > 1 {
			tpot = append(tpot, r.TPOTMS)
		}
		if r.TTFTMS <= 200 && (r.OutputTokens <= 1 || r.TPOTMS <= 10.5) && r.E2EMS <= 2000 {
			good++
		}
	}
	for _, c := range []struct {
		name      string
		xs        []float64
		exact, hs stats.Summary
	}{
		{"ttft_ms", ttft, exact.TTFTMS, hist.TTFTMS},
		{"tpot_ms", tpot, exact.TPOTMS, hist.TPOTMS},
		{"e2e_ms", e2e, exact.E2EMS, hist.E2EMS},
	} {
		want := roundSummary(stats.Summarize(c.xs))
		if c.exact != want {
			t.Errorf("%s: exact summary %+v, samples give %+v", c.name, c.exact, want)
		}
		for _, q := range stats.QuantileNames {
			w, _ := want.At(q)
			h, _ := c.hs.At(q)
			// 0.1% of the value, plus the report's rounding to 4 decimals.
			if math.Abs(h-w) > stats.HistogramRelativeError*w+1e-4 {
				t.Errorf("%s %s: histogram %g, exact %g", c.name, q, h, w)
			}
		}
	}
	if g := round(float64(good)/exact.DurationS, 4); exact.GoodputRPS == nil || *exact.GoodputRPS != g || good == len(samples) || good == 0 {
		t.Errorf("goodput %v, samples give %g (%d of %d good)", exact.GoodputRPS, g, good, len(samples))
	}
	var start float64
	for i, st := range cfg.Workload.Stages {
		lo, hi := Time(start*1e9), Time((start+st.DurationS)*1e9)
		done, pre := 0, int64(0)
		for _, r := range samples {
			if r.Stage != i {
				continue
			}
			if f := Time(math.Round(r.FinishS * 1e9)); f >= lo && f < hi {
				done++
			}
			pre += int64(r.Preemptions)
		}
		sr := exact.Stages[i]
		if want := round(float64(done)/st.DurationS, 4); sr.Throughput.RequestsPerS != want {
			t.Errorf("stage %d: %g requests/s, samples give %g", i, sr.Throughput.RequestsPerS, want)
		}
		if done == 0 {
			t.Errorf("stage %d: no request finished in its window: the check is empty", i)
		}
		if sr.Preemptions != pre {
			t.Errorf("stage %d: %d preemptions, samples give %d", i, sr.Preemptions, pre)
		}
		start += st.DurationS
	}
}

// TestStagesShareTheirExactBudget: a run's stages keep their exact values
// within one budget. A stage that would go past it moves to histograms
// (within the documented error of its samples' own summaries) and says so;
// the others stay exact, equal to their samples' summaries.
func TestStagesShareTheirExactBudget(t *testing.T) {
	cfg := stagedSLAConfig(t)
	s, err := newSimulator(&cfg)
	if err != nil {
		t.Fatal(err)
	}
	budget := stats.NewBudget(400, 0) // four distributions: about 100 requests
	for _, c := range s.m.stages {
		c.budget = budget
		c.setExactLimit(stats.ExactLimit)
	}
	var samples []RequestSample
	s.m.requestSink = func(r RequestSample) { samples = append(samples, r) }
	rep, err := s.run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if rep.Percentiles.StagesExactUpTo != stagesExactUpTo {
		t.Errorf("stages_exact_up_to %d, want %d", rep.Percentiles.StagesExactUpTo, stagesExactUpTo)
	}
	methods := map[string]int{}
	for i, sr := range rep.Stages {
		methods[sr.PerRequestPercentiles]++
		var ttft, e2e []float64
		for _, r := range samples {
			if r.Stage == i {
				ttft, e2e = append(ttft, r.TTFTMS), append(e2e, r.E2EMS)
			}
		}
		for _, c := range []struct {
			name string
			xs   []float64
			got  stats.Summary
		}{{"ttft_ms", ttft, sr.TTFTMS}, {"e2e_ms", e2e, sr.E2EMS}} {
			want := roundSummary(stats.Summarize(c.xs))
			if sr.PerRequestPercentiles == stats.MethodExact {
				if c.got != want {
					t.Errorf("stage %d %s: exact summary %+v, samples give %+v", i, c.name, c.got, want)
				}
				continue
			}
			for _, q := range stats.QuantileNames {
				w, _ := want.At(q)
				h, _ := c.got.At(q)
				if math.Abs(h-w) > stats.HistogramRelativeError*w+1e-4 {
					t.Errorf("stage %d %s %s: histogram %g, exact %g", i, c.name, q, h, w)
				}
			}
		}
	}
	if methods[stats.MethodExact] == 0 || methods[stats.MethodHistogram] == 0 {
		t.Fatalf("stage methods %v: want both", methods)
	}
	held := 0
	for _, c := range s.m.stages {
		for _, d := range []*stats.Distribution{c.ttft, c.tpot, c.e2e, c.queue} {
			if d.Method() == stats.MethodExact {
				held += int(d.Count())
			}
		}
	}
	if held > 400 {
		t.Errorf("stages hold %d exact values against a budget of 400", held)
	}
}
