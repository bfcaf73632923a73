package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/headroom-sim/headroom/catalogs"
	"github.com/headroom-sim/headroom/hardware"
	"github.com/headroom-sim/headroom/internal/study/plan"
	"github.com/headroom-sim/headroom/internal/study/scenario"
	"github.com/headroom-sim/headroom/sim"
	"github.com/headroom-sim/headroom/sim/memory"
	"github.com/headroom-sim/headroom/sim/stats"
	"github.com/headroom-sim/headroom/sim/steptime"
)

// setFlags collects repeated --set path=value overrides.
type setFlags []string

func (s *setFlags) String() string     { return strings.Join(*s, ",") }
func (s *setFlags) Set(v string) error { *s = append(*s, v); return nil }

// register adds the scenario flags shared by simulate and the planning
// commands.
func (f *scenarioFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.file, "scenario", "", "scenario file (YAML or JSON); without it the built-in default runs")
	fs.Int64Var(&f.seed, "seed", 0, "workload seed (overrides workload.seed)")
	fs.StringVar(&f.model, "model", "", "override model")
	fs.StringVar(&f.gpu, "gpu", "", "override gpu")
	fs.IntVar(&f.tp, "tp", 0, "override tp")
	fs.IntVar(&f.replicas, "replicas", 0, "override replicas")
	fs.IntVar(&f.requests, "requests", 0, "override workload.requests")
	fs.Float64Var(&f.rate, "rate-rps", 0, "open-loop arrival rate, requests/s (workload.arrival.rate_rps; a closed loop becomes Poisson arrivals)")
	fs.IntVar(&f.concurrency, "concurrency", 0, "closed loop of this many users, each sending when its last request finished (workload.arrival)")
	fs.IntVar(&f.inputTokens, "input-tokens", 0, "prompt tokens per request (workload.input_tokens: a fixed length's value, a normal or lognormal one's mean)")
	fs.IntVar(&f.outputTokens, "output-tokens", 0, "output tokens per request (workload.output_tokens, as --input-tokens)")
	f.fs = fs
	fs.Var(&f.sets, "set", "override any scenario field: --set engine.max_num_seqs=128 (repeatable)")
	fs.StringVar(&f.calibration, "calibration", "", "step-time profile from `headroom calibrate` (overrides the scenario's)")
	fs.StringVar(&f.catalogDir, "catalog-dir", "", "directory of extra catalog entries")
	fs.StringVar(&f.kernelDB, "kernel-db", "", "measured kernel latencies laid out like AIConfigurator's perf database (<system>/<op>/<framework>/<version>/*.parquet) for the table step-time backend (steptime.kernel_db)")
	fs.StringVar(&f.backend, "steptime", "", "step-time backend: table (measured kernels where they cover a shape) or formula (steptime.backend)")
}

// scenarioFlags are the flags shared by the commands that take a scenario.
type scenarioFlags struct {
	file, catalogDir, calibration string
	kernelDB, backend             string
	sets                          setFlags
	seed                          int64
	model, gpu                    string
	tp, replicas, requests        int
	rate                          float64
	concurrency                   int
	inputTokens, outputTokens     int
	// fs is the flag set the flags were registered on (to tell a flag
	// given as 0 from one not given).
	fs *flag.FlagSet
}

