package steptime

import (
	"math"
	"testing"
)

// A memory-bound roof, so that the MoE ideal time is the weight stream.
var moeTestHW = Hardware{PeakFLOPS: map[string]float64{"fp8": 1e18}, BytesPerSec: 1e12}

var moeTestKey = MoEKey{Format: "fp8", Routing: "balanced", Hidden: 1024, Inter: 512, TopK: 2, Experts: 8, TP: 1, EP: 1}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(math.Abs(a), math.Abs(b)) }

// The utilisation envelope: a larger batch is never priced at a lower
// utilisation than a smaller measured one, and a measured point at its
// best utilisation is returned as measured.
func TestMoEEnvelope(t *testing.T) {
	k := moeTestKey
	ideal := func(n int) float64 { return moeIdeal(k, n, moeTestHW) }
	db := NewKernelDB("test", "hand")
	// 50% of the ideal at 1 and 64 tokens; the 128-token row is a slow
	// configuration at 10%.
	for _, n := range []int{1, 64} {
		db.AddMoE(k, n, 2*ideal(n))
	}
	db.AddMoE(k, 128, 10*ideal(128))
	db.Finish()
	for _, c := range []struct {
		tokens int
		want   float64
	}{
		{1, 2 * ideal(1)},
		{64, 2 * ideal(64)},
		{128, 2 * ideal(128)}, // the 64-token configuration's utilisation
		{256, 2 * ideal(256)}, // held beyond the table
	} {
		got, ok := db.LookupMoE(k, c.tokens, moeTestHW)
		if !ok || !near(got, c.want) {
			t.Errorf("LookupMoE at %d tokens = %g (ok %v), want %g", c.tokens, got, ok, c.want)
		}
	}
	if _, ok := db.LookupMoE(MoEKey{Format: "fp8"}, 1, moeTestHW); ok {
		t.Error("an unmeasured configuration was found")
	}
}

// The predecessor's measured time bounds the time from above; a faster
// own table stays.
func TestPredecessorMoE(t *testing.T) {
	oldHW := Hardware{PeakFLOPS: map[string]float64{"fp8": 1e18}, BytesPerSec: 0.5e12}
	hw := Hardware{PeakFLOPS: map[string]float64{"fp8": 1e18}, BytesPerSec: 1e12}
	for _, c := range []struct {
		name  string
		k     MoEKey
		own   float64 // utilisation of this GPU's own row
		bound float64 // the bound, × the ideal time on this GPU
	}{
		// 50% on a GPU of half the bandwidth: the same time is 4× this
		// GPU's ideal.
		{"slow own rows", moeTestKey, 0.1, 4},
		{"fast own rows", moeTestKey, 0.8, 4},
	} {
		ideal := moeIdeal(c.k, 16, hw)
		pre := NewKernelDB("old", "hand")
		pre.AddMoE(c.k, 16, 2*moeIdeal(c.k, 16, oldHW))
		pre.Finish()
		db := NewKernelDB("new", "hand")
		db.AddMoE(c.k, 16, ideal/c.own)
		db.Finish()
		db.Predecessor, db.PredecessorHW = pre, oldHW
		p, ok := db.PredecessorMoE(c.k, 16, hw)
		if !ok || !near(p, c.bound*ideal) {
			t.Errorf("%s: predecessor bound %g (ok %v), want %g", c.name, p, ok, c.bound*ideal)
		}
		own, _ := db.LookupMoE(c.k, 16, hw)
		if applies, want := p < own, c.bound < 1/c.own; applies != want {
			t.Errorf("%s: bound applies %v, want %v", c.name, applies, want)
		}
	}
	// Another split of the same shape on the predecessor stands in, its
	// utilisation carried to k's shape.
	k := moeTestKey
	split := k
	split.TP = 2
	pre := NewKernelDB("old", "hand")
	pre.AddMoE(split, 16, 4*moeIdeal(split, 16, oldHW)) // 25%
	pre.Finish()
	db := NewKernelDB("new", "hand").Finish()
	db.Predecessor, db.PredecessorHW = pre, oldHW
	if p, ok := db.PredecessorMoE(k, 16, hw); !ok || !near(p, 4*moeIdeal(k, 16, oldHW)) {
		t.Errorf("predecessor split bound %g (ok %v), want %g", p, ok, 4*moeIdeal(k, 16, oldHW))
	}
	if _, ok := NewKernelDB("alone", "hand").Finish().PredecessorMoE(k, 16, hw); ok {
		t.Error("a database without a predecessor bounded the time")
	}
}

