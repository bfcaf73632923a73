package plan

import (
	"cmp"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strings"
)

// Why a candidate is not the recommendation (Candidate.LostOn).
const (
	LostCost     = "cost"         // qualifies, costs more per hour
	LostLatency  = "latency"      // qualifies at the same cost, slower on the binding bound
	LostHeadroom = "headroom"     // meets the SLA at the target, not at Headroom × it
	LostSLA      = "sla"          // misses the SLA even at the most replicas tried
	LostNoFit    = "does_not_fit" // cannot start (pruned)
)

// Recommendation is the plan's answer.
type Recommendation struct {
	Config
	// GPUName is the catalog's name of the GPU.
	GPUName                       string  `json:"gpu_name"`
	GPUs                          int     `json:"gpus"`
	CostPerHourUSD                float64 `json:"cost_per_hour_usd"`
	CostPerMillionOutputTokensUSD float64 `json:"cost_per_million_output_tokens_usd"`
	// SustainedLoad is the highest load within the SLA, in the plan's
	// dimension (req/s, users, or trace speed-up): Headroom × the target.
	SustainedLoad  float64 `json:"sustained_load"`
	Headroom       float64 `json:"headroom"`
	HeadroomCapped bool    `json:"headroom_capped,omitempty"`
	// LimitingMetric is the SLA bound that breaks first above it.
	LimitingMetric string `json:"limiting_metric"`
	// Sentence is the answer in words.
	Sentence string `json:"sentence"`
	// Confidence is the plan's confidence (PlanSpec.Confidence): the SLA
	// held at the upper ends of the bands at it (absent: point values).
	Confidence float64 `json:"confidence,omitempty"`
}

// RunnerUp is an alternative and why it lost: a GPU, TP and replicas,
// or a disaggregated shape (its gpu and tp are then the decode pool's).
type RunnerUp struct {
	Label          string       `json:"label"`
	GPU            string       `json:"gpu"`
	TP             int          `json:"tp"`
	Replicas       int          `json:"replicas,omitempty"`
	Disaggregation *DisaggShape `json:"disaggregation,omitempty"`
	CostPerHourUSD float64      `json:"cost_per_hour_usd,omitempty"`
	LostOn         string       `json:"lost_on"`
	Why            string       `json:"why"`
}

// Label names a cluster shape as the tables and charts do:
// "h100-sxm TP2×3" is 3 replicas of tensor parallelism 2 on H100 SXM, and
// "P h100-sxm TP1×2 + D h200 TP1×1" a disaggregated cluster of 2 H100
// prefill replicas and 1 H200 decode replica (DisaggShape.String).
func Label(c Config) string {
	if d := c.Disaggregation; d != nil {
		return d.String()
	}
	return poolLabel(c.GPU, c.TP, c.Replicas)
}

// poolLabel is "gpu TPt×r", or "gpu TPt" without replicas.
func poolLabel(gpu string, tp, replicas int) string {
	if replicas == 0 {
		return fmt.Sprintf("%s TP%d", gpu, tp)
	}
	return fmt.Sprintf("%s TP%d×%d", gpu, tp, replicas)
}

// LabelFormat explains Label; DisaggLabelFormat its disaggregated shapes.
const (
	LabelFormat       = "labels: GPU TPt×r = r replicas of t GPUs (tensor parallelism t)"
	DisaggLabelFormat = "P … + D … = a prefill pool and a decode pool (disaggregated)"
)

// replicasText says how many replicas a shape has, in words.
func replicasText(c Config) string {
	if d := c.Disaggregation; d != nil {
		return fmt.Sprintf("%d prefill and %d decode replicas", d.Prefill.Replicas, d.Decode.Replicas)
	}
	return plural(c.Replicas, "replica")
}

