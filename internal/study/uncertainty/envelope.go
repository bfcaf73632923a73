package uncertainty

import (
	"fmt"
	"slices"

	"github.com/headroom-sim/headroom/sim"
)

// Outside lists what of regime r no fitted run covered: a feature value
// no run had (a model class never measured, a layout never run), a GPU no
// run used, a mean prompt or output longer than every run's.
func (m *Model) Outside(r Regime) []sim.OutsideFeature {
	var out []sim.OutsideFeature
	for _, f := range Features {
		v := r.Value(f)
		if !slices.Contains(m.Envelope.Values[f], v) {
			out = append(out, sim.OutsideFeature{Feature: f, Value: v,
				Reason: fmt.Sprintf("no validation run had %s %s (they had %v)", f, v, m.Envelope.Values[f])})
		}
	}
	if !slices.Contains(m.Envelope.GPUs, r.GPU) {
		why := "its kernels were measured"
		if r.Kernels == "template" {
			why = "its step times scale another GPU's fitted kernels (no kernel table of its own)"
		}
		out = append(out, sim.OutsideFeature{Feature: "gpu", Value: r.GPU,
			Reason: fmt.Sprintf("no validation run used this GPU; %s", why)})
	}
	for _, l := range []struct {
		name      string
		got, most float64
	}{{"prompt_tokens", r.PromptTokens, m.Envelope.MaxPromptTokens}, {"output_tokens", r.OutputTokens, m.Envelope.MaxOutputTokens}} {
		if l.got > l.most {
			out = append(out, sim.OutsideFeature{Feature: l.name, Value: fmt.Sprintf("%.0f", l.got),
				Reason: fmt.Sprintf("a mean of %.0f tokens per request, past the longest validation run's %.0f", l.got, l.most)})
		}
	}
	return out
}

// WidenRatio is what the bands' spread is multiplied by for n features
// outside the envelope.
func (m *Model) WidenRatio(n int) float64 { return 1 + m.WidenPerOutside*float64(n) }
