package plan

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"sort"
	"sync"

	"github.com/headroom-sim/headroom/internal/study/scenario"
	"github.com/headroom-sim/headroom/sim"
	"github.com/headroom-sim/headroom/sim/memory"
)

// PlanSpec asks for the cheapest clusters that serve a workload within an
// SLA.
type PlanSpec struct {
	// Scenario gives the model, engine settings, workload (the target load)
	// and SLA; its gpu, tp and replicas are replaced by the candidates.
	Scenario scenario.Scenario `json:"scenario"`
	// GPUs are the candidate GPU ids (default: the whole catalog).
	GPUs []string `json:"gpus,omitempty"`
	// TPs are the candidate tensor-parallel degrees (default 1, 2, 4, 8;
	// each kept where the model splits evenly and one node holds it).
	TPs []int `json:"tps,omitempty"`
	// MaxReplicas bounds the replica search per GPU and TP (default 16).
	MaxReplicas int `json:"max_replicas,omitempty"`
	// Configs, when given, are simulated as they are instead of searching
	// replicas over GPUs × TPs.
	Configs []Config `json:"configs,omitempty"`
	// PricePerGPUHourUSD overrides catalog prices by GPU id.
	PricePerGPUHourUSD map[string]float64 `json:"price_per_gpu_hour_usd,omitempty"`
	// SkipHeadroom skips the headroom search of each SLA-meeting candidate.
	SkipHeadroom bool `json:"skip_headroom,omitempty"`
	// HeadroomRequests caps the requests of each headroom probe (0 = 2000).
	HeadroomRequests int `json:"headroom_requests,omitempty"`
	// HeadroomDurationS is the minimum arrival window of each headroom probe
	// (0 = 60 s).
	HeadroomDurationS float64 `json:"headroom_duration_s,omitempty"`
	// ParetoMetric is the latency the Pareto front trades against cost
	// (default "e2e_ms.p99").
	ParetoMetric string `json:"pareto_metric,omitempty"`
	// Disaggregation, when set, adds disaggregated prefill/decode
	// candidates to the ranking (disagg.go).
	Disaggregation *DisaggSearch `json:"disaggregation,omitempty"`
}

// Config is one cluster shape: replicas of one GPU and TP, or (with
// Disaggregation) a prefill and a decode pool.
type Config struct {
	GPU            string       `json:"gpu,omitempty"`
	TP             int          `json:"tp,omitempty"`
	Replicas       int          `json:"replicas,omitempty"`
	Disaggregation *DisaggShape `json:"disaggregation,omitempty"`
}

// Candidate is a simulated cluster shape.
type Candidate struct {
	Config
	GPUs                          int            `json:"gpus"`
	PricePerGPUHourUSD            float64        `json:"price_per_gpu_hour_usd"`
	CostPerHourUSD                float64        `json:"cost_per_hour_usd"`
	CostPerMillionOutputTokensUSD float64        `json:"cost_per_million_output_tokens_usd"`
	MeetsSLA                      bool           `json:"meets_sla"`
	TTFTP99MS                     float64        `json:"ttft_p99_ms"`
	TPOTP99MS                     float64        `json:"tpot_p99_ms"`
	E2EP99MS                      float64        `json:"e2e_p99_ms"`
	ParetoLatencyMS               float64        `json:"pareto_latency_ms"`
	ThroughputRPS                 float64        `json:"throughput_rps"`
	OutputTokensPerS              float64        `json:"output_tokens_per_s"`
	GoodputRPS                    float64        `json:"goodput_rps"`
	Checks                        []sim.SLACheck `json:"checks"`
	// Headroom is the highest load the cluster sustains within the SLA
	// divided by the target load (0 when not searched).
	Headroom float64 `json:"headroom"`
	// HeadroomLimiting is the bound that breaks first above that load.
	HeadroomLimiting string `json:"headroom_limiting,omitempty"`
	Pareto           bool   `json:"pareto"`
}

// Pruned is a GPU and TP (or a pair of pool types) that cannot serve the
// model at all.
type Pruned struct {
	GPU            string       `json:"gpu"`
	TP             int          `json:"tp"`
	Disaggregation *DisaggShape `json:"disaggregation,omitempty"`
	Reason         string       `json:"reason"`
}

// PlanResult ranks the clusters that meet the SLA.
type PlanResult struct {
	Dimension  string  `json:"dimension"`
	TargetLoad float64 `json:"target_load"`
	// Candidates meet the SLA, cheapest per hour first.
	Candidates []Candidate `json:"candidates"`
	// Missed were simulated but missed the SLA (the largest replica count
	// tried for each GPU and TP).
	Missed []Candidate `json:"missed,omitempty"`
	Pruned []Pruned    `json:"pruned,omitempty"`
	// Simulations is the number of simulations run.
	Simulations int `json:"simulations"`
}

