package kernels

import (
	"fmt"
	"math"
	"sort"

	"github.com/headroom-sim/headroom/hardware"
	"github.com/headroom-sim/headroom/models"
	"github.com/headroom-sim/headroom/sim/steptime"
)

// SplitwiseCase is one configuration of Splitwise's perf_model.csv with the
// medians of its repetitions.
type SplitwiseCase struct {
	Model, Hardware string
	TP, Batch       int
	Prompt, Output  int
	Runs            int
	// Measured medians, in seconds. DecodeSteps is (e2e − prompt)/token:
	// how many tokens the batch decoded (fewer than Output − 1 where the
	// generation stopped early).
	Prompt1, Token, E2E float64
	DecodeSteps         float64
}

// SplitwiseCases groups the rows by configuration.
func SplitwiseCases(rows []SplitwiseRow) []SplitwiseCase {
	type key struct {
		model, hw                 string
		tp, batch, prompt, output int
	}
	groups := map[key][]SplitwiseRow{}
	var keys []key
	for _, r := range rows {
		k := key{r.Model, r.Hardware, r.TP, r.BatchSize, r.PromptTokens, r.OutputTokens}
		if groups[k] == nil {
			keys = append(keys, k)
		}
		groups[k] = append(groups[k], r)
	}
	sort.Slice(keys, func(i, j int) bool {
		a, b := keys[i], keys[j]
		switch {
		case a.model != b.model:
			return a.model < b.model
		case a.hw != b.hw:
			return a.hw < b.hw
		case a.tp != b.tp:
			return a.tp < b.tp
		case a.batch != b.batch:
			return a.batch < b.batch
		case a.prompt != b.prompt:
			return a.prompt < b.prompt
		}
		return a.output < b.output
	})
	out := make([]SplitwiseCase, 0, len(keys))
	for _, k := range keys {
		g := groups[k]
		var p, t, e, d []float64
		for _, r := range g {
			p = append(p, r.PromptMS*1e-3)
			t = append(t, r.TokenMS*1e-3)
			e = append(e, r.E2EMS*1e-3)
			d = append(d, r.DecodedTokens())
		}
		out = append(out, SplitwiseCase{
			Model: k.model, Hardware: k.hw, TP: k.tp, Batch: k.batch, Prompt: k.prompt, Output: k.output,
			Runs: len(g), Prompt1: quantile(p, 0.5), Token: quantile(t, 0.5), E2E: quantile(e, 0.5),
			DecodeSteps: math.Max(1, math.Round(quantile(d, 0.5))),
		})
	}
	return out
}

// SplitwiseModels are the shapes of Splitwise's two models. Llama-2-70B is
// the catalog entry's shape; BLOOM-176B (bigscience/bloom config.json:
// n_layer 70, hidden 14336, n_head 112, vocab 250880, a GELU MLP of 4·H)
// is given here with its MLP as a gated one of the same FLOPs and weights
// (intermediate 2/3 × 4·H).
func SplitwiseModels(llama70b *models.Model) map[string]*models.Model {
	bloom := &models.Model{
		ID: "bloom-176b", Name: "BLOOM 176B", HFID: "bigscience/bloom", Architecture: "BloomForCausalLM",
		DType: hardware.BF16, NumLayers: 70, HiddenSize: 14336, IntermediateSize: 4 * 14336 * 2 / 3,
		NumHeads: 112, NumKVHeads: 112, HeadDim: 128, VocabSize: 250880, MaxPositions: 8192,
		TieWordEmbeddings: true,
	}
	return map[string]*models.Model{"llama2-70b": llama70b, "bloom-176b": bloom}
}

// SplitwisePrediction is the model's view of one case, in seconds.
type SplitwisePrediction struct {
	// Prompt is the prefill step of the whole batch; Token the mean decode
	// step over the decoded tokens; E2E = Prompt + DecodeSteps × Token.
	// The *GPU fields leave out the CPU overhead.
	Prompt, Token, E2E          float64
	PromptGPU, TokenGPU, E2EGPU float64
}

// PredictSplitwise predicts a case on GPU g with profile prof. The decode
// step is evaluated at the mean context P + (D+1)/2 over the D decoded
// tokens (every term of the step is linear in the context, so this equals
// the mean step).
func PredictSplitwise(c SplitwiseCase, m *models.Model, g *hardware.GPU, prof steptime.Profile) (SplitwisePrediction, error) {
	var out SplitwisePrediction
	sm, err := steptime.New(m, g, m.DefaultPrecision(), c.TP, prof, false)
	if err != nil {
		return out, fmt.Errorf("%s on %s TP%d: %w", m.ID, g.ID, c.TP, err)
	}
	var b models.Batch
	for range c.Batch {
		b.AddPrefill(c.Prompt, 0, m.SlidingWindow, true)
	}
	pre := sm.Predict(&b)
	b.Reset()
	ctx := c.Prompt + int(math.Round((c.DecodeSteps+1)/2))
	for range c.Batch {
		b.AddDecode(ctx, m.SlidingWindow)
	}
	dec := sm.Predict(&b)
	out.Prompt, out.PromptGPU = pre.Total, pre.GPU
	out.Token, out.TokenGPU = dec.Total, dec.GPU
	out.E2E = out.Prompt + c.DecodeSteps*out.Token
	out.E2EGPU = out.PromptGPU + c.DecodeSteps*out.TokenGPU
	return out, nil
}