// A configuration the table lacks takes the utilisation of the nearest
// split of the same shape, else of the sibling GPU's exact configuration.
func TestLookupMoETransfer(t *testing.T) {
	k := moeTestKey
	ep := k
	ep.EP = 4
	tp := k
	tp.TP = 4
	db := NewKernelDB("gpu", "hand")
	db.AddMoE(tp, 32, 4*moeIdeal(tp, 32, moeTestHW)) // 25%
	db.AddMoE(ep, 32, 2*moeIdeal(ep, 32, moeTestHW)) // 50%, another kind of split
	db.AddMoE(MoEKey{Format: "fp8", Routing: "balanced", Hidden: 2048, Inter: 512, TopK: 2, Experts: 8, TP: 1, EP: 1}, 32, 1)
	db.Finish()
	tp2 := k
	tp2.TP = 2
	got, from, ok := db.LookupMoETransfer(tp2, 32, moeTestHW)
	if !ok || from != "TP4×EP1" || !near(got, 4*moeIdeal(tp2, 32, moeTestHW)) {
		t.Errorf("TP2 from %q: %g (ok %v), want TP4×EP1 at 25%%", from, got, ok)
	}
	ep2 := k
	ep2.EP = 2
	if _, from, _ := db.LookupMoETransfer(ep2, 32, moeTestHW); from != "TP1×EP4" {
		t.Errorf("EP2 took %q, want the EP split TP1×EP4", from)
	}
	sib := NewKernelDB("sibling", "hand")
	other := MoEKey{Format: "fp8", Routing: "balanced", Hidden: 4096, Inter: 512, TopK: 2, Experts: 8, TP: 1, EP: 1}
	sibHW := Hardware{PeakFLOPS: map[string]float64{"fp8": 1e18}, BytesPerSec: 2e12}
	sib.AddMoE(other, 8, 5*moeIdeal(other, 8, sibHW)) // 20%
	sib.Finish()
	db.Sibling, db.SiblingHW = sib, sibHW
	got, from, ok = db.LookupMoETransfer(other, 8, moeTestHW)
	if !ok || from != "sibling" || !near(got, 5*moeIdeal(other, 8, moeTestHW)) {
		t.Errorf("sibling transfer from %q: %g (ok %v), want 20%% of this GPU's ideal", from, got, ok)
	}
	if _, _, ok := db.LookupMoETransfer(MoEKey{Format: "bf16"}, 8, moeTestHW); ok {
		t.Error("a shape measured nowhere was transferred")
	}
}

// mxfp4 experts on a GPU with nvfp4 rows are priced from the nearest
// nvfp4 shape's utilisation, not from their own rows; without nvfp4 rows
// the own rows stay.
func TestLookupMoEStandIn(t *testing.T) {
	hw := Hardware{PeakFLOPS: map[string]float64{"nvfp4": 1e18, "mxfp4": 1e18}, BytesPerSec: 1e12}
	k := MoEKey{Format: FormatMXFP4, Routing: RoutingBalanced, Hidden: 2880, Inter: 2880, TopK: 4, Experts: 128, TP: 1, EP: 1}
	near1 := MoEKey{Format: FormatNVFP4, Routing: RoutingBalanced, Hidden: 4096, Inter: 1536, TopK: 8, Experts: 128, TP: 1, EP: 1}
	far := MoEKey{Format: FormatNVFP4, Routing: RoutingBalanced, Hidden: 7168, Inter: 2048, TopK: 8, Experts: 384, TP: 1, EP: 1}
	db := NewKernelDB("sm100", "hand")
	db.AddMoE(k, 32, 10*moeIdeal(k, 32, hw))           // 10%: another kernel
	db.AddMoE(near1, 32, 1.25*moeIdeal(near1, 32, hw)) // 80%
	db.AddMoE(far, 32, 5*moeIdeal(far, 32, hw))        // 20%
	db.Finish()
	got, from, ok := db.LookupMoEStandIn(k, 32, hw)
	if !ok || !near(got, 1.25*moeIdeal(k, 32, hw)) || from != "nvfp4 4096×1536, 128 experts top 8, TP1×EP1" {
		t.Errorf("stand-in %g from %q (ok %v), want 80%% of the mxfp4 ideal from the 4096×1536 rows", got, from, ok)
	}
	hopper := NewKernelDB("sm90", "hand")
	hopper.AddMoE(k, 32, 2*moeIdeal(k, 32, hw))
	hopper.Finish()
	if _, _, ok := hopper.LookupMoEStandIn(k, 32, hw); ok {
		t.Error("a table without nvfp4 rows priced mxfp4 from a stand-in")
	}
	if _, _, ok := db.LookupMoEStandIn(near1, 32, hw); ok {
		t.Error("nvfp4 itself took a stand-in")
	}
}

