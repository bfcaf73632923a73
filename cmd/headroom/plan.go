package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/headroom-sim/headroom/internal/study/plan"
	"github.com/headroom-sim/headroom/internal/study/scenario"
	"github.com/headroom-sim/headroom/sim"
	"github.com/headroom-sim/headroom/sim/workload"
)

// profileFlags bring a rate profile into plan's scenario.
type profileFlags struct {
	file, trace, format string
	windowS, timeScale  float64
	rateScale           float64
	keepLengths         bool
}

func (p *profileFlags) register(fs interface {
	StringVar(*string, string, string, string)
	Float64Var(*float64, string, float64, string)
	BoolVar(*bool, string, bool, string)
}) {
	fs.StringVar(&p.file, "rate-profile", "", "traffic that changes over time: a CSV with at_s,rate_rps or a YAML/JSON list of {at_s, rate_rps} (sets workload.rate_profile)")
	fs.StringVar(&p.trace, "rate-profile-trace", "", "derive the rate profile from a trace's arrivals per window (and its lengths, unless --keep-lengths)")
	fs.StringVar(&p.format, "trace-format", "", "format of --rate-profile-trace: "+strings.Join(workload.TraceFormats(), ", ")+" (default: azure for .csv, mooncake for .jsonl)")
	fs.Float64Var(&p.windowS, "window-s", plan.DefaultWindowS, "seconds per window of the profile (and of its report)")
	fs.Float64Var(&p.timeScale, "time-scale", 1, "stretch the profile's time by this factor, keeping its rates (24 makes an hour of trace a day)")
	fs.Float64Var(&p.rateScale, "rate-scale", 1, "multiply the profile's rates by this factor (traffic that grows)")
	fs.BoolVar(&p.keepLengths, "keep-lengths", false, "with --rate-profile-trace, keep the scenario's input and output lengths instead of the trace's")
}

