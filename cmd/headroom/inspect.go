package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/headroom-sim/headroom/internal/adapter/measured"
	"github.com/headroom-sim/headroom/internal/study/replay"
)

func runInspect(_ context.Context, e *env, args []string) error {
	var format, catalogDir string
	var o runOverrides
	fs := newFlagSet("inspect")
	o.register(fs, false)
	fs.StringVar(&format, "output", "table", "output format: table|json")
	fs.StringVar(&catalogDir, "catalog-dir", "", "directory of extra catalog entries")
	pos, err := parseFlags(fs, args, e.stdout)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usagef("give one result file or run folder: headroom inspect FILE|DIR")
	}
	if err := outputFormat(format); err != nil {
		return err
	}
	cat, err := loadCatalog(e, catalogDir)
	if err != nil {
		return err
	}
	path := pos[0]
	run, _, err := loadMeasured(path, &o, nil)
	if err != nil {
		return usagef("%s: %v", path, err)
	}
	in := replay.Inspect(run, cat, path, func(name string) string { return "--" + name })
	if format == "json" {
		return writeJSON(e.stdout, in)
	}
	writeInspection(e.stdout, &in)
	return nil
}

func writeInspection(w io.Writer, in *replay.Inspection) {
	d := &in.Description
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "File\t%s\n", in.File)
	fmt.Fprintf(tw, "Format\t%s (%s)\n", d.Format, in.FormatDescription)
	fmt.Fprintf(tw, "Run\t%s\n", d.Name)
	model := named(d.Model, in.CatalogModel)
	if d.ModelNote != "" {
		model += " (" + d.ModelNote + ")"
	}
	fmt.Fprintf(tw, "Model\t%s\n", model)
	gpu := named(d.GPU, in.CatalogGPU)
	if d.GPUNote != "" {
		gpu += " (" + d.GPUNote + ")"
	}
	fmt.Fprintf(tw, "GPU\t%s\n", gpu)
	fmt.Fprintf(tw, "Parallelism\t%s\n", parallelism(d.TP, d.DP, d.ExpertParallel))
	eng := engineText(&d.Engine)
	if d.EngineVersion != "" {
		eng = "vLLM " + d.EngineVersion + "; " + eng
	}
	if d.LoggedBlocks > 0 {
		eng += fmt.Sprintf("; logged KV blocks %d", d.LoggedBlocks)
	}
	fmt.Fprintf(tw, "Engine\t%s\n", eng)
	if d.PrefixGroups > 0 {
		fmt.Fprintf(tw, "Prompts\t%d shared prefixes of %d tokens\n", d.PrefixGroups, d.PrefixTokens)
	}
	for _, n := range d.Notes {
		fmt.Fprintf(tw, "Note\t%s\n", n)
	}
	for _, h := range in.Hints {
		fmt.Fprintf(tw, "Hint\t%s\n", h)
	}
	if len(d.Ignored) > 0 {
		fmt.Fprintf(tw, "Not read\t%d keys: %s\n", len(d.Ignored), strings.Join(d.Ignored, ", "))
	}
	tw.Flush()
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "stage\tload\trequests\tcompleted\tfailed\tTTFT p50/p99 ms\tTPOT p50/p99 ms\tITL p50/p99 ms\tE2E p50/p99 ms\treq/s\tout tok/s\tfrom\t")
	row := func(name, load string, f *measured.Figures) {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", name, load, f.Requests.Total, f.Requests.Completed, f.Requests.Failed,
			pair(f.TTFTMS), pair(f.TPOTMS), pair(f.ITLMS), pair(f.E2EMS), rate(f.Throughput.RequestsPerS, 2), rate(f.Throughput.OutputTokensPerS, 0), basisWord(f.Basis))
	}
	for i := range d.Stages {
		s := &d.Stages[i]
		row(fmt.Sprint(s.Index), stageLoad(&s.StageInfo), &s.Figures)
	}
	if len(d.Stages) == 0 || d.Basis == "requests" {
		row("all", "", &d.Figures)
	}
	tw.Flush()
	for i := range d.Stages {
		if s := &d.Stages[i]; s.Engine != nil || s.TP > 0 {
			fmt.Fprintf(w, "stage %d server: %s\n", s.Index, engineText(s.Engine))
		}
	}
	if d.Sent != nil {
		fmt.Fprintln(w, sentText("sent", d.Sent))
	}
	for i := range d.Stages {
		if s := &d.Stages[i]; s.Sent != nil {
			fmt.Fprintln(w, sentText(fmt.Sprintf("stage %d sent", s.Index), s.Sent))
		}
	}
}

