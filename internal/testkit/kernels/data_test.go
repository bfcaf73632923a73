package kernels

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/headroom-sim/headroom/internal/testkit/refdata"

	"github.com/headroom-sim/headroom/catalogs"
	"github.com/headroom-sim/headroom/hardware"
	"github.com/headroom-sim/headroom/sim/steptime"
)

// The reference data live next to the project (../shared/data from the
// project root); HEADROOM_SHARED_DATA overrides the location. Tests that
// need them skip when they are absent.
func sharedData(t testing.TB) string {
	t.Helper()
	dir := refdata.Location()
	if _, err := os.Stat(filepath.Join(dir, VidurDir)); err != nil {
		t.Skipf("reference data not found at %s", dir)
	}
	return dir
}

var (
	loadOnce sync.Once
	loaded   *Data
	loadErr  error
)

func testData(t testing.TB) (*Data, GPUs, *catalogs.Catalog) {
	t.Helper()
	dir := sharedData(t)
	loadOnce.Do(func() { loaded, loadErr = Load(os.DirFS(dir)) })
	if loadErr != nil {
		t.Fatal(loadErr)
	}
	cat, err := catalogs.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	gpus, err := LoadGPUs(cat.GPU, "a100-80gb", "h100-sxm")
	if err != nil {
		t.Fatal(err)
	}
	return loaded, gpus, cat
}

func defaultPredictions(t testing.TB, d *Data, gpus GPUs) ([]Point, []float64) {
	pts := d.Points()
	pred, err := Predict(pts, gpus, ncclProfile)
	if err != nil {
		t.Fatal(err)
	}
	return pts, pred
}

// TestDefaultsReproduceKernels checks DefaultProfile against the measured
// kernels with the bounds stated in docs/steptime.md.
func TestDefaultsReproduceKernels(t *testing.T) {
	d, gpus, _ := testData(t)
	pts, pred := defaultPredictions(t, d, gpus)
	check := func(what string, sel func(p *Point) bool, maxMedian, maxP90, maxBias float64) {
		t.Helper()
		idx := selectIdx(pts, sel)
		if len(idx) == 0 {
			t.Errorf("%s: no points", what)
			return
		}
		s := Summarize(pred, pts, idx)
		if s.MedianAPE > maxMedian || s.P90APE > maxP90 || math.Abs(s.Bias) > maxBias {
			t.Errorf("%s (n=%d): median APE %.1f%% (max %g), P90 %.1f%% (max %g), bias %+.1f%% (max ±%g)",
				what, s.N, s.MedianAPE, maxMedian, s.P90APE, maxP90, s.Bias, maxBias)
		}
	}
	for _, g := range []string{"a100-80gb", "h100-sxm"} {
		for _, op := range []string{"attn_pre_proj", "attn_post_proj", "mlp_up_proj", "mlp_down_proj"} {
			on := func(p *Point) bool { return p.GPU == g && p.Op == op }
			check(g+" "+op+" T ≤ 64", func(p *Point) bool { return on(p) && p.Tokens <= 64 }, 8, 20, 5)
			check(g+" "+op+" 64 < T < 512", func(p *Point) bool { return on(p) && p.Tokens > 64 && p.Tokens < 512 }, 15, 35, 10)
			check(g+" "+op+" T ≥ 512", func(p *Point) bool { return on(p) && p.Tokens >= 512 }, 10, 25, 6)
		}
		check(g+" mlp (up + down)", func(p *Point) bool { return p.GPU == g && p.Op == "mlp" }, 8, 20, 5)
		check(g+" elementwise per layer, T ≥ 512", func(p *Point) bool { return p.GPU == g && p.Op == "elementwise" && p.Tokens >= 512 }, 15, 35, 5)
		check(g+" elementwise per layer", func(p *Point) bool { return p.GPU == g && p.Op == "elementwise" }, 25, 60, 15)
		for _, n := range []int{2, 4, 8} {
			node := strings.Split(g, "-")[0] + "_dgx"
			on := func(p *Point) bool { return p.Model == node && p.TP == n }
			check(fmt.Sprintf("%s all-reduce %d GPUs ≥ 16 MiB", node, n), func(p *Point) bool { return on(p) && p.SizeBytes >= 16<<20 }, 10, 20, 10)
			check(fmt.Sprintf("%s all-reduce %d GPUs", node, n), func(p *Point) bool { return on(p) }, 25, 60, 25)
		}
	}
	check("a100 attention decode", func(p *Point) bool { return p.Op == "attn_decode" }, 12, 25, 5)
	check("a100 attention prefill (kernel's q·(c+q) work)", func(p *Point) bool { return p.Op == "attn_prefill_square" }, 15, 30, 5)
}