// apply sets the scenario's rate profile from the flags.
func (p *profileFlags) apply(sc *scenario.Scenario, given map[string]bool) ([]string, error) {
	if p.file != "" && p.trace != "" {
		return nil, usagef("--rate-profile-trace: give --rate-profile or --rate-profile-trace, not both")
	}
	if !(p.timeScale > 0 && p.timeScale <= 1e6) {
		return nil, usagef("--time-scale: must be in (0, 1e6], got %g", p.timeScale)
	}
	if !(p.rateScale > 0 && p.rateScale <= 1e6) {
		return nil, usagef("--rate-scale: must be in (0, 1e6], got %g", p.rateScale)
	}
	if !(p.windowS >= 1 && p.windowS <= 86400) {
		return nil, usagef("--window-s: must be in [1, 86400] s, got %g", p.windowS)
	}
	var notes []string
	w := &sc.Workload
	switch {
	case p.file != "":
		f, err := os.Open(p.file)
		if err != nil {
			return nil, usagef("--rate-profile: %v", err)
		}
		defer f.Close()
		pts, err := plan.ParseRateProfile(f, p.file)
		if err != nil {
			return nil, usagef("--rate-profile: %v", err)
		}
		if len(pts) == 1 {
			return nil, usagef("--rate-profile: %s: give at least two points (the last one holds as long as the step before it)", p.file)
		}
		for i := range pts {
			pts[i].AtS *= p.timeScale
		}
		w.RateProfile, w.RateProfileEndS = pts, 0
	case p.trace != "":
		format := p.format
		if format == "" {
			switch {
			case strings.HasSuffix(p.trace, ".csv"):
				format = workload.FormatAzure
			case strings.HasSuffix(p.trace, ".jsonl"):
				format = workload.FormatMooncake
			default:
				return nil, usagef("--trace-format: say the format of %s (%s)", p.trace, strings.Join(workload.TraceFormats(), ", "))
			}
		}
		f, err := os.Open(p.trace)
		if err != nil {
			return nil, usagef("--rate-profile-trace: %v", err)
		}
		defer f.Close()
		recs, err := workload.ParseTrace(f, format, p.trace)
		if err != nil {
			return nil, usagef("--rate-profile-trace: %v", err)
		}
		tp, err := plan.ProfileFromTrace(recs, p.windowS, p.timeScale)
		if err != nil {
			return nil, usagef("--rate-profile-trace: %s: %v", p.trace, err)
		}
		w.RateProfile, w.RateProfileEndS = tp.Points, tp.EndS
		notes = append(notes, fmt.Sprintf("the rate profile counts %s's %d arrivals in windows of %.4g s of trace, stretched %g× into %g s windows",
			p.trace, len(recs), tp.TraceWindowS, p.timeScale, p.windowS))
		if !p.keepLengths {
			w.InputTokens, w.OutputTokens = tp.InputTokens, tp.OutputTokens
			notes = append(notes, "input and output lengths follow the trace's (32 quantile buckets each, drawn independently); --keep-lengths keeps the scenario's")
		}
	default:
		if len(w.RateProfile) == 0 {
			for _, f := range []string{"time-scale", "rate-scale", "keep-lengths"} {
				if given[f] {
					return nil, usagef("--%s: the scenario has no rate profile (give --rate-profile or --rate-profile-trace, or workload.rate_profile)", f)
				}
			}
			return nil, nil
		}
		for i := range w.RateProfile {
			w.RateProfile[i].AtS *= p.timeScale
		}
		w.RateProfileEndS *= p.timeScale
	}
	for i := range w.RateProfile {
		w.RateProfile[i].RateRPS *= p.rateScale
	}
	if p.rateScale != 1 {
		notes = append(notes, fmt.Sprintf("the profile's rates are scaled %g×", p.rateScale))
	}
	// The profile gives the rates; the scenario's arrival keeps its shape.
	if w.Arrival.Type == workload.ArrivalClosedLoop {
		w.Arrival = workload.ArrivalSpec{}
	}
	w.Arrival.RateRPS, w.Arrival.Concurrency = 0, 0
	w.Stages = nil
	if !given["requests"] {
		w.Requests = 0
	}
	if err := sc.Validate(); err != nil {
		return nil, scenarioError(err)
	}
	return notes, nil
}

