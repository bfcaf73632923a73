package steptime

import (
	"math"
	"testing"
)

// memRoof is a memory-bound roof: 1 EFLOP/s, 1 TB/s, so that a GEMM's or
// an attention kernel's ideal time is its bytes over 1e12 B/s.
var memRoof = Roof{FLOPS: 1e18, BytesPerSec: 1e12}

func TestLookupGEMMByHand(t *testing.T) {
	db := NewKernelDB("test", "hand")
	// Site (n, k) = (1024, 1024), measured at m = 1 (10 µs) and m = 3 (20 µs).
	db.AddGEMM(FormatBF16, 1, 1024, 1024, 10e-6)
	db.AddGEMM(FormatBF16, 3, 1024, 1024, 20e-6)
	// Sites (1024, 4096) and (4096, 1024) at m = 1, each at exactly 25% of
	// its ideal time.
	ideal := func(m, n, k int) float64 { return GEMMBytes(m, n, k, 2, 2) / 1e12 }
	db.AddGEMM(FormatBF16, 1, 4096, 1024, 4*ideal(1, 4096, 1024))
	db.AddGEMM(FormatBF16, 1, 1024, 4096, 4*ideal(1, 1024, 4096))
	db.Finish()
	look := func(m, n, k int) (float64, bool) { return db.LookupGEMM(FormatBF16, m, n, k, memRoof, 2, 2) }

	if got, ok := look(3, 1024, 1024); !ok || got != 20e-6 {
		t.Errorf("measured shape: %g (ok %v), want 20 µs", got, ok)
	}
	// m = 2 between the two: ideal times (bytes 2,097,152 + 2·2048·m over
	// 1e12 B/s) 2.101248 µs at m = 1, 2.105344 µs at m = 2, 2.10944 µs at
	// m = 3; utilisations 2.101248/10 and 2.10944/20, halfway 0.1577984;
	// 2.105344 / 0.1577984 µs.
	if got, ok := look(2, 1024, 1024); !ok || !within(got, 2.105344e-6/0.1577984, 1e-12) {
		t.Errorf("m between measurements: %.12g (ok %v), want %.12g", got, ok, 2.105344e-6/0.1577984)
	}
	// n = 2048 is halfway (in log n) between the n = 1024 and 4096 sites at
	// k = 1024: at m = 1 their utilisations are 2.101248/10 and 25%: the
	// mean, 0.2300624, on the ideal (2048·1024·2 + 1024·2 + 2048·2) B =
	// 4,200,448 B / 1e12 B/s = 4.200448 µs.
	if got, ok := look(1, 2048, 1024); !ok || !within(got, 4.200448e-6/0.2300624, 1e-12) {
		t.Errorf("between sites: %.12g (ok %v), want %.12g", got, ok, 4.200448e-6/0.2300624)
	}
	// Two octaves past the last site is still priced; three are not.
	if _, ok := look(1, 16384, 1024); !ok {
		t.Error("n = 16384 (two octaves above 4096) not priced")
	}
	if _, ok := look(1, 32768, 1024); ok {
		t.Error("n = 32768 (three octaves above 4096) priced")
	}
	if _, ok := db.LookupGEMM(FormatFP8, 1, 1024, 1024, memRoof, 1, 1); ok {
		t.Error("a format without a table priced")
	}
	if _, ok := look(0, 1024, 1024); ok {
		t.Error("m = 0 priced")
	}
	if !db.hasGEMM(FormatBF16, 3, 1024, 1024) || db.hasGEMM(FormatBF16, 2, 1024, 1024) {
		t.Error("hasGEMM: want measured shapes only")
	}
}

