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

// The predecessor's measured time bounds the time from above (for
// PredecessorUtilisationFormats its utilisation on this GPU's peaks); a
// faster own table stays.
func TestPredecessorMoE(t *testing.T) {
	oldHW := Hardware{PeakFLOPS: map[string]float64{"fp8": 1e18, "mxfp4": 1e18}, BytesPerSec: 0.5e12}
	hw := Hardware{PeakFLOPS: map[string]float64{"fp8": 1e18, "mxfp4": 1e18}, BytesPerSec: 1e12}
	fp4 := moeTestKey
	fp4.Format = "mxfp4"
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
		{"utilisation format", fp4, 0.1, 2},
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
