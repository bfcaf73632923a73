package steptime

import (
	"math"
	"strings"
	"testing"

	"github.com/headroom-sim/headroom/models"
)

// mlaTestDB holds MLA module rows at 8 and 16 heads: decode 100 µs + 1 µs
// per head + 0.01 µs per sequence·KV token; prefill 100 µs + 0.02 µs per
// head·token.
func mlaTestDB() *KernelDB {
	db := NewKernelDB("test", "hand")
	for _, kv := range []string{"bf16"} {
		for _, h := range []int{8, 16} {
			k := MLAKey{KVDType: kv, GEMM: FormatFP8Block, Heads: h}
			for _, b := range []int{1, 32} {
				for _, x := range []int{1, 1024, 4096} {
					db.AddMLAModule(false, k, b, x, (100+float64(h)+0.01*float64(b*x))*1e-6)
					db.AddMLAModule(true, k, b, x, (100+0.02*float64(h*b*x))*1e-6)
				}
			}
		}
	}
	return db.Finish()
}

// Rows at a measured head count are read as measured; between two head
// counts the time is linear in heads.
func TestLookupMLAModule(t *testing.T) {
	db := mlaTestDB()
	roof := Roof{FLOPS: 1e15, BytesPerSec: 4e12}
	for _, c := range []struct {
		heads int
		want  float64
	}{{8, 108 + 0.01*32*1024}, {16, 116 + 0.01*32*1024}, {12, 112 + 0.01*32*1024}} {
		got, ok := db.LookupMLAModule(false, MLAKey{KVDType: "bf16", GEMM: FormatFP8Block, Heads: c.heads}, 32, 1024, roof, 1)
		if !ok || math.Abs(got*1e6-c.want) > 1e-6 {
			t.Errorf("%d heads: %g µs (ok %v), want %g", c.heads, got*1e6, ok, c.want)
		}
	}
	if _, ok := db.LookupMLAModule(false, MLAKey{KVDType: "fp8", GEMM: FormatFP8Block, Heads: 8}, 1, 1, roof, 1); ok {
		t.Error("an unmeasured KV type was found")
	}
	if !db.HasMLAModule("bf16", FormatFP8Block) || db.HasMLAModule("bf16", FormatBF16) {
		t.Error("HasMLAModule")
	}
	if f := db.MLAModuleFloor(false, "bf16", FormatFP8Block); math.Abs(f-108.01e-6) > 1e-12 {
		t.Errorf("decode floor %g, want 108.01 µs (8 heads, 1 sequence, 1 token)", f)
	}
}

// DeepSeek-V3 at TP8 (16 heads per GPU) reads the module rows at 16
// heads, drops its own projection GEMMs, and in a CUDA graph sheds part
// of the eager floor; a model with other MLA dimensions keeps the
// formula.
func TestMLAModuleStep(t *testing.T) {
	s, m := deepSeekTP8(t)
	s.WithKernelDB(mlaTestDB())
	var b models.Batch
	for range 32 {
		b.AddDecode(1024, 0)
	}
	var mla, proj int
	var sec float64
	for _, k := range s.Explain(&b) {
		if strings.HasPrefix(k.Name, "MLA attention block") {
			mla++
			sec = k.Sec / float64(k.Count)
			if !strings.Contains(k.Shape, "16 heads per GPU") || !strings.Contains(k.Source, "mla_generation_module") {
				t.Errorf("MLA kernel %q from %q", k.Shape, k.Source)
			}
		}
		if mlaProjections[k.Name] {
			proj++
		}
	}
	if mla != 1 || proj != 0 {
		t.Fatalf("%d MLA module kernels and %d projection GEMMs, want 1 and 0", mla, proj)
	}
	// 116 + 0.01·32·1024 = 443.7 µs: above twice the 108 µs floor, so as
	// measured.
	if math.Abs(sec*1e6-443.68) > 1e-6 {
		t.Errorf("module %g µs per layer, want the measured 443.68", sec*1e6)
	}
	// One sequence, one token: the floor itself, less the launch time a
	// graph saves.
	var one models.Batch
	one.AddDecode(1, 0)
	graph := s.Predict(&one).Ops[models.OpAttnDecode] / 61
	if !(graph < 116.01e-6 && graph > 20e-6) {
		t.Errorf("one-token module in a graph %g µs, want under the measured 116.01", graph*1e6)
	}
	other := *m
	mla2 := *m.MLA
	mla2.KVLoRARank = 256
	other.MLA = &mla2
	s2, _ := New(&other, s.gpu, m.DefaultPrecision(), 8, DefaultProfile(s.gpu), true)
	s2.WithKernelDB(mlaTestDB())
	for _, k := range s2.Explain(&b) {
		if strings.HasPrefix(k.Name, "MLA attention block") {
			t.Errorf("a model with kv_lora_rank 256 read the DeepSeek-V3 module rows")
		}
	}
}