func runSimulate(ctx context.Context, e *env, args []string) error {
	var f scenarioFlags
	var format string
	var timeout time.Duration
	var maxEvents int64
	var progress, verdict bool
	var outs runOutputs
	var wr workloadRun
	fs := newFlagSet("simulate")
	fs.BoolVar(&verdict, "speculation-verdict", true, "with speculative decoding: also simulate the scenario without it and at other acceptances, for its speed-up and break-even acceptance at one request in flight and at the scenario's load (=false skips them)")
	fs.StringVar(&wr.path, "workload-run", "", "replay a measured run's requests as the workload (a run folder or result file, as validate --run reads: a blis observe trace, an LLMServingSim run …): their arrivals, lengths and tenants or benchmarks")
	fs.StringVar(&wr.arrivals, "workload-arrivals", "send", "with --workload-run: arrive at the run's send times (send) or at its scheduled arrivals, without the client's recorded delay (schedule)")
	fs.StringVar(&outs.plotDir, "plot-dir", "", "write SVG charts (TTFT/TPOT/ITL/E2E CDFs, KV usage and queues over time) into this directory")
	fs.StringVar(&outs.metricsOut, "metrics-out", "", "write the run as OpenMetrics text under vLLM's metric names (for Prometheus and vLLM's Grafana dashboards)")
	f.register(fs)
	fs.StringVar(&format, "output", "table", "output format: table|json")
	fs.DurationVar(&timeout, "timeout", 0, "stop the simulation after this wall time (0 = none)")
	fs.Int64Var(&maxEvents, "max-events", 0, "stop the simulation after this many events (0 = default limit)")
	fs.BoolVar(&progress, "progress", false, "print progress to stderr")
	pos, err := parseFlags(fs, args, e.stdout)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usagef("unexpected argument %q", pos[0])
	}
	if err := outputFormat(format); err != nil {
		return err
	}
	switch {
	case maxEvents < 0:
		return usagef("--max-events: %d is not a number of events >= 0 (0 = the default limit)", maxEvents)
	case timeout < 0:
		return usagef("--timeout: %s is not a duration >= 0 (0 = none)", timeout)
	}
	cat, err := loadCatalog(e, f.catalogDir)
	if err != nil {
		return err
	}
	res, sc, err := loadScenario(e, cat, &f)
	if err != nil {
		return err
	}
	if wr.path != "" {
		msg, err := wr.apply(res, "")
		if err != nil {
			return err
		}
		fmt.Fprintln(e.stderr, "headroom simulate: "+msg)
	}
	res.Config.MaxEvents = maxEvents
	if outs.plotDir != "" || outs.metricsOut != "" {
		res.Config.Report.Timeseries = true // the timeline and the metrics need it
	}
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	opts := outs.options()
	if wr.run != nil {
		opts = append(opts, wr.sink())
	}
	if progress {
		opts = append(opts, sim.WithProgress(func(p float64) { fmt.Fprintf(e.stderr, "\rsimulating: %3.0f%%", 100*p) }))
	}
	rep, err := sim.Run(ctx, res.Config, opts...)
	if progress {
		fmt.Fprintln(e.stderr)
	}
	if err != nil {
		return scenarioError(err)
	}
	if rep.Speculative != nil && verdict {
		if wr.path != "" {
			fmt.Fprintln(e.stderr, "headroom simulate: no speculation verdict with --workload-run (it compares the scenario's own workload)")
		} else if err := speculationVerdict(ctx, e, cat, &f, sc, rep); err != nil {
			return err
		}
	}
	if err := outs.write(rep, res.Config.Engine.MaxModelLen); err != nil {
		return err
	}
	if err := judge(&res.Config, rep); err != nil {
		return err
	}
	if format == "json" {
		return writeJSON(e.stdout, rep)
	}
	writeReportTable(e.stdout, sc, res, rep)
	wr.writeStages(e.stdout)
	return nil
}

// speculationLine says in one line what speculation does at one load.
func speculationLine(at *sim.SpeculationAt, assumed float64) string {
	word := "faster"
	if at.SpeedupRatio < 1 {
		word = "slower"
	}
	return fmt.Sprintf("%s: %.2f× E2E P50 (%.1f ms against %.1f ms without; TPOT %.2f×) at %.2f tokens per verification, %s; %s",
		at.Load, at.SpeedupRatio, at.E2EP50MS, at.E2EP50PlainMS, at.TPOTSpeedupRatio, assumed, word, at.BreakEven)
}

// speculationVerdict adds the planner's answer on speculative decoding
// to rep (the scenario with and without it, and its break-even
// acceptance).
func speculationVerdict(ctx context.Context, e *env, cat *catalogs.Catalog, f *scenarioFlags, sc *scenario.Scenario, rep *sim.Report) error {
	env, _, err := loadScenarioOnly(e, cat, f)
	if err != nil {
		return err
	}
	v, err := (&plan.Runner{Env: env}).Speculation(ctx, *sc, rep)
	if err != nil {
		return scenarioError(err)
	}
	rep.Speculative.Verdict = v
	return nil
}

