package models

import "fmt"

// Drafter is the proposer network of speculative decoding in the terms
// the cost and step-time models price. Model is what one draft pass runs
// (its layers, and the vocabulary its LM head scores); vLLM runs EAGLE and
// MTP passes one layer at a time, so for them Model has one layer.
type Drafter struct {
	Model     *Model
	Precision Precision
	// FCInputs is the input projection run on every pass, in hidden
	// sizes (EAGLE's fc and DeepSeek MTP's eh_proj: concat(embedding,
	// hidden state) = 2 → hidden; 0 = none).
	FCInputs int
	// FirstFCInputs is a projection on the first pass only (EAGLE-3 fuses
	// three of the target's layers: 3 → hidden).
	FirstFCInputs int
	// WideQKV: the layer's attention projections read 2 hidden sizes
	// (EAGLE-3's first layer takes the embedding and the hidden state
	// side by side).
	WideQKV bool
	// weights is the model whose weights are loaded beside the target's
	// (MTP: every prediction layer); head says it is built on the target
	// (its rotary cache is the target's), shared that its embedding and LM
	// head are the target's too.
	weights      *Model
	head, shared bool
}

// EAGLE3DraftVocab is the draft vocabulary of the EAGLE-3 heads the
// EAGLE authors published (draft_vocab_size 32,000, e.g.
// yuhuili/EAGLE3-LLaMA3.1-Instruct-8B): the LM head scores those tokens
// only, mapped to the target's vocabulary.
const EAGLE3DraftVocab = 32000

// draftLayer is one dense decoder layer with target's attention, for an
// EAGLE head: the target's own dense MLP width, or for an all-MoE target
// the width of its active experts.
func draftLayer(target *Model, id string, vocab int) *Model {
	d := *target
	d.ID, d.Name, d.HFID, d.Aliases, d.Source = target.ID+"-"+id, target.Name+" "+id, "", nil, ""
	d.NumLayers, d.VocabSize, d.TieWordEmbeddings = 1, vocab, false
	d.SlidingWindow, d.SlidingWindowLayers, d.NumNextNPredictLayers = 0, 0, 0
	d.MoE, d.Quantization = nil, nil
	if d.IntermediateSize <= 0 && target.MoE != nil {
		d.IntermediateSize = target.MoE.ExpertIntermediateSize * target.MoE.NumExpertsPerTok
	}
	return &d
}

// headPrecision is an EAGLE head's: checkpoints are published in 16 bit,
// and the KV cache is the engine's.
func headPrecision(target Precision) Precision {
	return Precision{Weights: target.Activations, KV: target.KV, Activations: target.Activations}
}

// EAGLEHead is the draft network of EAGLE for target served at p: one
// decoder layer of the target's attention and MLP widths over
// fc(concat(embedding, hidden state)), sharing the target's embedding and
// LM head (vLLM shares them when the head's checkpoint has none).
func EAGLEHead(target *Model, p Precision) *Drafter {
	d := draftLayer(target, "eagle-head", target.VocabSize)
	return &Drafter{Model: d, Precision: headPrecision(p), FCInputs: 2, weights: d, head: true, shared: true}
}

// EAGLE3Head is the draft network of EAGLE-3: one decoder layer whose
// attention reads the embedding and the hidden state side by side, over
// the fused low, middle and high features of the target (fc of 3 hidden
// sizes, first pass), with its own LM head over EAGLE3DraftVocab tokens.
func EAGLE3Head(target *Model, p Precision) *Drafter {
	d := draftLayer(target, "eagle3-head", EAGLE3DraftVocab)
	// One matrix of the draft vocabulary: the LM head (the embedding is
	// the target's).
	d.TieWordEmbeddings = true
	return &Drafter{Model: d, Precision: headPrecision(p), FirstFCInputs: 3, WideQKV: true, weights: d, head: true}
}

// MTPDrafter is the model's multi-token-prediction module as vLLM runs it
// (DeepSeek-V3 §2.2): num_nextn_predict_layers decoder layers like the
// model's last (MoE where it is), each over eh_proj(concat(embedding,
// hidden state)), sharing the embedding and output head; one pass runs
// one layer, drafting one token. Nil when m has no MTP layers.
func MTPDrafter(m *Model, p Precision) *Drafter {
	if m.NumNextNPredictLayers <= 0 {
		return nil
	}
	one := *m
	one.ID, one.Name, one.HFID, one.Aliases, one.Source = m.ID+"-mtp", m.Name+" MTP", "", nil, ""
	one.NumLayers, one.NumNextNPredictLayers = 1, 0
	one.SlidingWindow, one.SlidingWindowLayers = 0, 0
	if m.MoE != nil {
		e := *m.MoE
		e.FirstDenseLayers = 0
		one.MoE = &e
	}
	all := one
	all.NumLayers = m.NumNextNPredictLayers
	return &Drafter{Model: &one, Precision: p, FCInputs: 2, weights: &all, head: true, shared: true}
}

// DraftModel is a whole smaller model drafting for a target of the same
// tokenizer; its KV cache follows the engine's (kvTarget). It checks
// that the vocabularies match, as vLLM does.
func DraftModel(draft, target *Model, kvTarget Precision) (*Drafter, error) {
	if draft.VocabSize != target.VocabSize {
		return nil, fmt.Errorf("%s's vocabulary (%d tokens) is not %s's (%d): a draft model must share the target's tokenizer", draft.ID, draft.VocabSize, target.ID, target.VocabSize)
	}
	p := draft.DefaultPrecision()
	p.KV = kvTarget.KV
	return &Drafter{Model: draft, Precision: p, weights: draft}, nil
}

// WeightBytesPerGPU is the memory the drafter's weights add on each of tp
// GPUs (experts over ep), what vLLM's "Model loading took" adds for it.
func (d *Drafter) WeightBytesPerGPU(tp, ep int) float64 {
	m, p := d.weights, d.Precision
	b := m.WeightBytesPerGPUEP(p, tp, ep)
	act := p.Activations.Bytes()
	if d.head {
		// The rotary cache is the target's (vLLM caches rotary
		// embeddings by their parameters).
		b -= float64(m.MaxPositions) * float64(m.RopeDim()) * act
	}
	if d.shared {
		// So are the embedding and the LM head.
		emb := float64(m.vocabPerRank(tp) * int64(m.HiddenSize))
		if !m.TieWordEmbeddings {
			emb *= 2
		}
		b -= emb * act
	}
	// fc and eh_proj are replicated linears (whole on every GPU); the wide
	// attention input is part of the tensor-parallel qkv projection.
	h := float64(m.HiddenSize)
	fc := float64(d.FCInputs*m.NumLayers+d.FirstFCInputs) * h * h
	if d.WideQKV {
		fc += h * float64(m.QDim()+2*m.NumKVHeads*m.HeadDim) / float64(max(tp, 1))
	}
	return b + fc*p.Weights.WeightBytes()
}

// KVBytesPerToken is the KV cache one token of a sequence takes in the
// drafter's layers on each of tp GPUs (vLLM allocates it from the same
// block pool as the target's).
func (d *Drafter) KVBytesPerToken(tp int) float64 {
	return d.weights.KVBytesPerToken(d.Precision.KV, tp)
}
