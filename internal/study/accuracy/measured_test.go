package accuracy_test

import (
	"bytes"
	"context"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/headroom-sim/headroom/catalogs"
	"github.com/headroom-sim/headroom/internal/adapter/kerneldb"
	"github.com/headroom-sim/headroom/internal/adapter/measured"
	"github.com/headroom-sim/headroom/internal/study/accuracy"
	"github.com/headroom-sim/headroom/internal/study/replay"
	"github.com/headroom-sim/headroom/internal/testkit/refdata"
	"github.com/headroom-sim/headroom/sim"
)

// knownMisses are the closed-loop figures that miss their bar today, each
// with the worst it may get (its figure when last measured; SlackPct more
// fails) and why it misses. TestClosedLoopRunsMeetTheBars fails on a miss
// not listed, on a listed one that got worse, and on a listed one that
// now meets its bar, and prints the table to paste when the figures moved.
var knownMisses = map[string]accuracy.KnownMiss{
	"overall TTFT":                                                  {CeilingPct: 23.2, Reason: "signed -5%, but each run's TTFT rests on how far its cohorts stay locked, which the summaries do not record (docs/request-path.md): at 4-32 users within ±11% by concurrency, past 128 users under-predicted by 23-72% (the c512 rows held most requests back); Llama-3.1-8B-FP8 and Qwen3-235B below"},
	"overall TPOT":                                                  {CeilingPct: 11.5, Reason: "the layout groups below: Qwen3-235B and Llama-3.1-8B of the vLLM 0.12 gap-analysis campaign, MiniMax NVFP4 and small-batch floors about 15-20% fast"},
	"gpt-oss-120b on h100-sxm TPOT":                                 {CeilingPct: 22.1, Reason: "over-predicted at TP 2 (+24%); the c512 rows measured 4-6 ms per token with most requests held back, predicted 5-13x"},
	"llama-3.1-8b-instruct-fp8 on h200 TTFT":                        {CeilingPct: 76.9, Reason: "over-predicted: the rows' prompts were cheaper to prefill than stated (docs/steptime.md), and with the three-token spread more of each cohort prefills together (45% with 1%)"},
	"llama-3.1-8b-instruct-fp8 on h200 TPOT":                        {CeilingPct: 78.5, Reason: "the short-output rows at TP 1-2 imply 69-91% of the FP8 dense peak sustained for the stated prompts (TestImpliedPrefillRate's table in docs/steptime.md), above the GPU's best fp8 GEMM row (69%): cached or shorter prompts than stated (validate --prompt-pool 300 gives 6.8%); long-output rows (13-25%) are close"},
	"qwen3-235b-a22b-fp8 on h200 TTFT":                              {CeilingPct: 58.0, Reason: "-28% to -74% signed: the vLLM 0.12 gap-analysis rows, whose TPOT is off the same way (below)"},
	"qwen3-235b-a22b-fp8 on h200 TPOT":                              {CeilingPct: 41.7, Reason: "measured TPOT about constant in batch at each GPU count, as if every step streamed all experts plus a fixed time; no kernel row does (docs/steptime.md)"},
	"gpt-oss-120b on b200, TP8, experts 8×1 TPOT signed":            {CeilingPct: 15.4, Reason: "-15%: at TP 8 the step is small kernels and all-reduces; measured TPOT stops falling from TP 4 to TP 8 at low concurrency (a per-step floor the model lacks)"},
	"gpt-oss-120b on h100-sxm, TP2, experts 2×1 TPOT signed":        {CeilingPct: 24.2, Reason: "+24%: the H200's mxfp4 rows borrowed at the H200's own time; H200 TP 2 itself is +16%"},
	"gpt-oss-120b on h100-sxm, TP8, experts 8×1 TPOT signed":        {CeilingPct: 16.9, Reason: "as on the B200 at TP 8: the per-step floor of small kernels and all-reduces"},
	"gpt-oss-120b on h200, TP2, experts 2×1 TPOT signed":            {CeilingPct: 15.9, Reason: "+16%: the H200's own mxfp4 rows at TP 2 (TP 1 and 4 within 9%)"},
	"llama-3.1-8b-instruct-fp8 on h200, TP1 TPOT signed":            {CeilingPct: 34.9, Reason: "+35%: prefill of the stated prompts exceeds what the fp8 GEMM rows allow at the measured request rate (workload, docs/steptime.md)"},
	"llama-3.1-8b-instruct-fp8 on h200, TP2 TPOT signed":            {CeilingPct: 78.5, Reason: "+79%: as TP 1, and the TP all-reduces of 8,000-token prefills on top"},
	"minimax-m2.5 on h200, TP4, experts 4×1 TPOT signed":            {CeilingPct: 23.2, Reason: "-23%, worst at low concurrency (-37% at 4 users): a per-step floor about 4 ms above the kernels' sum"},
	"minimax-m2.5-nvfp4 on b200, TP4, experts 4×1 TPOT signed":      {CeilingPct: 20.6, Reason: "-21%: its two campaigns measure 10-40% apart at the same layout and load; small-batch floor under-predicted"},
	"minimax-m2.5-nvfp4 on b300, TP4, experts 4×1 TPOT signed":      {CeilingPct: 17.5, Reason: "-18%: small-batch floor under-predicted, as on the B200"},
	"qwen3-235b-a22b-fp8 on h200, TP1 DP2, experts 2×1 TPOT signed": {CeilingPct: 52.2, Reason: "-52%: the vLLM 0.12 gap-analysis rows (see the group's TPOT)"},
	"qwen3-235b-a22b-fp8 on h200, TP2, experts 1×2 TPOT signed":     {CeilingPct: 46.6, Reason: "-47%: as TP 1 x DP 2"},
	"qwen3-235b-a22b-fp8 on h200, TP2, experts 2×1 TPOT signed":     {CeilingPct: 40.6, Reason: "-41%: as TP 1 x DP 2"},
	"qwen3-235b-a22b-fp8 on h200, TP2 DP2, experts 4×1 TPOT signed": {CeilingPct: 41.7, Reason: "-42%: as TP 1 x DP 2"},
	"qwen3-235b-a22b-fp8 on h200, TP4, experts 4×1 TPOT signed":     {CeilingPct: 18.1, Reason: "-18%: as TP 1 x DP 2, less so on 4 GPUs"},
}