// ErrNoCandidates is returned when no candidate is left to simulate.
var ErrNoCandidates = errors.New("no candidate configuration fits")

func (spec *PlanSpec) defaults(r *Runner) error {
	if spec.Scenario.SLA == nil {
		return ErrNoSLA
	}
	if spec.MaxReplicas <= 0 {
		spec.MaxReplicas = 16
	}
	if spec.HeadroomRequests <= 0 {
		spec.HeadroomRequests = 2000
	}
	if spec.HeadroomDurationS <= 0 {
		spec.HeadroomDurationS = 60
	}
	if spec.ParetoMetric == "" {
		spec.ParetoMetric = "e2e_ms.p99"
	}
	if len(spec.GPUs) == 0 && len(spec.Configs) == 0 {
		for _, g := range r.Env.Catalog.GPUs() {
			spec.GPUs = append(spec.GPUs, g.ID)
		}
	}
	if len(spec.TPs) == 0 {
		spec.TPs = []int{1, 2, 4, 8}
	}
	return nil
}

// Plan searches the candidates. Each GPU × TP that fits gets the fewest
// replicas meeting the SLA (doubling, then bisecting), in parallel across
// candidates; SLA-meeting ones then get a headroom search.
func (r *Runner) Plan(ctx context.Context, spec PlanSpec, progress func(float64)) (*PlanResult, error) {
	if err := spec.defaults(r); err != nil {
		return nil, err
	}
	base := spec.Scenario
	dim, target, err := loadOf(&base)
	if err != nil {
		return nil, err
	}
	res := &PlanResult{Dimension: dim, TargetLoad: target}

	type pair struct {
		gpu      string
		tp       int
		replicas int
	}
	var pairs []pair
	if len(spec.Configs) > 0 {
		for _, c := range spec.Configs {
			if c.Disaggregation == nil {
				pairs = append(pairs, pair{c.GPU, max(c.TP, 1), max(c.Replicas, 1)})
			}
		}
	} else {
		for _, g := range spec.GPUs {
			for _, tp := range spec.TPs {
				pairs = append(pairs, pair{g, tp, 0})
			}
		}
	}
	// Prune what cannot start before simulating anything.
	var live []pair
	for _, p := range pairs {
		s := Config{GPU: p.gpu, TP: p.tp, Replicas: 1}.Scenario(base)
		if _, err := s.CheckFits(r.env()); err != nil {
			var fe *scenario.FieldError
			if errors.Is(err, memory.ErrDoesNotFit) || errors.As(err, &fe) {
				res.Pruned = append(res.Pruned, Pruned{GPU: p.gpu, TP: p.tp, Reason: err.Error()})
				continue
			}
			return nil, err
		}
		live = append(live, p)
	}
	disagg, dpruned, err := r.disaggPairs(&spec, base)
	if err != nil {
		return nil, err
	}
	res.Pruned = append(res.Pruned, dpruned...)
	if len(live)+len(disagg) == 0 {
		return res, ErrNoCandidates
	}

	steps := len(live) + len(disagg)
	if !spec.SkipHeadroom {
		steps *= 2 // a replica search and a headroom search per candidate
	}
	prog := NewProgress(steps, progress)
	var mu sync.Mutex
	sims := 0
	simulateShape := func(c Config) (Candidate, error) {
		out := r.Run(ctx, c.Scenario(base))
		mu.Lock()
		sims++
		mu.Unlock()
		if out.Err != nil {
			return Candidate{}, out.Err
		}
		return r.candidate(spec, out, c)
	}
	simulate := func(p pair, replicas int) (Candidate, error) {
		return simulateShape(Config{GPU: p.gpu, TP: p.tp, Replicas: replicas})
	}
	type found struct {
		met  *Candidate
		miss *Candidate
		err  error
	}
	results := make([]found, len(live))
	parallel(ctx, len(live), r.Workers, func(i int) {
		defer prog.Step()
		p := live[i]
		if p.replicas > 0 {
			c, err := simulate(p, p.replicas)
			if err != nil {
				results[i] = found{err: err}
			} else if c.MeetsSLA {
				results[i] = found{met: &c}
			} else {
				results[i] = found{miss: &c}
			}
			return
		}
		lo, hi := 0, 0 // lo missed, hi met
		var best, last *Candidate
		for n := 1; n <= spec.MaxReplicas; n *= 2 {
			c, err := simulate(p, n)
			if err != nil {
				results[i] = found{err: err}
				return
			}
			if c.MeetsSLA {
				hi, best = n, &c
				break
			}
			lo, last = n, &c
		}
		if best == nil {
			results[i] = found{miss: last}
			return
		}
		for hi-lo > 1 {
			mid := (lo + hi) / 2
			c, err := simulate(p, mid)
			if err != nil {
				results[i] = found{err: err}
				return
			}
			if c.MeetsSLA {
				hi, best = mid, &c
			} else {
				lo = mid
			}
		}
		results[i] = found{met: best}
	})
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	for _, f := range results {
		switch {
		case f.err != nil:
			return nil, f.err
		case f.met != nil:
			res.Candidates = append(res.Candidates, *f.met)
		case f.miss != nil:
			res.Missed = append(res.Missed, *f.miss)
		}
	}
	if len(disagg) > 0 {
		met, missed, err := r.planDisaggregated(ctx, &spec, disagg, prog, simulateShape)
		if err != nil {
			return nil, err
		}
		res.Candidates, res.Missed = append(res.Candidates, met...), append(res.Missed, missed...)
	}
	if !spec.SkipHeadroom {
		for range len(live) + len(disagg) - len(res.Candidates) {
			prog.Step() // no headroom search for what missed the SLA
		}
		parallel(ctx, len(res.Candidates), r.Workers, func(i int) {
			defer prog.Step()
			c := &res.Candidates[i]
			s := c.Config.Scenario(base)
			if s.Workload.Requests > spec.HeadroomRequests {
				s.Workload.Requests = spec.HeadroomRequests
			}
			lr, err := (&Runner{Env: r.env(), Workers: 1, Slots: r.Slots, MaxEvents: r.MaxEvents, Admit: r.Admit}).MaxLoad(ctx, LoadSpec{Scenario: s, MaxProbes: 10, Tolerance: 0.05, MinDurationS: spec.HeadroomDurationS}, nil)
			if err != nil || target <= 0 {
				return
			}
			mu.Lock()
			sims += len(lr.Probes)
			mu.Unlock()
			c.Headroom = lr.MaxLoad / target
			c.HeadroomLimiting = lr.LimitingMetric
		})
	}
	rank(res.Candidates)
	markPareto(res.Candidates)
	res.Simulations = sims
	return res, nil
}

