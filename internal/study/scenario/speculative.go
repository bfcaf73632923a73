package scenario

import (
	"fmt"

	"github.com/headroom-sim/headroom/models"
	"github.com/headroom-sim/headroom/sim"
	"github.com/headroom-sim/headroom/sim/engine"
	"github.com/headroom-sim/headroom/sim/memory"
)

// resolveDrafter builds the drafter of the engine's speculative decoding
// for target m served at prec on tp GPUs: an EAGLE or EAGLE-3 head shaped
// like the target's layers, the target's MTP layers, or the draft model
// from the catalog; nil when speculation is off or the n-gram proposer
// (no GPU model) drafts. eng is validated.
func resolveDrafter(env Env, eng *engine.Config, m *models.Model, prec models.Precision, tp int) (*models.Drafter, error) {
	sp := eng.Speculative
	if !sp.On() {
		return nil, nil
	}
	var d *models.Drafter
	switch sp.Method {
	case engine.SpecNgram:
		return nil, nil
	case engine.SpecEAGLE:
		d = models.EAGLEHead(m, prec)
	case engine.SpecEAGLE3:
		d = models.EAGLE3Head(m, prec)
	case engine.SpecMTP:
		d = models.MTPDrafter(m, prec) // the engine checked m has MTP layers
	default:
		dm, err := env.Catalog.Model(sp.DraftModel)
		if err != nil {
			return nil, &FieldError{Field: "engine.speculative.draft_model", Reason: err.Error()}
		}
		if d, err = models.DraftModel(dm, m, prec); err != nil {
			return nil, &FieldError{Field: "engine.speculative.draft_model", Reason: err.Error()}
		}
		if !memory.ValidTP(memory.Setup{Model: dm, Precision: d.Precision}, tp) {
			return nil, &FieldError{Field: "engine.speculative.draft_model", Reason: fmt.Sprintf("tp %d does not divide %s's %d attention heads (or its %d KV heads) evenly: vLLM runs the draft model at the target's tp", tp, dm.ID, dm.NumHeads, dm.NumKVHeads)}
		}
		if dm.MaxPositions < eng.MaxModelLen {
			return nil, &FieldError{Field: "engine.speculative.draft_model", Reason: fmt.Sprintf("%s holds %d positions, fewer than max_model_len %d", dm.ID, dm.MaxPositions, eng.MaxModelLen)}
		}
	}
	if d == nil {
		return nil, &FieldError{Field: "engine.speculative.method", Reason: fmt.Sprintf("%s has no drafter for %s", m.ID, sp.Method)}
	}
	return d, nil
}

// speculative is the run's speculative decoding: the engine's settings
// with the drafter, the acceptance model (the scenario's or the method's
// published default) and the note on extrapolated positions, if any; nil
// when off.
func speculative(eng *engine.Config, d *models.Drafter) (*sim.Speculative, string) {
	sp := eng.Speculative
	if !sp.On() {
		return nil, ""
	}
	acc := sp.Resolve()
	out := &sim.Speculative{Method: sp.Method, K: sp.NumSpeculativeTokens, PerPosition: acc.PerPosition, ProposalRate: acc.ProposalRate,
		Drafter: d, NgramNSPerToken: engine.NgramNSPerToken, AcceptanceSource: acc.Source, AcceptanceWarning: acc.Warning}
	if sp.UsesLookahead() {
		out.Lookahead = sp.NumSpeculativeTokens
	}
	if d != nil {
		out.HostSetupSec, out.HostPassSec = engine.ProposerHostUS*1e-6, engine.ProposerHostUS*1e-6
	}
	if acc.Extrapolated != "" {
		out.AcceptanceSource += "; " + acc.Extrapolated
	}
	return out, acc.Extrapolated
}