// knownRunMisses are the same for the request-level runs
// (TestRequestLevelRunsMeetTheBars).
var knownRunMisses = map[string]accuracy.KnownMiss{
	"run jan21-llama7b-train-1 ttft_ms":                  {CeilingPct: 34.2, Reason: "TTFT p90 +34% (p50 +20%): the decodes run slow (TPOT +25%, below), so more requests are in flight at the sweep's higher rates, and the API server's fitted 2.2 ms a step (docs/host-costs.md) adds to each first token"},
	"run jan21-llama7b-train-1 tpot_ms":                  {CeilingPct: 25.3, Reason: "Llama-2-7B on H100 (vLLM 0.11) at low batch: TPOT predicted about 25% high"},
	"run jan21-llama7b-train-1 e2e_ms":                   {CeilingPct: 26.7, Reason: "follows its TPOT"},
	"run RTX4090_Llama-3.1-8B tpot_ms":                   {CeilingPct: 15.1, Reason: "GDDR card without kernel measurements: TPOT about 15% high"},
	"run RTX4090_Llama-3.1-8B e2e_ms":                    {CeilingPct: 17.8, Reason: "GDDR card without kernel measurements: TPOT about 15% high, E2E follows"},
	"run RTXPRO6000_Qwen3-30B-A3B-Instruct-2507 ttft_ms": {CeilingPct: 97.9, Reason: "DP 2 + EP over PCIe: the measured run queues (TTFT p90 5.2 s), the simulation hardly does (TTFT p99 -98%)"},
	"run RTXPRO6000_Qwen3-30B-A3B-Instruct-2507 tpot_ms": {CeilingPct: 35.0, Reason: "DP 2 + EP over PCIe: TPOT predicted 35% low"},
	"run RTXPRO6000_Qwen3-30B-A3B-Instruct-2507 e2e_ms":  {CeilingPct: 36.3, Reason: "follows its TPOT"},
}