func runPlan(ctx context.Context, e *env, args []string) error {
	var p planFlags
	var prof profileFlags
	var gpus, tps string
	var prices setFlags
	var maxReplicas int
	var noHeadroom bool
	var pareto string
	var headroom, util, confidence float64
	var dis disaggFlags
	fs := newFlagSet("plan")
	p.register(fs, "table|json")
	prof.register(fs)
	dis.register(fs)
	fs.StringVar(&gpus, "gpus", "", "candidate GPU ids, comma-separated (default: the whole catalog)")
	fs.StringVar(&tps, "tps", "1,2,4,8", "candidate tensor-parallel degrees")
	fs.IntVar(&maxReplicas, "max-replicas", 16, "most replicas to try per GPU and TP")
	fs.Var(&prices, "price", "override a GPU's price: --price h100-sxm=2.10 (USD per GPU-hour; repeatable)")
	fs.Float64Var(&headroom, "headroom", plan.DefaultHeadroom, "the recommendation sustains this multiple of the load within the SLA")
	fs.BoolVar(&noHeadroom, "no-headroom", false, "check --headroom × the load only, without measuring each candidate's headroom")
	fs.StringVar(&pareto, "pareto-metric", "", "latency the Pareto front trades against cost (default: the binding SLA bound)")
	fs.Float64Var(&util, "target-utilization", plan.DefaultTargetUtilization, "with a rate profile: the autoscaler keeps each replica at this fraction of its capacity within the SLA")
	fs.Float64Var(&confidence, "confidence", 0, "check every SLA bound at the upper end of its error band at this confidence (0.5 to 0.975; docs/uncertainty.md) instead of the point value (0)")
	r, sc, err := p.parse(e, fs, args, "table", "json")
	if err != nil {
		return err
	}
	given := givenFlags(fs)
	notes, err := prof.apply(&sc, given)
	if err != nil {
		return err
	}
	if err := requireSLA(sc); err != nil {
		return err
	}
	if !(headroom >= 1 && headroom <= 100) {
		return usagef("--headroom: must be in [1, 100], got %g", headroom)
	}
	if !(util > 0 && util <= 1) {
		return usagef("--target-utilization: must be in (0, 1], got %g", util)
	}
	if confidence != 0 && !(confidence >= 0.5 && confidence <= 0.975) {
		return usagef("--confidence: must be in [0.5, 0.975] (0: the point values), got %g", confidence)
	}
	spec := plan.PlanSpec{Scenario: sc, MaxReplicas: maxReplicas, SkipHeadroom: noHeadroom, ParetoMetric: pareto, PricePerGPUHourUSD: map[string]float64{},
		Headroom: headroom, TargetUtilization: util, WindowS: prof.windowS, Confidence: confidence}
	if spec.GPUs, err = parseGPUs(r.Env.Catalog, "gpus", gpus); err != nil {
		return err
	}
	if spec.TPs, err = parseInts("tps", tps); err != nil {
		return err
	}
	for _, pr := range prices {
		id, v, ok := strings.Cut(pr, "=")
		f, err := strconv.ParseFloat(v, 64)
		g, gerr := r.Env.Catalog.GPU(id)
		if !ok || err != nil || f < 0 || gerr != nil {
			return usagef("--price: %q is not gpu=USD-per-hour with a known GPU", pr)
		}
		spec.PricePerGPUHourUSD[g.ID] = f
	}
	if spec.Disaggregation, err = dis.search(r.Env.Catalog); err != nil {
		return err
	}
	res, err := r.Plan(ctx, spec, progressBar(e.stderr, p.progress, "plan"))
	if errors.Is(err, plan.ErrNoCandidates) {
		if res != nil {
			writePruned(e.stderr, res.Pruned)
		}
		return &infeasibleError{Msg: "no candidate configuration fits the model; see pruned"}
	}
	if err == nil {
		res.Notes = append(notes, res.Notes...)
	}
	return p.emit(e, res, err, func(w io.Writer) error {
		writePlanTable(w, res)
		if res.Recommendation == nil {
			return &infeasibleError{Msg: "no recommendation: " + res.Summary}
		}
		return nil
	})
}