// loadScenario reads the scenario (or the default), applies the flag
// overrides and resolves it; file references are relative to the
// scenario's directory.
func loadScenario(e *env, cat *catalogs.Catalog, f *scenarioFlags) (*scenario.Resolved, *scenario.Scenario, error) {
	sc, env, err := decodeScenario(e, cat, f)
	if err != nil {
		return nil, nil, err
	}
	res, err := sc.Resolve(env)
	if err != nil {
		return nil, &sc, scenarioError(err)
	}
	return res, &sc, nil
}

// decodeScenario reads the scenario (or the default) with the flag
// overrides, and the environment to resolve it in.
func decodeScenario(e *env, cat *catalogs.Catalog, f *scenarioFlags) (scenario.Scenario, scenario.Env, error) {
	given := givenFlags(f.fs)
	if err := f.checkShortcuts(given); err != nil {
		return scenario.Scenario{}, scenario.Env{}, err
	}
	var sets []string
	add := func(cond bool, k string, v any) {
		if cond {
			sets = append(sets, fmt.Sprintf("%s=%v", k, v))
		}
	}
	add(f.model != "", "model", f.model)
	add(f.gpu != "", "gpu", f.gpu)
	add(given["tp"] || f.tp != 0, "tp", f.tp)
	add(given["replicas"] || f.replicas != 0, "replicas", f.replicas)
	add(given["requests"] || f.requests != 0, "workload.requests", f.requests)
	add(f.seed != 0, "workload.seed", f.seed)
	add(f.calibration != "", "calibration", f.calibration)
	add(f.kernelDB != "", "steptime.kernel_db", f.kernelDB)
	add(f.backend != "", "steptime.backend", f.backend)

	name, dir := "default scenario", "."
	var doc []byte
	if f.file != "" {
		b, err := os.ReadFile(f.file)
		if err != nil {
			return scenario.Scenario{}, scenario.Env{}, usagef("--scenario: %v", err)
		}
		doc, name, dir = b, f.file, filepath.Dir(f.file)
	}
	shortcuts, err := f.shortcutSets(doc, given)
	if err != nil {
		return scenario.Scenario{}, scenario.Env{}, err
	}
	sets = append(append(sets, shortcuts...), f.sets...)
	var sc scenario.Scenario
	if f.file == "" && len(sets) == 0 {
		sc = scenario.Default()
	} else {
		if f.file == "" {
			doc = []byte("model: llama-3.1-8b\ngpu: h100-sxm\n")
		}
		if len(sets) > 0 {
			if doc, err = applySets(doc, sets); err != nil {
				return sc, scenario.Env{}, err
			}
			name += " (with overrides)"
		}
		if sc, err = scenario.Decode(strings.NewReader(string(doc)), name); err != nil {
			return sc, scenario.Env{}, usagef("%v", err)
		}
	}
	env := scenario.Env{
		Catalog: cat,
		Open: func(p string) (io.ReadCloser, error) {
			if !filepath.IsAbs(p) {
				p = filepath.Join(dir, p)
			}
			return os.Open(p)
		},
		Calibration: func(ref string) (*steptime.Profile, error) {
			p := ref
			if !filepath.IsAbs(p) && f.calibration == "" {
				p = filepath.Join(dir, p)
			}
			return loadProfileFile(p)
		},
		KernelDB: func(g *hardware.GPU, d string) (*steptime.KernelDB, error) {
			if d != "" && !filepath.IsAbs(d) && f.kernelDB == "" {
				d = filepath.Join(dir, d)
			}
			return kernelDBs(cat).Load(g, d)
		},
	}
	return sc, env, nil
}

// loadScenarioOnly reads and decodes the scenario (with overrides) and
// returns the environment that resolves it, without resolving.
func loadScenarioOnly(e *env, cat *catalogs.Catalog, f *scenarioFlags) (scenario.Env, *scenario.Scenario, error) {
	sc, env, err := decodeScenario(e, cat, f)
	if err != nil {
		return env, nil, err
	}
	if err := sc.Validate(); err != nil {
		return env, nil, scenarioError(err)
	}
	return env, &sc, nil
}