// Random routing reads the balanced rows, carried to the binomial loads:
// at decode sizes fewer experts are touched than round robin touches, so
// a weight-bound layer is faster; at large batches every expert is
// touched either way.
func TestRandomRouting(t *testing.T) {
	k := MoEKey{Format: "fp8", Routing: RoutingBalanced, Hidden: 1024, Inter: 512, TopK: 8, Experts: 128, TP: 1, EP: 1}
	r := k
	r.Routing = RoutingRandom
	db := NewKernelDB("gpu", "hand")
	for _, n := range []int{16, 4096} {
		db.AddMoE(k, n, 2*moeIdeal(k, n, moeTestHW))
	}
	db.Finish()
	small, ok := db.LookupMoE(r, 16, moeTestHW)
	bal, _ := db.LookupMoE(k, 16, moeTestHW)
	if !ok || !(small < 0.8*bal) {
		t.Errorf("random at 16 tokens %g, balanced %g: want fewer touched experts (about 64%% of 128)", small, bal)
	}
	wr, wb := MoEWorkFor(r, 16), MoEWorkFor(k, 16)
	if wb.ExpertsTouched != 128 || wr.ExpertsTouched < 70 || wr.ExpertsTouched > 95 || wr.Pairs != 128 {
		t.Errorf("touched experts: balanced %v, random %v (pairs %v); want 128 and about 128·(1−(1−8/128)^16) = 82", wb.ExpertsTouched, wr.ExpertsTouched, wr.Pairs)
	}
	big, _ := db.LookupMoE(r, 4096, moeTestHW)
	if bb, _ := db.LookupMoE(k, 4096, moeTestHW); !near(big, bb) && math.Abs(big/bb-1) > 0.02 {
		t.Errorf("random at 4096 tokens %g, balanced %g: want the same within 2%%", big, bb)
	}
	for _, n := range []int{1, 7, 100, 30000} {
		var sum float64
		for _, x := range binomialLoads(n, 8, 128) {
			sum += x
			if x > float64(n) || x < 0 {
				t.Fatalf("%d tokens: load %v out of range", n, x)
			}
		}
		if sum != float64(8*n) {
			t.Errorf("%d tokens: loads sum to %v, want %d", n, sum, 8*n)
		}
	}
}

// A kernel far below its memory roof on the sibling (the same SMs, twice
// this GPU's bandwidth) keeps the sibling's time here; at the best
// utilisation its curve reaches it is held by this GPU's memory roof.
func TestSiblingMoESameDie(t *testing.T) {
	k := moeTestKey
	sibHW := Hardware{PeakFLOPS: map[string]float64{"fp8": 1e18}, BytesPerSec: 2e12}
	hw := Hardware{PeakFLOPS: map[string]float64{"fp8": 1e18}, BytesPerSec: 1e12}
	sib := NewKernelDB("sibling", "hand")
	sib.AddMoE(k, 8, 10*moeIdeal(k, 8, sibHW))  // 10% of the sibling's roof
	sib.AddMoE(k, 64, 2*moeIdeal(k, 64, sibHW)) // 50%: the best
	sib.Finish()
	db := NewKernelDB("gpu", "hand").Finish()
	db.Sibling, db.SiblingHW = sib, sibHW
	if got, _, ok := db.LookupMoETransfer(k, 8, hw); !ok || !near(got, 10*moeIdeal(k, 8, sibHW)) {
		t.Errorf("8 tokens: %g (ok %v), want the sibling's own %g", got, ok, 10*moeIdeal(k, 8, sibHW))
	}
	if got, _, _ := db.LookupMoETransfer(k, 64, hw); !near(got, 2*moeIdeal(k, 64, hw)) {
		t.Errorf("64 tokens: %g, want this GPU's roof at 50%%: %g", got, 2*moeIdeal(k, 64, hw))
	}
}