// earlierRuns are the request-level runs of the reference data that name
// their model and GPU (the ones `validate --runs-from` replays without
// flags): every one must be judged.
var earlierRuns = []string{
	"RTX4090_Llama-3.1-8B", "RTXPRO6000_Llama-3.1-8B", "RTXPRO6000_Qwen3-30B-A3B-Instruct-2507", "RTXPRO6000_Qwen3-32B",
	"jan20-codellama-prefill-1", "jan20-codellama-train-1", "jan20-prefill-llama7b-tp1-1", "jan21-llama7b-train-1",
}

func replayOptions(cat *catalogs.Catalog) replay.Options {
	p := kerneldb.ForCatalog(cat.GPU)
	return replay.Options{KernelDB: p.Load}
}

// TestClosedLoopRunsMeetTheBars replays every run of the closed-loop
// table (the repository's copy, siliconTable: it runs on a clean
// checkout) with the built-in kernel tables, as `headroom validate --run
// internal/study/accuracy/testdata/measured/aiconfigurator-silicon/silicon_vllm_agg.csv` does, and enforces the bars on the mean TTFT
// and TPOT: the median absolute error over all runs ≤ 20% and ≤ 8%, per
// (model, GPU) ≤ 35% and ≤ 20%, and per (model, GPU, layout) of at least
// five runs a TPOT signed median within ±15%. It takes minutes (each run is a
// simulation of up to 10,000 requests; 1-4.4 min on two cores), so
// -short skips it.
func TestClosedLoopRunsMeetTheBars(t *testing.T) {
	if testing.Short() {
		t.Skip("replays the 823 measured closed-loop runs (minutes): skipped with -short")
	}
	cat, tab := readSiliconTable(t)
	if len(tab.Skipped) > 0 {
		t.Errorf("rows skipped: %q", tab.Skipped)
	}
	runs := tab.Runs
	start := time.Now()
	rs := replay.ReplayMeans(t.Context(), runs, cat, replay.MeanOptions{Options: replayOptions(cat)})
	t.Logf("replayed %d closed-loop runs in %v", len(rs), time.Since(start).Round(time.Second))
	for i := range rs {
		if rs[i].Err != nil {
			t.Errorf("%s: does not simulate: %v", rs[i].Run.Name, rs[i].Err)
		}
	}
	judge(t, accuracy.ClosedLoopFigures(rs), knownMisses, "knownMisses")
}

// testdataDir holds byte copies of some of the reference data's runs, in
// its layout (testdata/README.md), so that the bars on them hold on a
// checkout without ../shared.
const testdataDir = "testdata"

// siliconTable is the copy of the closed-loop table.
const siliconTable = testdataDir + "/measured/aiconfigurator-silicon/silicon_vllm_agg.csv"

// readSiliconTable reads siliconTable with the built-in catalog.
func readSiliconTable(t *testing.T) (*catalogs.Catalog, *measured.SiliconTable) {
	t.Helper()
	cat, err := catalogs.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(siliconTable)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tab, err := measured.ReadSilicon(f, path.Base(siliconTable))
	if err != nil {
		t.Fatal(err)
	}
	return cat, tab
}

