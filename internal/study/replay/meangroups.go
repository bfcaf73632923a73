package replay

import (
	"cmp"
	"fmt"
	"math"
	"slices"
)

// Layout is a run's parallel layout as the closed-loop table records it:
// TP × DP GPUs, a MoE model's experts split MoETP × MoEEP over them.
type Layout struct {
	TP    int `json:"tp"`
	DP    int `json:"dp"`
	MoETP int `json:"moe_tp"`
	MoEEP int `json:"moe_ep"`
}

// String reads like "TP2 DP2, experts 1×4".
func (l Layout) String() string {
	s := fmt.Sprintf("TP%d", l.TP)
	if l.DP > 1 {
		s += fmt.Sprintf(" DP%d", l.DP)
	}
	if l.MoETP*l.MoEEP > 1 {
		s += fmt.Sprintf(", experts %d×%d", l.MoETP, l.MoEEP)
	}
	return s
}

func (l Layout) compare(o Layout) int {
	return cmp.Or(cmp.Compare(l.TP, o.TP), cmp.Compare(l.DP, o.DP), cmp.Compare(l.MoETP, o.MoETP), cmp.Compare(l.MoEEP, o.MoEEP))
}

// RunLayout is the layout r recorded (unset degrees are 1).
func RunLayout(r *MeanResult) Layout {
	run := r.Run
	return Layout{TP: max(run.TP, 1), DP: max(run.DP, 1), MoETP: max(run.MoETP, 1), MoEEP: max(run.MoEEP, 1)}
}

// MeanGroup is the errors of one group of replayed runs: a (model, GPU)
// pair, or, with Layout set, one layout of it.
type MeanGroup struct {
	Model, GPU string
	Layout     *Layout
	MeanErrors
}

// Name reads like "gpt-oss-120b on h200-sxm" or, for a layout group,
// "gpt-oss-120b on h200-sxm, TP2".
func (g *MeanGroup) Name() string {
	s := g.Model + " on " + g.GPU
	if g.Layout != nil {
		s += ", " + g.Layout.String()
	}
	return s
}

// GroupMeans summarises rs per (model, GPU) (MeanResult.Model and GPU,
// the catalog ids simulated), or, with byLayout, per (model, GPU, layout);
// sorted by model, GPU and layout.
func GroupMeans(rs []MeanResult, byLayout bool) []MeanGroup {
	type key struct {
		model, gpu string
		layout     Layout
	}
	members := map[key][]MeanResult{}
	var keys []key
	for i := range rs {
		k := key{model: rs[i].Model, gpu: rs[i].GPU}
		if byLayout {
			k.layout = RunLayout(&rs[i])
		}
		if _, ok := members[k]; !ok {
			keys = append(keys, k)
		}
		members[k] = append(members[k], rs[i])
	}
	slices.SortFunc(keys, func(a, b key) int {
		return cmp.Or(cmp.Compare(a.model, b.model), cmp.Compare(a.gpu, b.gpu), a.layout.compare(b.layout))
	})
	out := make([]MeanGroup, len(keys))
	for i, k := range keys {
		out[i] = MeanGroup{Model: k.model, GPU: k.gpu, MeanErrors: SummarizeMeans(members[k])}
		if byLayout {
			l := k.layout
			out[i].Layout = &l
		}
	}
	return out
}

// Replayed reports whether r ran and has measured means to compare with.
func (r *MeanResult) Replayed() bool {
	return r.Err == nil && r.MeasuredTTFTMS > 0 && r.MeasuredTPOT > 0
}

// WorstMeans returns the indices in rs of up to n replayed runs with the
// largest absolute TTFT error (or, with tpot, TPOT error), worst first;
// ties keep the runs' order.
func WorstMeans(rs []MeanResult, n int, tpot bool) []int {
	var idx []int
	for i := range rs {
		if rs[i].Replayed() {
			idx = append(idx, i)
		}
	}
	abs := func(i int) float64 {
		if tpot {
			return math.Abs(rs[i].TPOTError())
		}
		return math.Abs(rs[i].TTFTError())
	}
	slices.SortStableFunc(idx, func(a, b int) int { return cmp.Compare(abs(b), abs(a)) })
	return idx[:min(n, len(idx))]
}

// Comparison is r as a comparison of its mean TTFT and TPOT (ttft_ms.mean,
// tpot_ms.mean), with its layout and load, or its error.
func (r *MeanResult) Comparison() Comparison {
	run := r.Run
	l := RunLayout(r)
	c := Comparison{Run: run.Name, Basis: BasisAggregate, Model: r.Model, GPU: r.GPU, EngineVersion: run.EngineVersion,
		PredictedBlocks: r.PredictedBlocks, Layout: &l, Notes: run.Engine.Extra}
	if a := run.Aggregate; a != nil {
		c.Requests = a.Completed
		c.ClosedLoop = &ClosedLoop{Concurrency: a.Concurrency, InputTokens: int(a.MeanInputTokens + 0.5),
			OutputTokens: int(a.MeanOutputTokens + 0.5), WarmupRequests: run.Warmup}
	}
	if r.Err != nil {
		c.Error = r.Err.Error()
		return c
	}
	c.Metrics = []Metric{metric("ttft_ms.mean", r.MeasuredTTFTMS, r.TTFTMS), metric("tpot_ms.mean", r.MeasuredTPOT, r.TPOTMS)}
	return c
}