func writePlanTable(w io.Writer, res *plan.PlanResult) {
	if res.Recommendation != nil {
		fmt.Fprintf(w, "Recommendation: %s\n", res.Summary)
	} else {
		fmt.Fprintf(w, "No recommendation. %s\n", res.Summary)
	}
	if len(res.RunnersUp) > 0 {
		fmt.Fprintln(w, "\nRunners-up:")
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		for _, ru := range res.RunnersUp {
			cost := ""
			if ru.CostPerHourUSD > 0 {
				cost = fmt.Sprintf("$%.2f/h", ru.CostPerHourUSD)
			}
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", ru.Label, cost, ru.LostOn, ru.Why)
		}
		tw.Flush()
	}
	if len(res.Notes) > 0 {
		fmt.Fprintln(w, "\nNotes:")
		for _, n := range res.Notes {
			fmt.Fprintf(w, "  - %s\n", n)
		}
	}
	bound := res.ParetoMetric
	if res.ParetoLimitMS > 0 {
		bound = fmt.Sprintf("%s (bound %g ms)", res.ParetoMetric, res.ParetoLimitMS)
	}
	labels := plan.LabelFormat
	for _, c := range append(slices.Clone(res.Candidates), res.Missed...) {
		if c.Disaggregation != nil {
			labels += "; " + plan.DisaggLabelFormat
			break
		}
	}
	fmt.Fprintf(w, "\nTarget load %g (%s), required headroom %.2g×, binding %s; %d simulations. %s\n\n",
		res.TargetLoad, res.Dimension, res.RequiredHeadroom, bound, res.Simulations, labels)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "rank\tconfiguration\tgpus\tUSD/h\tUSD/Mtok out\tTTFT p99 ms\tTPOT p99 ms\t%s\tout tok/s\theadroom\tlimit\tpareto\t\n", res.ParetoMetric)
	for i, c := range res.Candidates {
		mark := ""
		if c.Pareto {
			mark = "*"
		}
		hr := fmt.Sprintf("%.2f×", c.Headroom)
		if c.HeadroomCapped {
			hr = "≥" + hr
		}
		rank := strconv.Itoa(i + 1)
		if c.Recommended {
			rank = "→ 1"
		} else if !c.Qualifies {
			rank = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%.2f\t%.3f\t%s\t%s\t%.1f\t%.0f\t%s\t%s\t%s\t\n", rank, plan.Label(c.Config), c.GPUs, c.CostPerHourUSD, c.CostPerMillionOutputTokensUSD,
			withBand(c.TTFTP99MS, c.TTFTP99MSInterval, "%.0f"), withBand(c.TPOTP99MS, c.TPOTP99MSInterval, "%.1f"), c.ParetoLatencyMS, c.OutputTokensPerS, hr, c.HeadroomLimiting, mark)
	}
	tw.Flush()
	fmt.Fprintln(w, "(rank -: meets the SLA at the target, short of the headroom; pareto *: no qualifying configuration is both cheaper and faster on the binding bound; p99 columns: the point value and its 80% band)")
	if len(res.Missed) > 0 {
		fmt.Fprintln(w, "\nMissed the SLA even at the most replicas tried:")
		for _, c := range res.Missed {
			fmt.Fprintf(w, "  %s ($%.2f/h): %s\n", plan.Label(c.Config), c.CostPerHourUSD, c.WhyNot)
		}
	}
	writePruned(w, res.Pruned)
	if res.Day != nil {
		writeDayTable(w, res.Day)
	}
	writeSpeculationVerdict(w, "on the recommendation", res.Speculation)
}

// writeSpeculationVerdict prints whether speculative decoding pays (nil:
// nothing to print).
func writeSpeculationVerdict(w io.Writer, where string, v *sim.SpeculationVerdict) {
	if v == nil {
		return
	}
	fmt.Fprintf(w, "\nSpeculative decoding %s (assumed %.2f tokens per verification: %s):\n", where, v.MeanAcceptanceLength, v.AcceptanceSource)
	for _, at := range []*sim.SpeculationAt{v.LowLoad, v.AtLoad} {
		if at != nil {
			fmt.Fprintf(w, "  %s\n", speculationLine(at, v.MeanAcceptanceLength))
		}
	}
	for _, n := range v.Notes {
		fmt.Fprintf(w, "  note: %s\n", n)
	}
}

func writePruned(w io.Writer, ps []plan.Pruned) {
	if len(ps) == 0 {
		return
	}
	fmt.Fprintf(w, "\nPruned before simulating (%d):\n", len(ps))
	for _, p := range ps {
		fmt.Fprintf(w, "  %s: %s\n", plan.Label(plan.Config{GPU: p.GPU, TP: p.TP, Disaggregation: p.Disaggregation}), plan.ShortReason(p.Reason))
	}
}