func TestBracketInts(t *testing.T) {
	grid := []int{64, 256, 1024}
	for _, c := range []struct {
		v      int
		lo, hi int
		w      float64
	}{
		{256, 256, 256, 0},
		{128, 64, 256, 0.5}, // log(128/64) / log(256/64)
		{512, 256, 1024, 0.5},
		{32, 64, 64, 0},       // below: the first
		{4096, 1024, 1024, 0}, // above: the last
	} {
		lo, hi, w := bracketInts(grid, c.v)
		if lo != c.lo || hi != c.hi || !within(w, c.w, 1e-15) && w != c.w {
			t.Errorf("bracketInts(%d) = %d, %d, %g; want %d, %d, %g", c.v, lo, hi, w, c.lo, c.hi, c.w)
		}
	}
	if clampInt(5, grid) != 64 || clampInt(5000, grid) != 1024 || clampInt(300, grid) != 300 {
		t.Error("clampInt")
	}
}

func TestLookupDecodeAttentionByHand(t *testing.T) {
	a := handAttention()
	ideal := func(batch, l float64) float64 { return a.decodeIdeal(memRoof, batch, l) }
	// decodeIdeal by hand: 1 sequence × 128 tokens reads 2·8·128·128·2 B
	// of KV + 4·32·128 B of queries = 540,672 B: 0.540672 µs at 1e12 B/s.
	if got := ideal(1, 128); !within(got, 0.540672e-6, 1e-12) {
		t.Fatalf("decodeIdeal(1, 128) = %g, want 0.540672 µs", got)
	}
	db := NewKernelDB("test", "hand")
	// Batch 2 at 50% utilisation, batch 4 at 25%, at 128 and 512 tokens.
	for _, l := range []int{128, 512} {
		db.AddDecodeAttention(a.Key, 2, l, 2*ideal(2, float64(l)))
		db.AddDecodeAttention(a.Key, 4, l, 4*ideal(4, float64(l)))
	}
	db.Finish()
	for _, c := range []struct {
		name       string
		batch, len float64
		want       float64
	}{
		{"measured", 4, 512, 4 * ideal(4, 512)},
		{"between lengths", 2, 256, 2 * ideal(2, 256)},
		// Batch 3 is halfway from 2 to 4: utilisation (0.5 + 0.25)/2 = 3/8.
		{"between batches", 3, 128, ideal(3, 128) * 8 / 3},
		// One sequence: the smallest measured batch's latency holds.
		{"below the smallest batch", 1, 128, 2 * ideal(2, 128)},
		{"above the largest batch", 16, 128, 4 * ideal(16, 128)},
	} {
		got, ok := db.LookupDecodeAttention(a, c.batch, c.len, memRoof)
		if !ok || !within(got, c.want, 1e-12) {
			t.Errorf("%s: %.12g (ok %v), want %.12g", c.name, got, ok, c.want)
		}
	}
	// A head configuration that was not measured (16/4 heads: half the
	// queries and KV) takes the measured one's utilisation on its own ideal.
	half := a
	half.Key.Heads, half.Key.KVHeads = 16, 4
	if got, ok := db.LookupDecodeAttention(half, 4, 512, memRoof); !ok || !within(got, 4*half.decodeIdeal(memRoof, 4, 512), 1e-12) {
		t.Errorf("nearest heads: %.12g (ok %v)", got, ok)
	}
	other := a
	other.Key.HeadDim = 64
	if _, ok := db.LookupDecodeAttention(other, 4, 512, memRoof); ok {
		t.Error("another head dimension priced from these rows")
	}
	if _, ok := db.LookupDecodeAttention(a, 0.5, 128, memRoof); ok {
		t.Error("under one sequence priced")
	}
	if !db.hasDecode(a.Key, 4, 512) || db.hasDecode(a.Key, 3, 512) {
		t.Error("hasDecode: want measured shapes only")
	}
}

func TestPrefillIdealByHand(t *testing.T) {
	a := handAttention()
	// 2 prompts of 256 tokens: FLOPs 2·4·32·128·(256·257/2) = 1,077,936,128;
	// bytes 2·256·(4·32·128 + 2·8·128·2) = 2·256·20,480 = 10,485,760.
	// On 1e15 FLOP/s and 1e12 B/s: max(1.077936128 µs, 10.48576 µs).
	if got := a.prefillIdeal(Roof{FLOPS: 1e15, BytesPerSec: 1e12}, 2, 256); !within(got, 10.48576e-6, 1e-12) {
		t.Errorf("prefillIdeal %g, want 10.48576 µs", got)
	}
	// A 128-token window over 256 tokens: 128·129/2 + 128·128 = 24,640 pairs.
	w := a
	w.Key.Window = 128
	if got := w.prefillIdeal(Roof{FLOPS: 1e12, BytesPerSec: 1e18}, 1, 256); !within(got, 4*32*128*24640/1e12, 1e-12) {
		t.Errorf("windowed prefillIdeal %g", got)
	}
}