// scenarioError maps resolution and simulation errors to exit codes: a
// run stopped by its context (--timeout, Ctrl-C) exits 1, infeasible
// configurations exit 3, and anything else (a field out of range, unknown
// ids, a workload past the simulated time span, the event limit) is the
// scenario's doing and exits 2, naming the field when the error does.
func scenarioError(err error) error {
	var fe *hardware.FieldError
	switch {
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return err // stopped, not refused: exit 1
	case errors.Is(err, memory.ErrDoesNotFit):
		return &infeasibleError{Msg: err.Error()}
	case errors.As(err, &fe):
		return usagef("%s: %s", fe.Field, fe.Reason)
	case errors.Is(err, sim.ErrTooLong):
		return usagef("workload: %v", err)
	case errors.Is(err, catalogs.ErrUnknownGPU), errors.Is(err, catalogs.ErrUnknownModel):
		return usagef("%v", err)
	}
	return usagef("%v", err)
}

// applySets merges path=value overrides into a YAML document.
func applySets(doc []byte, sets []string) ([]byte, error) {
	var ovs []scenario.Override
	for _, s := range sets {
		o, err := scenario.ParseOverride(s)
		if err != nil {
			return nil, usagef("--set: %v", err)
		}
		ovs = append(ovs, o)
	}
	out, err := scenario.ApplyOverrides(doc, ovs...)
	if err != nil {
		return nil, usagef("%v", err)
	}
	return out, nil
}

