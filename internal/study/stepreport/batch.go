package stepreport

import (
	"fmt"

	"github.com/headroom-sim/headroom/hardware"
	"github.com/headroom-sim/headroom/models"
	"github.com/headroom-sim/headroom/sim"
	"github.com/headroom-sim/headroom/sim/engine"
)

// Batch is the step to explain: DecodeSeqs sequences decoding one token
// each, every one attending to KVLen tokens (its context, the token being
// decoded included), and PrefillChunks prefill chunks of PrefillTokens new
// tokens each after PrefillContextTokens tokens already in the KV cache.
type Batch struct {
	DecodeSeqs           int
	KVLen                int
	PrefillTokens        int
	PrefillContextTokens int
	// PrefillChunks is the number of prefill chunks (0: one when
	// PrefillTokens is set).
	PrefillChunks int
	// PrefillPartial says the chunks do not complete their prompts: the
	// step samples no token for them (by default every chunk is a prompt's
	// last and samples its first output token).
	PrefillPartial bool
}

// MaxBatchTokens bounds every token count of a batch before the engine's
// limits are known (they bound it further).
const MaxBatchTokens = 1 << 24

// The batch's fields, as errors name them (the API's JSON paths; the CLI
// maps them to its flags).
const (
	FieldDecodeSeqs     = "batch.decode_seqs"
	FieldKVLen          = "batch.kv_len"
	FieldPrefillTokens  = "batch.prefill_tokens"
	FieldPrefillContext = "batch.prefill_context_tokens"
	FieldPrefillChunks  = "batch.prefill_chunks"
	FieldMoETP          = "moe_tp"
	FieldMoEEP          = "moe_ep"
)

func fieldErr(field, format string, a ...any) error {
	return &hardware.FieldError{Field: field, Reason: fmt.Sprintf(format, a...)}
}

// chunks is the number of prefill chunks.
func (b *Batch) chunks() int {
	if b.PrefillTokens == 0 {
		return 0
	}
	return max(b.PrefillChunks, 1)
}

// validate checks the fields on their own.
func (b *Batch) validate() error {
	for _, f := range []struct {
		name string
		v    int
	}{{FieldDecodeSeqs, b.DecodeSeqs}, {FieldKVLen, b.KVLen}, {FieldPrefillTokens, b.PrefillTokens},
		{FieldPrefillContext, b.PrefillContextTokens}, {FieldPrefillChunks, b.PrefillChunks}} {
		if f.v < 0 || f.v > MaxBatchTokens {
			return fieldErr(f.name, "%d is not in [0, %d]", f.v, MaxBatchTokens)
		}
	}
	switch {
	case b.DecodeSeqs == 0 && b.PrefillTokens == 0:
		return fieldErr(FieldDecodeSeqs, "the batch is empty: give decoding sequences (and the tokens each attends to) or prefill tokens, or both")
	case b.DecodeSeqs > 0 && b.KVLen == 0:
		return fieldErr(FieldKVLen, "is required with decoding sequences: the tokens each one attends to, the one it decodes included")
	case b.DecodeSeqs == 0 && b.KVLen > 0:
		return fieldErr(FieldKVLen, "describes decoding sequences, and the batch has none")
	case b.PrefillTokens == 0 && (b.PrefillChunks > 0 || b.PrefillContextTokens > 0 || b.PrefillPartial):
		field := FieldPrefillChunks
		if b.PrefillContextTokens > 0 {
			field = FieldPrefillContext
		}
		return fieldErr(field, "describes prefill chunks, and the batch has none")
	}
	return nil
}

// check bounds the batch by what the engine could schedule in one step: the
// sequence and token budgets, max_model_len, the KV cache, and the V0
// scheduler's separate prefill and decode steps.
func (b *Batch) check(cfg *sim.Config) error {
	eng := &cfg.Engine
	n := b.chunks()
	switch {
	case b.KVLen > eng.MaxModelLen:
		return fieldErr(FieldKVLen, "%d exceeds max_model_len %d", b.KVLen, eng.MaxModelLen)
	case b.PrefillContextTokens+b.PrefillTokens > eng.MaxModelLen:
		return fieldErr(FieldPrefillTokens, "%d cached + %d new tokens exceed max_model_len %d", b.PrefillContextTokens, b.PrefillTokens, eng.MaxModelLen)
	case b.DecodeSeqs+n > eng.MaxNumSeqs:
		field := FieldDecodeSeqs
		if b.DecodeSeqs <= eng.MaxNumSeqs {
			field = FieldPrefillChunks
		}
		return fieldErr(field, "%d decoding sequences + %d prefill chunks exceed max_num_seqs %d: the engine never runs more sequences in a step", b.DecodeSeqs, n, eng.MaxNumSeqs)
	case b.DecodeSeqs+n*b.PrefillTokens > eng.MaxNumBatchedTokens:
		field := FieldPrefillTokens
		if b.PrefillTokens == 0 {
			field = FieldDecodeSeqs
		}
		return fieldErr(field, "the step's %d tokens (%d decoding + %d × %d prefill) exceed max_num_batched_tokens %d", b.DecodeSeqs+n*b.PrefillTokens, b.DecodeSeqs, n, b.PrefillTokens, eng.MaxNumBatchedTokens)
	case eng.Scheduler == engine.SchedulerV0 && !eng.EnableChunkedPrefill && b.DecodeSeqs > 0 && n > 0:
		return fieldErr(FieldPrefillTokens, "the v0 scheduler without chunked prefill runs prefills and decodes in separate steps: explain one or the other")
	}
	if need := b.kvBlocks(cfg); need > cfg.NumGPUBlocks {
		field := FieldKVLen
		if b.DecodeSeqs == 0 {
			field = FieldPrefillTokens
		}
		return fieldErr(field, "the batch holds %d KV blocks of %d tokens, the cache has %d", need, eng.BlockSize, cfg.NumGPUBlocks)
	}
	return nil
}

// kvBlocks is the KV blocks the batch's sequences hold once the step has
// written its tokens.
func (b *Batch) kvBlocks(cfg *sim.Config) int {
	units := cfg.BlockUnits
	if units == nil {
		bs := cfg.Engine.BlockSize
		units = func(n int) int { return (n + bs - 1) / bs }
	}
	blocks := 0
	if b.DecodeSeqs > 0 {
		blocks += b.DecodeSeqs * units(b.KVLen)
	}
	if n := b.chunks(); n > 0 {
		blocks += n * units(b.PrefillContextTokens+b.PrefillTokens)
	}
	return blocks
}

// batch is the models.Batch the step-time model prices.
func (b *Batch) batch(window int) models.Batch {
	var mb models.Batch
	for range b.DecodeSeqs {
		mb.AddDecode(b.KVLen, window)
	}
	for range b.chunks() {
		mb.AddPrefill(b.PrefillTokens, b.PrefillContextTokens, window, !b.PrefillPartial)
	}
	return mb
}

// specBatch is the batch as speculative decoding prices it.
func (b *Batch) specBatch() sim.SpecStepBatch {
	return sim.SpecStepBatch{DecodeSeqs: b.DecodeSeqs, KVLen: b.KVLen, PrefillChunks: b.chunks(), PrefillTokens: b.PrefillTokens,
		PrefillContext: b.PrefillContextTokens, PrefillPartial: b.PrefillPartial}
}