func TestNearestAttention(t *testing.T) {
	g := &grid2{}
	m := map[AttentionKey]*grid2{}
	key := func(h, kv int) AttentionKey {
		return AttentionKey{KVDType: "bf16", HeadDim: 128, Heads: h, KVHeads: kv}
	}
	m[key(32, 8)], m[key(8, 2)], m[key(64, 8)] = g, g, g
	m[AttentionKey{KVDType: "fp8", HeadDim: 128, Heads: 16, KVHeads: 4}] = g
	for _, c := range []struct{ want, of AttentionKey }{
		{key(32, 8), key(32, 8)},
		// (16, 4) is log 2 + log 2 from both (32, 8) and (8, 2): the tie goes
		// to fewer heads; fp8's exact (16, 4) is another KV type.
		{key(8, 2), key(16, 4)},
		{key(32, 8), key(40, 8)}, // log(40/32) < log(64/40)
	} {
		if _, got := nearestAttention(m, c.of); got != c.want {
			t.Errorf("nearest to %+v: %+v, want %+v", c.of, got, c.want)
		}
	}
	if g, _ := nearestAttention(m, AttentionKey{KVDType: "bf16", HeadDim: 64, Heads: 8, KVHeads: 8}); g != nil {
		t.Error("a key of another head dimension matched")
	}
}

func TestLookupCollectives(t *testing.T) {
	db := NewKernelDB("test", "hand")
	db.AddAllReduce(2, false, 1024, 5e-6)
	db.AddAllReduce(2, false, 4096, 7e-6)
	db.AddAllReduce(4, true, 1024, 20e-6)
	db.AddNCCL("all_gather", 8, 1<<20, 30e-6)
	db.Finish()
	for _, c := range []struct {
		name  string
		gpus  int
		eager bool
		bytes float64
		want  float64
		ok    bool
	}{
		{"measured", 2, false, 4096, 7e-6, true},
		{"between: linear in bytes", 2, false, 2048, 5e-6 + 2e-6/3, true},
		{"above: proportional", 2, false, 8192, 14e-6, true},
		{"eager falls back to the graph curve", 2, true, 1024, 5e-6, true},
		{"eager measured", 4, true, 1024, 20e-6, true},
		{"unmeasured GPU count", 8, false, 1024, 0, false},
		{"no bytes", 2, false, 0, 0, false},
	} {
		got, ok := db.LookupAllReduce(c.gpus, c.eager, c.bytes)
		if ok != c.ok || !within(got, c.want, 1e-12) && got != c.want {
			t.Errorf("%s: %g (ok %v), want %g (ok %v)", c.name, got, ok, c.want, c.ok)
		}
	}
	if got, ok := db.LookupNCCL("all_gather", 8, 1<<19); !ok || got != 30e-6 {
		t.Errorf("NCCL below the range: %g (ok %v), want the smallest measurement 30 µs", got, ok)
	}
	if _, ok := db.LookupNCCL("reduce_scatter", 8, 1<<19); ok {
		t.Error("an unmeasured collective priced")
	}
	if !db.hasAllReduce(2, false, 1024) || db.hasAllReduce(2, true, 1024) {
		t.Error("hasAllReduce: the eager curve of 2 GPUs was not measured")
	}
	if size := db.Size(); size["all_reduce"] != 3 || size["nccl/all_gather"] != 1 {
		t.Errorf("Size %v", size)
	}
	if math.IsNaN(db.CommPoints()[0].Sec) || len(db.CommPoints()) != 4 {
		t.Errorf("CommPoints %v", db.CommPoints())
	}
}