// TestSplitwiseTP2 checks the static-batch times of Llama-2-70B at TP2,
// where Splitwise's engine is not yet overhead-bound.
func TestSplitwiseTP2(t *testing.T) {
	d, gpus, cat := testData(t)
	if len(d.Splitwise) == 0 {
		t.Skip("no Splitwise data")
	}
	llama, err := cat.Model("llama-2-70b")
	if err != nil {
		t.Fatal(err)
	}
	res, err := PredictSplitwiseAll(SplitwiseCases(d.Splitwise), SplitwiseModels(llama), gpus, ncclProfile)
	if err != nil {
		t.Fatal(err)
	}
	for _, hw := range []string{"a100-80gb", "h100-80gb"} {
		var pm, pp, tm, tp []float64
		for _, r := range res {
			if r.Model == "llama2-70b" && r.Hardware == hw && r.TP == 2 {
				pm, pp = append(pm, r.Prompt1), append(pp, r.Pred.Prompt)
				tm, tp = append(tm, r.Token), append(tp, r.Pred.Token)
			}
		}
		if len(pm) == 0 {
			t.Fatalf("%s: no TP2 cases", hw)
		}
		if s := relStats(pp, pm); s.MedianAPE > 15 {
			t.Errorf("%s TP2 prefill: median APE %.1f%% > 15%%", hw, s.MedianAPE)
		}
		if s := relStats(tp, tm); s.MedianAPE > 15 {
			t.Errorf("%s TP2 decode per token: median APE %.1f%% > 15%%", hw, s.MedianAPE)
		}
	}
}

// TestDefaultsAreFitted refits the kernel coefficients from NeutralStart
// and checks that DefaultProfile's (rounded) values are as good as the fit
// on every stage. With -v it prints the fitted values:
//
//	go test ./sim/steptime/kernels -run TestDefaultsAreFitted -v
func TestDefaultsAreFitted(t *testing.T) {
	if testing.Short() {
		t.Skip("the fit takes a few seconds")
	}
	d, gpus, _ := testData(t)
	pts := d.Points()
	for _, id := range sortedKeys(gpus) {
		g := gpus[id]
		_, res, err := Fit(pts, g, NeutralStart(g), DefaultStages)
		if err != nil {
			t.Fatal(err)
		}
		def := ncclProfile(g)
		for _, r := range res {
			st := stageByName(r.Stage)
			var sel []Point
			for i := range pts {
				if pts[i].GPU == id && st.Select(&pts[i]) {
					sel = append(sel, pts[i])
				}
			}
			// The default's loss with the earlier stages' coefficients at
			// their default values too.
			pred, err := Predict(sel, GPUs{id: g}, func(*hardware.GPU) steptime.Profile { return def })
			if err != nil {
				t.Fatal(err)
			}
			all := make([]int, len(sel))
			for i := range all {
				all[i] = i
			}
			dl := Loss(pred, sel, all)
			if testing.Verbose() {
				var vals []string
				for _, par := range st.Params {
					vals = append(vals, fmt.Sprintf("%s %.4g (default %.4g)", par.Name, r.Values[par.Name], *par.Field(&def)))
				}
				fmt.Printf("%s %-17s n=%5d loss %.4f → %.4f (defaults %.4f): %s\n", id, r.Stage, r.N, r.LossBefore, r.LossAfter, dl, strings.Join(vals, ", "))
			}
			if dl > r.LossAfter*1.01+1e-4 {
				t.Errorf("%s %s: the defaults' loss %.4f is above the fit's %.4f: refit DefaultProfile (values %v)", id, r.Stage, dl, r.LossAfter, r.Values)
			}
		}
	}
}

func stageByName(name string) Stage {
	for _, s := range DefaultStages {
		if s.Name == name {
			return s
		}
	}
	panic("unknown stage " + name)
}

// TestReport prints every error table (Markdown) with -v:
//
//	go test ./sim/steptime/kernels -run TestReport -v
func TestReport(t *testing.T) {
	d, gpus, cat := testData(t)
	llama, err := cat.Model("llama-2-70b")
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if err := WriteReport(&b, d, gpus, steptime.DefaultProfile, SplitwiseModels(llama)); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "| a100-80gb | attn_pre_proj") {
		t.Error("report lacks the kernel table")
	}
	if testing.Verbose() {
		fmt.Print(b.String())
	}
}

// ncclProfile is DefaultProfile as the measurements saw it: Vidur and
// Splitwise timed NCCL collectives, not vLLM's custom all-reduce.
func ncclProfile(g *hardware.GPU) steptime.Profile {
	p := steptime.DefaultProfile(g)
	p.CustomAllReduceLatencyUS = 0
	return p
}
