package replay_test

import (
	"fmt"
	"os"
	"testing"

	"github.com/headroom-sim/headroom/models"
	"github.com/headroom-sim/headroom/sim/steptime"
)

func TestExplainProbe(t *testing.T) {
	mid, gid := os.Getenv("M"), os.Getenv("G")
	if mid == "" {
		t.Skip()
	}
	cat := builtin(t)
	m, err := cat.Model(mid)
	if err != nil {
		t.Fatal(err)
	}
	g, _ := cat.GPU(gid)
	var tp, b, ctx, pre int
	fmt.Sscan(os.Getenv("TP"), &tp)
	fmt.Sscan(os.Getenv("B"), &b)
	fmt.Sscan(os.Getenv("CTX"), &ctx)
	fmt.Sscan(os.Getenv("PRE"), &pre)
	p := m.DefaultPrecision()
	sm, err := steptime.New(m, g, p, tp, steptime.DefaultProfile(g), true)
	if err != nil {
		t.Fatal(err)
	}
	sm.WithCUDAGraphs(512)
	if os.Getenv("BACKEND") == "table" {
		db, _ := kernelLoader(t)(g, "")
		sm.WithKernelDB(db)
	}
	var batch models.Batch
	for range b {
		batch.AddDecode(ctx, m.SlidingWindow)
	}
	if pre > 0 {
		batch.AddPrefill(pre, 0, m.SlidingWindow, true)
	}
	t.Logf("precision %+v", p)
	var sum float64
	for _, k := range sm.Explain(&batch) {
		sum += k.Sec
		t.Logf("%-40s x%-4d %8.1f us  %-10s %s | %s  meas %.1f", k.Name, k.Count, k.Sec*1e6, k.Bound, k.Shape, k.Source, k.MeasuredSec*1e6)
	}
	t.Logf("GPU %.1f us, CPU %.1f us, step %.1f us", sum*1e6, sm.CPUTime(&batch)*1e6, sm.StepTime(&batch)*1e6)
}