// recommend ranks the candidates, finds the binding bound, marks the
// Pareto front and the recommendation, and says why the others lost.
func (r *Runner) recommend(spec *PlanSpec, res *PlanResult) error {
	cs := res.Candidates
	res.ParetoMetric = spec.ParetoMetric
	if res.ParetoMetric == "" {
		res.ParetoMetric = bindingMetric(res)
		for _, group := range [][]Candidate{cs, res.Missed} {
			for i := range group {
				group[i].ParetoLatencyMS, _, _ = checkValue(group[i].Checks, res.ParetoMetric)
			}
		}
	}
	for _, c := range append(slices.Clone(cs), res.Missed...) {
		if _, lim, ok := checkValue(c.Checks, res.ParetoMetric); ok {
			res.ParetoLimitMS = lim
			break
		}
	}
	slices.SortStableFunc(cs, func(a, b Candidate) int {
		if a.Qualifies != b.Qualifies {
			if a.Qualifies {
				return -1
			}
			return 1
		}
		return cmp.Or(cmp.Compare(a.CostPerHourUSD, b.CostPerHourUSD), cmp.Compare(a.ParetoLatencyMS, b.ParetoLatencyMS),
			cmp.Compare(b.Headroom, a.Headroom), cmp.Compare(a.CostPerMillionOutputTokensUSD, b.CostPerMillionOutputTokensUSD),
			cmp.Compare(a.GPU, b.GPU), cmp.Compare(a.TP, b.TP), cmp.Compare(a.Replicas, b.Replicas), cmp.Compare(Label(a.Config), Label(b.Config)))
	})
	slices.SortStableFunc(res.Missed, func(a, b Candidate) int {
		return cmp.Or(cmp.Compare(a.CostPerHourUSD, b.CostPerHourUSD), cmp.Compare(a.GPU, b.GPU), cmp.Compare(a.TP, b.TP), cmp.Compare(Label(a.Config), Label(b.Config)))
	})
	markPareto(cs)
	var rec *Candidate
	if len(cs) > 0 && cs[0].Qualifies {
		rec = &cs[0]
		rec.Recommended = true
	}
	for i := range cs {
		c := &cs[i]
		switch {
		case c.Recommended:
		case c.Qualifies:
			if c.CostPerHourUSD > rec.CostPerHourUSD {
				c.LostOn = LostCost
				c.WhyNot = fmt.Sprintf("$%.2f/h more than the recommendation ($%.2f/h vs $%.2f/h)", c.CostPerHourUSD-rec.CostPerHourUSD, c.CostPerHourUSD, rec.CostPerHourUSD)
			} else {
				c.LostOn = LostLatency
				c.WhyNot = fmt.Sprintf("same $%.2f/h, %s %s vs %s", c.CostPerHourUSD, res.ParetoMetric, ms(c.ParetoLatencyMS), ms(rec.ParetoLatencyMS))
			}
		default:
			c.LostOn = LostHeadroom
			why := fmt.Sprintf("sustains only %.2f× the target within the SLA (%.2g× required", c.Headroom, spec.Headroom)
			if c.HeadroomLimiting != "" {
				why += "; " + c.HeadroomLimiting + " breaks first"
			}
			c.WhyNot = "meets the SLA at the target but " + why + ")"
			if rec != nil && c.CostPerHourUSD < rec.CostPerHourUSD {
				c.WhyNot = fmt.Sprintf("$%.2f/h cheaper, but %s)", rec.CostPerHourUSD-c.CostPerHourUSD, why)
			}
		}
	}
	for i := range res.Missed {
		m := &res.Missed[i]
		if m.WhyNot == "" {
			m.WhyNot = "misses the SLA at the target"
		}
		m.WhyNot = fmt.Sprintf("%s even with %s", m.WhyNot, replicasText(m.Config))
	}
	res.Summary = r.summary(spec, res, rec)
	res.RunnersUp = runnersUp(res, rec)
	return nil
}

// bindingMetric is the SLA bound that limits the headroom of the
// cheapest qualifying candidates (the most common among those of the
// lowest cost), else of the cheapest candidates, else the bound the
// missed ones break.
func bindingMetric(res *PlanResult) string {
	for _, pool := range []func(c Candidate) bool{
		func(c Candidate) bool { return c.Qualifies },
		func(c Candidate) bool { return true },
	} {
		best, count := "", map[string]int{}
		cheapest := -1.0
		for _, c := range res.Candidates {
			if !pool(c) || c.HeadroomLimiting == "" {
				continue
			}
			switch {
			case cheapest < 0 || c.CostPerHourUSD < cheapest:
				cheapest, count = c.CostPerHourUSD, map[string]int{}
				fallthrough
			case c.CostPerHourUSD == cheapest:
				count[c.HeadroomLimiting]++
				if best == "" || count[c.HeadroomLimiting] > count[best] {
					best = c.HeadroomLimiting
				}
			}
		}
		if best != "" {
			return best
		}
	}
	for _, m := range res.Missed {
		if m.HeadroomLimiting != "" {
			return m.HeadroomLimiting
		}
	}
	return "ttft_ms.p99"
}