// TestTestdataIsTheReference: every copied run file is the reference
// data's, byte for byte (testdata/shared-data.manifest pins those).
func TestTestdataIsTheReference(t *testing.T) {
	ref := refdata.Path(t, "measured")
	n := 0
	err := filepath.WalkDir(filepath.Join(testdataDir, "measured"), func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Name() == "LICENSE" {
			return err
		}
		rel, _ := filepath.Rel(filepath.Join(testdataDir, "measured"), p)
		mine, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		theirs, err := os.ReadFile(filepath.Join(ref, rel))
		switch {
		case err != nil:
			t.Errorf("%s: not in the reference data: %v", p, err)
		case !bytes.Equal(mine, theirs):
			t.Errorf("%s differs from the reference data's %s: copy it again", p, rel)
		}
		n++
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n < 40 {
		t.Errorf("%d files compared: the copies are missing", n)
	}
}

// TestRequestLevelRunsMeetTheBars replays the request-level runs of the
// reference data that name their model and GPU, and enforces
// accuracy.RunBars on each one's worst quantile error.
func TestRequestLevelRunsMeetTheBars(t *testing.T) {
	refdata.Path(t, "measured")
	cat, err := catalogs.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	judge(t, accuracy.RunFigures(replayEarlierRuns(t, cat, replayOptions(cat))), knownRunMisses, "knownRunMisses")
}

func judge(t *testing.T, figs []accuracy.Figure, known map[string]accuracy.KnownMiss, table string) {
	t.Helper()
	for _, f := range figs {
		t.Logf("%-60s %6.1f%%  bar %3.0f%%  n=%d", f.Key, f.ValuePct, f.BarPct, f.N)
	}
	problems := accuracy.Judge(figs, known)
	for _, p := range problems {
		t.Error(p)
	}
	if len(problems) > 0 {
		ledger := strings.Replace(accuracy.Ledger(figs, known), "var knownMisses", "var "+table, 1)
		t.Logf("%s as measured now (paste into measured_test.go, saying why each misses):\n%s", table, ledger)
	}
}

// replayEarlierRuns replays the request-level runs below measured/ that
// name their model and GPU, benchmark by benchmark, and checks that they
// are exactly earlierRuns.
func replayEarlierRuns(t *testing.T, cat *catalogs.Catalog, opt replay.Options) []replay.Comparison {
	t.Helper()
	fsys := os.DirFS(refdata.Dir())
	dirs, err := measured.FindRunDirs(fsys, "measured")
	if err != nil {
		t.Fatal(err)
	}
	var comps []replay.Comparison
	var names []string
	for _, dir := range dirs {
		if strings.Contains(dir, "inference-perf-kubecon") {
			continue // stepped runs, judged stage by stage by TestSteppedRunsMeetTheBars
		}
		run, err := measured.LoadDir(fsys, dir)
		if err != nil {
			t.Fatalf("%s: %v", dir, err)
		}
		id, err := replay.ResolveModel(cat, run.Model)
		if err != nil || run.GPU == "" {
			t.Logf("%s: not judged: the run does not name a catalog model and GPU (model %q, GPU %q)", dir, run.Model, run.GPU)
			continue
		}
		g, err := cat.GPU(run.GPU)
		if err != nil {
			t.Logf("%s: not judged: GPU %q: %v", dir, run.GPU, err)
			continue
		}
		run.Model, run.GPU = id, g.ID
		parts, err := replay.Parts(run, cat, opt, -1)
		if err != nil {
			t.Fatalf("%s: %v", dir, err)
		}
		for i := range parts {
			rep, err := sim.Run(context.Background(), parts[i].Resolved.Config)
			if err != nil {
				t.Fatalf("%s: %v", parts[i].Name, err)
			}
			comps = append(comps, replay.ComparePart(run, &parts[i], rep))
		}
		names = append(names, run.Name)
	}
	slices.Sort(names)
	want := slices.Clone(earlierRuns)
	slices.Sort(want)
	if !slices.Equal(names, want) {
		t.Errorf("request-level runs judged: %s\nwant: %s", strings.Join(names, ", "), strings.Join(want, ", "))
	}
	for i := range comps {
		if len(accuracy.RunFigures(comps[i:i+1])) == 0 {
			t.Errorf("%s: no TTFT, TPOT or E2E quantile compared", comps[i].Run)
		}
	}
	return comps
}