func writeDayTable(w io.Writer, d *plan.DayPlan) {
	a := d.Autoscaler
	cs := a.ColdStart
	fmt.Fprintf(w, "\nThe rate profile through %s (%d windows of %g s over %.4g h; peak %.4g req/s):\n", plan.Label(plan.Config{GPU: d.Config.GPU, TP: d.Config.TP}),
		len(d.Windows), d.WindowS, d.DurationS/3600, d.PeakRateRPS)
	var capText []string
	for i, c := range d.CapacityRPS {
		capText = append(capText, fmt.Sprintf("%d: %.3g", i+1, c))
	}
	fmt.Fprintf(w, "  capacity within the SLA, req/s by replicas: %s\n", strings.Join(capText, ", "))
	target := fmt.Sprintf("%.3g %s per replica", a.Target, unitOf(a.Metric))
	if a.TargetUtilization > 0 {
		R := d.Config.Replicas
		target += fmt.Sprintf(" (%.0f%% of %.3g req/s, one replica's share of what %s sustain)", 100*a.TargetUtilization, d.CapacityRPS[R-1]/float64(R), plural(R, "replica"))
	}
	fmt.Fprintf(w, "  autoscaler: %s at %s, %d–%d replicas (%d at the start), every %g s, scale-down after %g s stable\n",
		a.Metric, target, a.MinReplicas, a.MaxReplicas, a.InitialReplicas, a.IntervalS, a.StabilizationS)
	fmt.Fprintf(w, "  scale-up delay %.0f s = %g s provisioning + %g s start-up + %.1f s weights (%.1f GB at %g GB/s) + %g s torch.compile + %.1f s CUDA graphs (%d sizes)\n",
		cs.ScaleUpDelayS, cs.ProvisionS, cs.StartupS, cs.WeightsLoadS, cs.WeightsGB, cs.WeightsLoadGBps, cs.TorchCompileS, cs.CUDAGraphCaptureS, cs.CUDAGraphSizes)
	fmt.Fprintf(w, "  %s\n\n", d.Summary)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "\t\tautoscaled\t\t\t\tstatic\t\t\t")
	fmt.Fprintf(tw, "window\treq/s\tneeded\t+headroom\treplicas\tSLA ok\t%s\treplicas\tSLA ok\t%s\t\n", d.BindingMetric, d.BindingMetric)
	for _, win := range d.Windows {
		fmt.Fprintf(tw, "%s\t%.3g\t%d\t%d\t%.2f\t%s\t%.0f\t%d\t%s\t%.0f\t\n", dayClock(win.StartS), win.RateRPS, win.ReplicasNeeded, win.ReplicasWithHeadroom,
			win.Autoscaled.Replicas, pct(win.Autoscaled.SLAAttainment), win.Autoscaled.LatencyMS, d.Config.Replicas, pct(win.Static.SLAAttainment), win.Static.LatencyMS)
	}
	fmt.Fprintf(tw, "total\t\t\t\t%.1f GPU-h/day\t%s\t%.0f\t%.1f GPU-h/day\t%s\t%.0f\t\n", d.Autoscaled.GPUHoursPerDay, pct(d.Autoscaled.SLAAttainment), d.Autoscaled.LatencyMS,
		d.Static.GPUHoursPerDay, pct(d.Static.SLAAttainment), d.Static.LatencyMS)
	tw.Flush()
	if s := d.Autoscaled.DuringScaleUps; s != nil {
		fmt.Fprintf(w, "  while replicas started (%.0f s in all): %d requests, %s met the SLA; %d started, %d removed; %d of %d windows met the SLA autoscaled, %d static\n",
			s.Seconds, s.Requests, pct(s.SLAAttainment), d.Autoscaled.ScaleUps, d.Autoscaled.ScaleDowns, d.Autoscaled.WindowsMeetingSLA, len(d.Windows), d.Static.WindowsMeetingSLA)
	}
	fmt.Fprintf(w, "  cost per day: autoscaled $%.2f, static $%.2f (%.0f%% less)\n", d.Autoscaled.CostPerDayUSD, d.Static.CostPerDayUSD, d.SavingsPct)
}

func unitOf(metric string) string {
	switch metric {
	case "in_flight":
		return "requests in flight"
	case "kv_cache_usage":
		return "KV-cache usage"
	}
	return "req/s"
}

// dayClock writes seconds as h:mm (with the day past the first).
func dayClock(s float64) string {
	m := int(math.Round(s / 60))
	if m >= 24*60 {
		return fmt.Sprintf("d%d %d:%02d", m/(24*60)+1, m%(24*60)/60, m%60)
	}
	return fmt.Sprintf("%d:%02d", m/60, m%60)
}

func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}
