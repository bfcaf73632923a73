package steptime

import (
	"fmt"
	"testing"

	"github.com/headroom-sim/headroom/catalogs"
	"github.com/headroom-sim/headroom/models"
)

// newTestModel is the formula-backend step-time model of a catalog model
// on a catalog GPU with its default profile, CUDA graphs up to 512 tokens.
func newTestModel(t *testing.T, model, gpu string, tp int) *Model {
	t.Helper()
	cat, err := catalogs.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	m, err := cat.Model(model)
	if err != nil {
		t.Fatal(err)
	}
	g, err := cat.GPU(gpu)
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(m, g, m.DefaultPrecision(), tp, DefaultProfile(g), true)
	if err != nil {
		t.Fatal(err)
	}
	return s.WithCUDAGraphs(512)
}

func decodes(n, ctx, window int) *models.Batch {
	var b models.Batch
	b.AddDecodes(n, n*ctx, n*min(ctx, window))
	if window <= 0 {
		b.DecodeContextSWA = 0
	}
	return &b
}

// TestCPUTimeAndAsyncOverlapByHand: the engine's host time per step and
// the part async scheduling hides.
func TestCPUTimeAndAsyncOverlapByHand(t *testing.T) {
	s := newTestModel(t, "llama-3.1-8b", "h100-sxm", 1)
	s.prof.CPU = CPUCoeffs{StepOverheadUS: 1000, PerSeqOverheadUS: 2, PerPrefillOverheadUS: 50, AsyncOverlap: 0.8}
	b := decodes(64, 2048, 0)
	b.AddPrefill(512, 0, 0, true)
	// 1000 + 2·(64 + 1 sequences) + 50·1 prefill = 1,180 µs.
	if got := s.CPUTime(b); !within(got, 1180e-6, 1e-12) {
		t.Errorf("CPUTime %g s, want 1,180 µs", got)
	}
	// Async: 7 ms of GPU hides 0.8 of 1.18 ms: 8.18 − 0.944 = 7.236 ms; a
	// GPU time shorter than the hidden share hides only itself: 0.5 + 1.18 −
	// 0.5 = 1.18 ms.
	if got := s.total(7e-3, 1.18e-3); !within(got, 7.236e-3, 1e-12) {
		t.Errorf("async total %g s, want 7.236 ms", got)
	}
	if got := s.total(0.5e-3, 1.18e-3); !within(got, 1.18e-3, 1e-12) {
		t.Errorf("async total, short GPU %g s, want 1.18 ms", got)
	}
	s.async = false
	if got := s.total(7e-3, 1.18e-3); !within(got, 8.18e-3, 1e-12) {
		t.Errorf("sync total %g s, want 8.18 ms", got)
	}
	// The overhead scale multiplies the host time.
	s.prof.Scale.Overhead = 2
	if got := s.CPUTime(b); !within(got, 2360e-6, 1e-12) {
		t.Errorf("CPUTime, overhead scale 2: %g s, want 2,360 µs", got)
	}
}

// TestExplainIsPredictIsStepTime: the kernels Explain lists add up to
// Predict's GPU time, whose op kinds add up to it too, and StepTime (the
// memoised path the simulator calls) is Predict's total, for dense, MoE
// (expert and data parallel), sliding-window and MLA models, eager and
// graph-replayed steps.
func TestExplainIsPredictIsStepTime(t *testing.T) {
	for _, c := range []struct {
		model, gpu string
		tp, dp     int
	}{
		{"llama-3.1-8b", "h100-sxm", 2, 1},
		{"qwen3-30b-a3b", "h200", 2, 4},
		{"gpt-oss-120b", "b200", 1, 1},
		{"gemma-2-9b", "l40s", 1, 1},
		{"deepseek-v3", "h200", 8, 1},
	} {
		s := newTestModel(t, c.model, c.gpu, c.tp)
		if c.dp > 1 {
			s.WithExpertParallel(c.tp * c.dp)
		}
		w := s.model.SlidingWindow
		for _, tokens := range []int{1, 64, 600} { // 600 > 512: eager
			b := decodes(tokens, 3000, w)
			b.AddPrefill(tokens, 1000, w, true)
			p := s.Predict(b)
			var kernels, ops float64
			for _, k := range s.Explain(b) {
				kernels += k.Sec
			}
			for _, o := range p.Ops {
				ops += o
			}
			name := fmt.Sprintf("%s on %s TP%d DP%d, %d tokens", c.model, c.gpu, c.tp, c.dp, b.Tokens())
			if !within(kernels, p.GPU, 1e-12) || !within(ops, p.GPU, 1e-12) {
				t.Errorf("%s: kernels %g s, ops %g s, GPU %g s", name, kernels, ops, p.GPU)
			}
			if st := s.StepTime(b); !within(st, p.Total, 1e-9) || !within(s.GPUTime(b), p.GPU, 1e-9) {
				t.Errorf("%s: StepTime %g s, GPUTime %g s; Predict %g s, %g s", name, st, s.GPUTime(b), p.Total, p.GPU)
			}
			if p.Total < p.GPU || p.Total > p.GPU+p.CPU {
				t.Errorf("%s: total %g s outside [GPU %g, GPU + CPU %g]", name, p.Total, p.GPU, p.GPU+p.CPU)
			}
		}
	}
}

