package models

import (
	"math"
	"strings"
	"testing"

	"github.com/headroom-sim/headroom/hardware"
)

func within(got, want, rel float64) bool { return math.Abs(got-want) <= rel*want }

// The drafters' weights and KV, worked out from the shapes by hand.
func TestDrafterWeightsAndKV(t *testing.T) {
	l8 := llama31_8B()
	bf16 := l8.DefaultPrecision()
	const h = 4096
	// One Llama-3.1-8B layer: q and o 4096², k and v 4096 × 1024, gate, up
	// and down 3 × 4096 × 14336, two norms, plus the final norm.
	layer := float64(2*h*h + 2*h*1024 + 3*h*14336 + 3*h)
	kvLayer := 2.0 * 8 * 128 * 2 // K and V, 8 heads × 128, bf16

	eagle := EAGLEHead(l8, bf16)
	// EAGLE: the layer and fc (2·4096 → 4096); embedding and LM head are
	// the target's.
	if got, want := eagle.WeightBytesPerGPU(1, 1), 2*(layer+2*h*h); got != want {
		t.Errorf("EAGLE head: %g bytes, want %g", got, want)
	}
	if got := eagle.KVBytesPerToken(1); got != kvLayer {
		t.Errorf("EAGLE head KV: %g bytes per token, want %g (one layer)", got, kvLayer)
	}
	if eagle.Model.NumLayers != 1 || eagle.Model.VocabSize != l8.VocabSize || eagle.FCInputs != 2 {
		t.Errorf("EAGLE head %+v", eagle)
	}
	// EAGLE-3 adds its own LM head over 32,000 tokens, fc over 3 hidden
	// sizes, and attention projections reading 2 (q, k, v: 6144 wide).
	e3 := EAGLE3Head(l8, bf16)
	if got, want := e3.WeightBytesPerGPU(1, 1), 2*(layer+32000*h+3*h*h+h*6144); got != want {
		t.Errorf("EAGLE-3 head: %g bytes, want %g", got, want)
	}
	// At tp 2 the layer and the LM head split; fc stays whole on each GPU
	// (vLLM's fc is a replicated linear).
	if got, want := eagle.WeightBytesPerGPU(2, 1), 2*(float64(h*h+h*1024+3*h*14336/2+3*h)+2*h*h); !within(got, want, 1e-9) {
		t.Errorf("EAGLE head at tp 2: %g bytes, want %g", got, want)
	}

	// DeepSeek-V3's MTP layer: an MoE layer with MLA (about 11.6 B
	// parameters: 256 experts of 3 × 7168 × 2048 in fp8 are 11.27 GB) and
	// eh_proj; the report's 14 B module counts the embedding and head too.
	ds := deepseekV3()
	ds.NumNextNPredictLayers = 1
	mtp := MTPDrafter(ds, ds.DefaultPrecision())
	experts := 256 * 3 * 7168 * 2048.0
	if got := mtp.WeightBytesPerGPU(1, 1); got < experts || got > experts*1.05 {
		t.Errorf("MTP layer: %.4g bytes, want just above the experts' %.4g", got, experts)
	}
	if mtp.Model.MoE == nil || mtp.Model.MoE.FirstDenseLayers != 0 || mtp.Model.NumLayers != 1 || mtp.FCInputs != 2 {
		t.Errorf("MTP drafter %+v", mtp.Model)
	}
	if got, want := mtp.KVBytesPerToken(1), ds.KVBytesPerTokenLayer(hardware.BF16, 1); got != want {
		t.Errorf("MTP KV %g bytes per token, want one layer's %g", got, want)
	}
	if MTPDrafter(l8, bf16) != nil {
		t.Error("a model without MTP layers has an MTP drafter")
	}

	// A draft model loads whole, with its own embeddings.
	small := &Model{ID: "small", DType: hardware.BF16, NumLayers: 16, HiddenSize: 2048, IntermediateSize: 8192,
		NumHeads: 32, NumKVHeads: 8, HeadDim: 64, VocabSize: l8.VocabSize, MaxPositions: 131072, TieWordEmbeddings: true}
	dm, err := DraftModel(small, l8, Precision{Weights: hardware.BF16, KV: hardware.FP8, Activations: hardware.BF16})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := dm.WeightBytesPerGPU(1, 1), small.WeightBytesPerGPU(small.DefaultPrecision(), 1); got != want {
		t.Errorf("draft model %g bytes, want its own %g", got, want)
	}
	if got, want := dm.KVBytesPerToken(1), 16*2*8*64*1.0; got != want { // fp8 KV: the engine's
		t.Errorf("draft model KV %g bytes per token, want %g", got, want)
	}
	small.VocabSize = 32000
	if _, err := DraftModel(small, l8, bf16); err == nil || !strings.Contains(err.Error(), "tokenizer") {
		t.Errorf("a draft model of another vocabulary: %v", err)
	}
}

// A verification of k drafts is k + 1 token rows scored at every
// position, reading the sequence's KV once with the pairs of a causal
// chunk after ctx − 1 tokens.
func TestBatchAddVerify(t *testing.T) {
	var b Batch
	b.AddVerify(100, 3, 0)
	want := Batch{DecodeSeqs: 1, SpecTokens: 3, Sampled: 4, DecodeContext: 103, SpecPairs: 100 + 101 + 102}
	if b != want {
		t.Errorf("AddVerify = %+v, want %+v", b, want)
	}
	if b.Tokens() != 4 {
		t.Errorf("%d token rows, want 4", b.Tokens())
	}
	var w Batch
	w.AddVerify(100, 3, 101) // window 101: keys capped
	if w.SpecPairsSWA != 100+101+101 || w.DecodeContextSWA != 101 {
		t.Errorf("windowed verify %+v", w)
	}
	var d Batch
	d.AddDraftInput(100, 4, 0)
	if d.Sampled != 1 || d.Tokens() != 4 {
		t.Errorf("draft input %+v: want 4 rows, 1 scored", d)
	}
	var z, one Batch
	z.AddVerify(50, 0, 0)
	one.AddDecode(50, 0)
	if z != one {
		t.Errorf("a verification of no drafts %+v is not a decode %+v", z, one)
	}
	// The cost model: four queries over the same KV, so attention FLOPs
	// grow with the pairs, the KV bytes do not.
	c := llama31_8B().NewCostModel(llama31_8B().DefaultPrecision(), 1)
	var dec Batch
	dec.AddDecode(103, 0)
	vc, dc := c.Step(&b)[OpAttnDecode], c.Step(&dec)[OpAttnDecode]
	if r := vc.FLOPs / dc.FLOPs; !within(r, (103.0+100+101+102)/103, 1e-12) {
		t.Errorf("verify/decode attention FLOPs %g", r)
	}
	kvBytes := func(o OpCost) float64 { return o.DataBytes - 32*float64(o.Tokens)*2*4096*2 }
	if kvBytes(vc) != kvBytes(dc) {
		t.Errorf("verify KV bytes %g, decode %g: the KV is read once", kvBytes(vc), kvBytes(dc))
	}
}