// sentText says what a load generator reports of its sends.
func sentText(label string, s *measured.SentLoad) string {
	t := fmt.Sprintf("%s: %d requests at %g req/s over %.1f s (%.2f req/s achieved", label, s.Scheduled, s.RequestedRPS, s.SendDurationS, s.AchievedRPS)
	if d := s.ScheduleDelayMS; d != nil {
		t += fmt.Sprintf("; sent %.0f ms late on average, %.0f ms at most", d["mean"], d["max"])
	}
	return t + ")"
}

func named(recorded, id string) string {
	switch {
	case recorded == "":
		return "not recorded"
	case id == "":
		return recorded + " (not in the catalog)"
	case strings.EqualFold(recorded, id):
		return id
	}
	return fmt.Sprintf("%s (catalog: %s)", recorded, id)
}

func parallelism(tp, dp int, ep bool) string {
	if tp == 0 && dp == 0 {
		return "not recorded"
	}
	s := fmt.Sprintf("tp %d, dp %d", max(tp, 1), max(dp, 1))
	if ep {
		s += ", expert parallel"
	}
	return s
}

// engineText lists the engine settings a run recorded.
func engineText(e *measured.Engine) string {
	if e == nil {
		return "-"
	}
	var parts []string
	add := func(name string, v any, set bool) {
		if set {
			parts = append(parts, fmt.Sprintf("%s %v", name, v))
		}
	}
	add("max_num_seqs", e.MaxNumSeqs, e.MaxNumSeqs > 0)
	add("max_num_batched_tokens", e.MaxNumBatchedTokens, e.MaxNumBatchedTokens > 0)
	add("max_model_len", e.MaxModelLen, e.MaxModelLen > 0)
	add("block_size", e.BlockSize, e.BlockSize > 0)
	add("gpu_memory_utilization", e.GPUMemoryUtilization, e.GPUMemoryUtilization > 0)
	for _, b := range []struct {
		name string
		v    *bool
	}{{"enable_prefix_caching", e.EnablePrefixCaching}, {"enable_chunked_prefill", e.EnableChunkedPrefill}, {"async_scheduling", e.AsyncScheduling}} {
		if b.v != nil {
			add(b.name, *b.v, true)
		}
	}
	add("dtype", e.DType, e.DType != "")
	add("kv_cache_dtype", e.KVCacheDType, e.KVCacheDType != "")
	add("scheduler", e.Scheduler, e.Scheduler != "")
	if sp := e.Speculative; sp != nil {
		add("speculative", fmt.Sprintf("%s × %d (%s)", sp.Method, sp.NumSpeculativeTokens, sp.DraftModel), true)
	}
	if len(parts) == 0 {
		return "no settings recorded (vLLM defaults assumed)"
	}
	return strings.Join(parts, ", ")
}

func stageLoad(s *measured.StageInfo) string {
	var parts []string
	if s.Strategy != "" {
		parts = append(parts, s.Strategy)
	}
	if s.RateRPS > 0 {
		parts = append(parts, fmt.Sprintf("%g req/s", s.RateRPS))
	}
	if s.Concurrency > 0 {
		parts = append(parts, fmt.Sprintf("≤%d in flight", s.Concurrency))
	}
	if s.Label != "" {
		parts = append(parts, s.Label)
	}
	return strings.Join(parts, " ")
}

// pair is "p50/p99" of a distribution, "-" for what was not measured.
func pair(m map[string]float64) string {
	f := func(k string) string {
		if v, ok := m[k]; ok {
			return fmt.Sprintf("%.1f", v)
		}
		return "-"
	}
	if len(m) == 0 {
		return "-"
	}
	return f("p50") + "/" + f("p99")
}

func rate(v float64, prec int) string {
	if v <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.*f", prec, v)
}

func basisWord(b string) string {
	switch b {
	case "requests":
		return "records"
	case "aggregate":
		return "summary"
	}
	return "-"
}