// candidate summarises one simulated configuration.
func (r *Runner) candidate(spec PlanSpec, out Outcome, cfg Config) (Candidate, error) {
	rep := out.Report
	c := Candidate{Config: cfg}
	c.GPUs, c.CostPerHourUSD = clusterCost(&spec, out.Resolved)
	c.PricePerGPUHourUSD = c.CostPerHourUSD / float64(max(c.GPUs, 1))
	c.TTFTP99MS, c.TPOTP99MS, c.E2EP99MS = rep.TTFTMS.P99, rep.TPOTMS.P99, rep.E2EMS.P99
	c.ThroughputRPS, c.OutputTokensPerS = rep.Throughput.RequestsPerS, rep.Throughput.OutputTokensPerS
	if c.OutputTokensPerS > 0 {
		c.CostPerMillionOutputTokensUSD = c.CostPerHourUSD / (c.OutputTokensPerS * 3600) * 1e6
	}
	if rep.SLA != nil {
		c.MeetsSLA, c.Checks = rep.SLA.Met, rep.SLA.Checks
	}
	if rep.GoodputRPS != nil {
		c.GoodputRPS = *rep.GoodputRPS
	}
	v, err := Metric(rep, spec.ParetoMetric)
	if err != nil {
		return c, fmt.Errorf("pareto_metric: %w", err)
	}
	c.ParetoLatencyMS = v
	return c, nil
}

// rank orders candidates by cost per hour, then cost per million output
// tokens, then latency.
func rank(cs []Candidate) {
	sort.SliceStable(cs, func(i, j int) bool {
		a, b := cs[i], cs[j]
		if a.CostPerHourUSD != b.CostPerHourUSD {
			return a.CostPerHourUSD < b.CostPerHourUSD
		}
		if a.CostPerMillionOutputTokensUSD != b.CostPerMillionOutputTokensUSD {
			return a.CostPerMillionOutputTokensUSD < b.CostPerMillionOutputTokensUSD
		}
		return a.ParetoLatencyMS < b.ParetoLatencyMS
	})
}

// markPareto flags the candidates no other beats on both cost per hour and
// latency.
func markPareto(cs []Candidate) {
	for i := range cs {
		cs[i].Pareto = true
		for j := range cs {
			if i == j {
				continue
			}
			a, b := cs[j], cs[i]
			if a.CostPerHourUSD <= b.CostPerHourUSD && a.ParetoLatencyMS <= b.ParetoLatencyMS &&
				(a.CostPerHourUSD < b.CostPerHourUSD || a.ParetoLatencyMS < b.ParetoLatencyMS) {
				cs[i].Pareto = false
				break
			}
		}
	}
}

// parallel runs f(0..n-1) on up to workers goroutines.
func parallel(ctx context.Context, n, workers int, f func(i int)) {
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	jobs := make(chan int)
	var wg sync.WaitGroup
	for range min(workers, n) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range jobs {
				f(i)
			}
		}()
	}
	for i := 0; i < n && ctx.Err() == nil; i++ {
		jobs <- i
	}
	close(jobs)
	wg.Wait()
}

var _ = math.Inf