// markPareto flags the qualifying candidates no other qualifying one
// beats on both cost per hour and the binding latency.
func markPareto(cs []Candidate) {
	for i := range cs {
		if !cs[i].Qualifies {
			continue
		}
		cs[i].Pareto = true
		for j := range cs {
			if i == j || !cs[j].Qualifies {
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

// runnersUp lists the nearest alternatives: the next qualifying ones, the
// cheaper ones short of the headroom, those missing the SLA, and the
// GPUs that cannot hold the model.
func runnersUp(res *PlanResult, rec *Candidate) []RunnerUp {
	out := []RunnerUp{}
	add := func(c Candidate) {
		ru := RunnerUp{Label: Label(c.Config), GPU: c.GPU, TP: c.TP, Replicas: c.Replicas, Disaggregation: c.Disaggregation, CostPerHourUSD: c.CostPerHourUSD, LostOn: c.LostOn, Why: c.WhyNot}
		if d := c.Disaggregation; d != nil {
			ru.GPU, ru.TP = d.Decode.GPU, d.Decode.TP
		}
		out = append(out, ru)
	}
	next, short := 0, 0
	for _, c := range res.Candidates {
		switch {
		case c.Recommended:
		case c.Qualifies && next < 3:
			add(c)
			next++
		case !c.Qualifies && short < 3 && (rec == nil || c.CostPerHourUSD <= rec.CostPerHourUSD):
			add(c)
			short++
		}
	}
	for i, m := range res.Missed {
		if i == 3 {
			break
		}
		add(m)
	}
	byGPU := map[string][]Pruned{}
	var gpus []string
	pairs := 0
	for _, p := range res.Pruned {
		if d := p.Disaggregation; d != nil {
			// Pairs of pool types, the first few: a pool type that cannot
			// hold the model is pruned with every partner.
			if pairs < 3 {
				out = append(out, RunnerUp{Label: Label(Config{Disaggregation: d}), GPU: p.GPU, TP: p.TP, Disaggregation: d, LostOn: LostNoFit, Why: ShortReason(p.Reason)})
			}
			pairs++
			continue
		}
		if _, ok := byGPU[p.GPU]; !ok {
			gpus = append(gpus, p.GPU)
		}
		byGPU[p.GPU] = append(byGPU[p.GPU], p)
	}
	for _, g := range gpus {
		ps := byGPU[g]
		var tps []string
		for _, p := range ps {
			tps = append(tps, fmt.Sprint(p.TP))
		}
		out = append(out, RunnerUp{Label: fmt.Sprintf("%s TP%s", g, strings.Join(tps, ",")), GPU: g, TP: ps[len(ps)-1].TP, LostOn: LostNoFit,
			Why: ShortReason(ps[len(ps)-1].Reason)})
	}
	return out
}

var smallestTP = regexp.MustCompile(`\(smallest tp that fits: \d+\)`)

// ShortReason shortens a pruning reason for one line.
func ShortReason(reason string) string {
	if i := strings.Index(reason, "; lower max_model_len"); i > 0 {
		tail := smallestTP.FindString(reason)
		reason = strings.TrimSpace(reason[:i] + " " + tail)
	}
	return reason
}

// ms writes a latency to about 3 significant digits, without exponents.
func ms(v float64) string {
	switch a := math.Abs(v); {
	case a >= 100:
		return fmt.Sprintf("%.0f ms", v)
	case a >= 10:
		return fmt.Sprintf("%.1f ms", v)
	}
	return fmt.Sprintf("%.2f ms", v)
}

// missText says how far a bound is past its limit.
func missText(bound string, value, limit float64) string {
	return fmt.Sprintf("misses %s: %s > %s", bound, ms(value), ms(limit))
}

// summary fills res.Recommendation and says the answer in one sentence,
// or why there is none.
func (r *Runner) summary(spec *PlanSpec, res *PlanResult, rec *Candidate) string {
	if rec != nil {
		name := func(id string) string {
			if gg, err := r.env().Catalog.GPU(id); err == nil && gg.Name != "" {
				return gpuName(gg.Name)
			}
			return id
		}
		g := name(rec.GPU)
		d := rec.Disaggregation
		var pg, dg string
		if d != nil {
			pg, dg = name(d.Prefill.GPU), name(d.Decode.GPU)
			g = pg
			if d.Decode.GPU != d.Prefill.GPU {
				g = pg + " + " + dg
			}
		}
		rr := &Recommendation{Config: rec.Config, GPUName: g, GPUs: rec.GPUs, CostPerHourUSD: rec.CostPerHourUSD,
			CostPerMillionOutputTokensUSD: rec.CostPerMillionOutputTokensUSD, SustainedLoad: rec.Headroom * res.TargetLoad,
			Headroom: rec.Headroom, HeadroomCapped: rec.HeadroomCapped, LimitingMetric: rec.HeadroomLimiting}
		headroom := fmt.Sprintf("%.2f× headroom", rec.Headroom)
		limit := "limited by " + boundName(rec.HeadroomLimiting)
		if rec.HeadroomCapped {
			headroom = fmt.Sprintf("at least %.2f× headroom, not searched further", rec.Headroom)
			limit = "closest to its bound: " + boundName(rec.HeadroomLimiting)
		}
		shape := fmt.Sprintf("%d × %s as %s of TP%d", rec.GPUs, g, plural(rec.Replicas, "replica"), rec.TP)
		if d != nil {
			shape = fmt.Sprintf("%d GPUs disaggregated, %s (prefill on %s, decode on %s)", rec.GPUs, d, pg, dg)
		}
		rr.Sentence = fmt.Sprintf("%s: $%.2f/h, $%.3g per million output tokens, sustains %s within the SLA (%s); %s",
			shape, rec.CostPerHourUSD, rec.CostPerMillionOutputTokensUSD, loadText(res.Dimension, rr.SustainedLoad), headroom, limit)
		if c := spec.Confidence; c > 0 {
			rr.Confidence = c
			rr.Sentence += fmt.Sprintf("; every SLA bound holds at %.0f%% confidence (the upper end of its error band, not the point value)", 100*c)
		}
		res.Recommendation = rr
		return rr.Sentence
	}
	for _, c := range res.Candidates {
		return fmt.Sprintf("No configuration within %d replicas sustains %.2g× the target (%s) within the SLA; the cheapest that meets it at the target, %s at $%.2f/h, sustains %.2f×: lower the required headroom or allow more replicas",
			spec.MaxReplicas, spec.Headroom, loadText(res.Dimension, res.TargetLoad), Label(c.Config), c.CostPerHourUSD, c.Headroom)
	}
	if len(res.Missed) > 0 {
		m := res.Missed[0]
		return fmt.Sprintf("No configuration meets the SLA at %s within %d replicas (the cheapest tried, %s, %s)",
			loadText(res.Dimension, res.TargetLoad), spec.MaxReplicas, Label(m.Config), m.WhyNot)
	}
	return "No configuration fits the model: see pruned"
}

// gpuName drops a catalog name's parenthesised notes.
func gpuName(name string) string {
	if i := strings.Index(name, " ("); i > 0 {
		return name[:i]
	}
	return name
}

func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}

// loadText writes a load in its dimension's unit.
func loadText(dim string, v float64) string {
	switch dim {
	case DimConcurrency:
		return fmt.Sprintf("%.0f concurrent users", v)
	case DimSpeedup:
		return fmt.Sprintf("the trace at %.3g× its speed", v)
	}
	return fmt.Sprintf("%.3g req/s", v)
}

// boundName writes "ttft_ms.p99" as "TTFT p99".
func boundName(b string) string {
	metric, q, _ := strings.Cut(b, ".")
	return strings.ToUpper(strings.TrimSuffix(metric, "_ms")) + " " + q
}