// TestStepTimeMonotonic: longer contexts never make a step faster, nor
// do more tokens. Tokens are stepped by the GEMMs' 64-row tile: within a
// tile the formula is not monotonic (the wave model counts whole row tiles
// while the FLOPs count rows, so the 65th row can lower a GEMM's time by
// several per cent), and MoE layers, whose expert loads are rounded per
// expert, dip slightly between tiles too; they are checked in context
// only.
func TestStepTimeMonotonic(t *testing.T) {
	for _, c := range []struct {
		model, gpu string
		tp         int
		tokens     bool
	}{
		{"llama-3.1-8b", "h100-sxm", 1, true},
		{"llama-3.1-70b", "h100-sxm", 4, true},
		{"llama-3.1-8b", "l40s", 1, true},
		{"llama-3.1-8b", "rtx-pro-6000", 2, true},
		{"mistral-7b", "h200", 1, true},
		{"gemma-2-9b", "b200", 1, true},
		{"qwen3-30b-a3b", "h200", 1, false},
		{"gpt-oss-120b", "b200", 1, false},
		{"deepseek-v3", "h200", 8, false},
	} {
		s := newTestModel(t, c.model, c.gpu, c.tp)
		w := s.model.SlidingWindow
		name := fmt.Sprintf("%s on %s TP%d", c.model, c.gpu, c.tp)
		prev := 0.0
		for l := 1; l <= 131072; l = l*5/4 + 1 {
			st := s.StepTime(decodes(32, l, w))
			if st < prev {
				t.Errorf("%s: 32 decodes at %d tokens of context take %g s, shorter ones %g s", name, l, st, prev)
			}
			prev = st
		}
		prev = 0
		for l := 0; l <= 65536; l = l*2 + 64 {
			var b models.Batch
			b.AddPrefill(256, l, w, true)
			st := s.StepTime(&b)
			if st < prev {
				t.Errorf("%s: a 256-token chunk after %d cached tokens takes %g s, after fewer %g s", name, l, st, prev)
			}
			prev = st
		}
		if !c.tokens {
			continue
		}
		prevD, prevP := 0.0, 0.0
		for n := 64; n <= 8192; n += 64 {
			d := s.StepTime(decodes(n, 2048, w))
			var b models.Batch
			b.AddPrefill(n, 0, w, true)
			p := s.StepTime(&b)
			if d < prevD || p < prevP {
				t.Errorf("%s: %d tokens: decode %g s, prefill %g s; %d tokens took %g s, %g s", name, n, d, p, n-64, prevD, prevP)
			}
			prevD, prevP = d, p
		}
	}
}

// TestTPScaling: on NVLink GPUs more tensor parallelism makes every step
// faster, but never by more than the TP degree (each GPU still does at
// least 1/TP of the work, and the all-reduces add to it).
func TestTPScaling(t *testing.T) {
	for _, c := range []struct{ model, gpu string }{
		{"llama-3.1-8b", "h100-sxm"},
		{"llama-3.1-70b", "h200"},
		{"llama-3.1-70b", "b200"},
		{"qwen2.5-72b", "h100-sxm"},
	} {
		for _, batch := range []struct {
			name string
			b    *models.Batch
		}{
			{"one decode", decodes(1, 2048, 0)},
			{"64 decodes", decodes(64, 2048, 0)},
			{"8192-token prefill", func() *models.Batch { var b models.Batch; b.AddPrefill(8192, 0, 0, true); return &b }()},
		} {
			one := newTestModel(t, c.model, c.gpu, 1).Predict(batch.b).GPU
			prev := one
			for _, tp := range []int{2, 4, 8} {
				got := newTestModel(t, c.model, c.gpu, tp).Predict(batch.b).GPU
				if got >= prev || got < one/float64(tp) {
					t.Errorf("%s on %s, %s: TP%d %g s (TP%d %g s, TP1 %g s)", c.model, c.gpu, batch.name, tp, got, tp/2, prev, one)
				}
				prev = got
			}
		}
	}
}

// TestEagerSteps: a step larger than the CUDA-graph size launches every
// kernel from the host, so each call takes at least the launch time: with
// graphs off, no step is faster than with them, and a one-token step pays
// the per-kernel floor.
func TestEagerSteps(t *testing.T) {
	graph := newTestModel(t, "llama-3.1-8b", "h100-sxm", 2)
	eager := newTestModel(t, "llama-3.1-8b", "h100-sxm", 2).WithCUDAGraphs(0)
	for _, n := range []int{1, 8, 64, 256} {
		b := decodes(n, 1024, 0)
		g, e := graph.Predict(b).GPU, eager.Predict(b).GPU
		if e < g {
			t.Errorf("%d decodes: eager %g s below graph replay %g s", n, e, g)
		}
		for _, k := range eager.Explain(b) {
			if floor := float64(k.Count) * eager.prof.EagerLaunchUS * 1e-6; k.Sec < floor*(1-1e-12) && k.Op != models.OpAttnDecode {
				t.Errorf("%d decodes, eager %s: %g s under %d launches of %g µs", n, k.Name, k.Sec, k.Count, eager.prof.EagerLaunchUS)
			}
		}
	}
	if !graph.eager(513) || graph.eager(512) {
		t.Error("graphs cover up to 512 tokens")
	}
	if got := CUDAGraphTokens(256, 8192); got != 512 {
		t.Errorf("CUDAGraphTokens(256, 8192) = %d, want min(512, 512, 8192)", got)
	}
	if got := CUDAGraphTokens(128, 2048); got != 256 {
		t.Errorf("CUDAGraphTokens(128, 2048) = %d, want 2·128", got)
	}
	if got := CUDAGraphTokens(1024, 300); got != 300 {
		t.Errorf("CUDAGraphTokens(1024, 300) = %d, want the token budget", got)
	}
}
