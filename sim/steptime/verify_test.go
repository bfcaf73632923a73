package steptime

import (
	"math"
	"testing"

	"github.com/headroom-sim/headroom/catalogs"
	"github.com/headroom-sim/headroom/models"
)

// verifyScale by hand: Llama-3.1-8B's heads (32 query, 8 KV, 128 wide,
// bf16 KV), one sequence of 1,000 KV tokens verifying 3 drafts (4
// queries, 1,000 + 999 + 998 + 997 pairs).
func TestVerifyScale(t *testing.T) {
	a := AttentionShape{Key: AttentionKey{KVDType: "bf16", HeadDim: 128, Heads: 32, KVHeads: 8}, KVBytes: 2}
	pairs := 1000.0 + 999 + 998 + 997
	// Memory-bound: the KV stream (2·8·128·1000·2 bytes) is read once;
	// only the queries' own traffic (4·32·128 bytes each) grows.
	memBound := Roof{FLOPS: 1e15, BytesPerSec: 3e12}
	if got, want := verifyScale(a, memBound, 1, 1000, 4, pairs), (4.096e6+4*16384)/(4.096e6+16384); math.Abs(got-want) > 1e-12 {
		t.Errorf("memory-bound verification scale %g, want %g", got, want)
	}
	// Compute-bound (a slow tensor core): the FLOPs of the pairs.
	slow := Roof{FLOPS: 1e11, BytesPerSec: 3e12}
	if got, want := verifyScale(a, slow, 1, 1000, 4, pairs), pairs/1000; math.Abs(got-want) > 1e-12 {
		t.Errorf("compute-bound verification scale %g, want %g", got, want)
	}
	// A decode is its own scale.
	if got := verifyScale(a, memBound, 8, 8000, 8, 8000); got != 1 {
		t.Errorf("decode scale %g, want 1", got)
	}
}

// A verification step on Llama-3.1-8B / H100: attention close to the
// decode's (the KV is read once), the whole step dearer (four token rows
// per sequence through every matmul, four scored positions) but far less
// than four decode steps; GPUTime is Predict's GPU time.
func TestVerifyStep(t *testing.T) {
	cat, err := catalogs.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	m, _ := cat.Model("llama-3.1-8b")
	g, _ := cat.GPU("h100-sxm")
	s, err := New(m, g, m.DefaultPrecision(), 1, DefaultProfile(g), true)
	if err != nil {
		t.Fatal(err)
	}
	s.WithCUDAGraphs(512)
	var dec, ver models.Batch
	for range 64 {
		dec.AddDecode(2000, 0)
		ver.AddVerify(2000, 3, 0)
	}
	pd, pv := s.Predict(&dec), s.Predict(&ver)
	if r := pv.Ops[models.OpAttnDecode] / pd.Ops[models.OpAttnDecode]; r < 1 || r > 1.1 {
		t.Errorf("verification attention %.3g× the decode's, want within [1, 1.1]", r)
	}
	if r := s.StepTime(&ver) / s.StepTime(&dec); r < 1.02 || r > 2 {
		t.Errorf("verification step %.3g× the decode step, want within (1, 2)", r)
	}
	if got, want := s.GPUTime(&ver), pv.GPU; math.Abs(got-want) > 1e-9*want {
		t.Errorf("GPUTime %g, Predict's GPU %g", got, want)
	}
	if s.GPUTime(&models.Batch{}) != 0 || s.GEMMTime("bf16", 0, 4096, 4096) != 0 {
		t.Error("an empty batch or GEMM takes time")
	}
	if a, b := s.GEMMTime("bf16", 64, 4096, 8192), s.GEMMTime("bf16", 64, 4096, 4096); !(a > b && b > 0) {
		t.Errorf("GEMM times %g (k=8192), %g (k=4096)", a, b)
	}
}