func writeReportTable(w io.Writer, sc *scenario.Scenario, res *scenario.Resolved, r *sim.Report) {
	cfg := &res.Config
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "Scenario\t%s on %d× %s (tp %d) × %d replica(s), weights %s, KV %s\n", r.Model, cfg.TP, r.GPU, cfg.TP, r.Replicas, cfg.Precision.Weights, cfg.Precision.KV)
	fmt.Fprintf(tw, "Engine\tmax_num_seqs %d, max_num_batched_tokens %d, KV blocks/GPU %d × %d tokens, chunked prefill %v, prefix caching %v\n",
		cfg.Engine.MaxNumSeqs, cfg.Engine.MaxNumBatchedTokens, r.KVCache.NumGPUBlocks, cfg.Engine.BlockSize, cfg.Engine.EnableChunkedPrefill, cfg.Engine.EnablePrefixCaching)
	fmt.Fprintf(tw, "Requests\t%d completed, %d rejected in %.1f s simulated (%d steps)\n", r.Requests.Completed, r.Requests.Rejected, r.DurationS, r.Simulation.Steps)
	if n := r.Requests.Unfinished; n > 0 {
		fmt.Fprintf(tw, "Unfinished\t%d of %d requests never finished: the engine could not schedule them\n", n, r.Requests.Total)
	}
	fmt.Fprintln(tw)
	fmt.Fprintln(tw, "Latency (ms)\tmean\tp50\tp90\tp95\tp99\tp99.9\tmax")
	row := func(name string, s stats.Summary) {
		fmt.Fprintf(tw, "%s\t%.1f\t%.1f\t%.1f\t%.1f\t%.1f\t%.1f\t%.1f\n", name, s.Mean, s.P50, s.P90, s.P95, s.P99, s.P999, s.Max)
	}
	row("TTFT", r.TTFTMS)
	row("TPOT", r.TPOTMS)
	row("ITL", r.ITLMS)
	row("E2E", r.E2EMS)
	row("queue", r.QueueMS)
	writeBands(tw, r)
	fmt.Fprintln(tw)
	t := r.Throughput
	fmt.Fprintf(tw, "Throughput\t%.2f req/s, %.0f input tok/s, %.0f output tok/s, %.0f total tok/s\n", t.RequestsPerS, t.InputTokensPerS, t.OutputTokensPerS, t.TotalTokensPerS)
	fmt.Fprintf(tw, "KV cache\tpeak %.1f%%, mean %.1f%% of %d blocks; %d preemptions; prefix-cache hit ratio %.1f%%; max running %d\n",
		100*r.KVCache.PeakUsageRatio, 100*r.KVCache.MeanUsageRatio, r.KVCache.NumGPUBlocks, r.Preemptions, 100*r.PrefixCacheHitRatio, r.MaxRunning)
	fl := r.Fluency
	fmt.Fprintf(tw, "Fluency\tITL CV %.2f, %d stalls > %.0f ms, longest %.0f ms\n", fl.ITLCV, fl.Stalls, fl.StallThresholdMS, fl.LongestStallMS)
	writeDisaggTable(tw, r)
	if sp := r.Speculative; sp != nil {
		fmt.Fprintf(tw, "Speculative\t%s, %d drafts: %.1f%% accepted (by position %s), mean acceptance length %.2f, %.2f tokens per request step, proposer %.1f%% of step time\n",
			sp.Method, sp.NumSpeculativeTokens, 100*sp.AcceptanceRate, percents(sp.PerPositionAcceptanceRate), sp.MeanAcceptanceLength, sp.TokensPerRequestStep, 100*sp.ProposerTimeRatio)
		fmt.Fprintf(tw, "Acceptance\t%s\n", sp.AcceptanceSource)
		if sp.AcceptanceWarning != "" {
			fmt.Fprintf(tw, "Warning\t%s\n", sp.AcceptanceWarning)
		}
		if v := sp.Verdict; v != nil {
			for _, at := range []*sim.SpeculationAt{v.LowLoad, v.AtLoad} {
				if at != nil {
					fmt.Fprintf(tw, "Speculation pays?\t%s\n", speculationLine(at, v.MeanAcceptanceLength))
				}
			}
		}
	}
	if r.SLA != nil {
		verdict := "MET"
		if !r.SLA.Met {
			verdict = "MISSED"
		}
		fmt.Fprintf(tw, "SLA\t%s, goodput %.2f req/s\n", verdict, *r.GoodputRPS)
		for _, c := range r.SLA.Checks {
			mark := "ok"
			if !c.Met {
				mark = "MISSED"
			}
			fmt.Fprintf(tw, "  %s %s\t%.1f ms (limit %.1f) %s\n", c.Metric, c.Quantile, c.ValueMS, c.LimitMS, mark)
			if c.Reason != "" {
				fmt.Fprintf(tw, "  \t  %s\n", c.Reason)
			}
		}
	}
	if a := r.Autoscale; a != nil {
		rs := a.ReplicaSeconds
		fmt.Fprintf(tw, "Autoscale	%s at %g per replica, %d–%d replicas, scale-up delay %.0f s: %d started, %d removed, at most %d held; %.2f replica-hours (%.2f starting, %.2f serving, %.2f draining) over %.0f s\n",
			a.Metric, a.Target, a.MinReplicas, a.MaxReplicas, a.ScaleUpDelayS, a.ScaleUps, a.ScaleDowns, a.PeakReplicas,
			rs.Total/3600, rs.Starting/3600, rs.Serving/3600, rs.Draining/3600, a.EndS)
	}
	for _, st := range r.Stages {
		load := fmt.Sprintf("%.2f req/s", st.RateRPS)
		if st.Concurrency > 0 {
			load = fmt.Sprintf("concurrency %d", st.Concurrency)
		}
		fmt.Fprintf(tw, "Stage %d\t%s for %.0f s: %d done, TTFT p50/p99 %.0f/%.0f ms, TPOT p50/p99 %.1f/%.1f ms, %.0f output tok/s\n",
			st.Index, load, st.DurationS, st.Requests.Completed, st.TTFTMS.P50, st.TTFTMS.P99, st.TPOTMS.P50, st.TPOTMS.P99, st.Throughput.OutputTokensPerS)
	}
	tw.Flush()
}

// percents writes fractions as "80/59/42%".
func percents(xs []float64) string {
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = fmt.Sprintf("%.0f", 100*x)
	}
	return strings.Join(parts, "/") + "%"
}
