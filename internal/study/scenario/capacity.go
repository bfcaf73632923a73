package scenario

import (
	"errors"
	"fmt"
	"math"

	"github.com/headroom-sim/headroom/catalogs"
	"github.com/headroom-sim/headroom/hardware"
	"github.com/headroom-sim/headroom/sim/engine"
	"github.com/headroom-sim/headroom/sim/memory"
)

// CapacitySpec is the input of a capacity question (`headroom capacity`,
// POST /v1/capacity). Field names follow the scenario's.
type CapacitySpec struct {
	Model        string        `yaml:"model" json:"model"`
	GPU          string        `yaml:"gpu" json:"gpu"`
	TP           int           `yaml:"tp" json:"tp"`
	WeightsDType string        `yaml:"weights_dtype" json:"weights_dtype"`
	KVCacheDType string        `yaml:"kv_cache_dtype" json:"kv_cache_dtype"`
	Engine       engine.Config `yaml:"engine" json:"engine"`
	// PromptTokens and OutputTokens shape the max-concurrency answer
	// (both 0: vLLM's figure for max_model_len requests).
	PromptTokens  int     `yaml:"prompt_tokens" json:"prompt_tokens"`
	OutputTokens  int     `yaml:"output_tokens" json:"output_tokens"`
	Fragmentation float64 `yaml:"fragmentation" json:"fragmentation"`
	// NonTorchAdjustGiB adds to the non-torch memory term: the memory part
	// of a calibration profile (fitted to a logged block count).
	NonTorchAdjustGiB float64 `yaml:"non_torch_adjust_gib,omitempty" json:"non_torch_adjust_gib,omitempty"`
}

// DefaultCapacity is the capacity question with vLLM's defaults.
func DefaultCapacity() CapacitySpec {
	return CapacitySpec{Model: "llama-3.1-8b", GPU: "h100-sxm", TP: 1, KVCacheDType: "auto", Engine: engine.Defaults()}
}

// ResolveCapacity looks the ids up and fills the defaults. Errors are
// *FieldError naming the field (engine settings as "engine.<name>"), or
// wrap catalogs.ErrUnknownModel/ErrUnknownGPU.
func ResolveCapacity(cat *catalogs.Catalog, c CapacitySpec) (memory.Setup, error) {
	m, err := cat.Model(c.Model)
	if err != nil {
		return memory.Setup{}, fmt.Errorf("model: %w", err)
	}
	g, err := cat.GPU(c.GPU)
	if err != nil {
		return memory.Setup{}, fmt.Errorf("gpu: %w", err)
	}
	prec, err := precision(m, c.WeightsDType, c.KVCacheDType)
	if err != nil {
		return memory.Setup{}, err
	}
	if c.TP < 1 || c.TP > 1024 {
		return memory.Setup{}, &FieldError{Field: "tp", Reason: fmt.Sprintf("%d is not in [1, 1024]", c.TP)}
	}
	if c.PromptTokens < 0 || c.OutputTokens < 0 {
		return memory.Setup{}, &FieldError{Field: "prompt_tokens", Reason: "prompt_tokens and output_tokens must be >= 0"}
	}
	eng, err := c.Engine.Resolve(m, g)
	if err != nil {
		var fe *FieldError
		if errors.As(err, &fe) {
			return memory.Setup{}, &FieldError{Field: "engine." + fe.Field, Reason: fe.Reason}
		}
		return memory.Setup{}, err
	}
	if math.IsNaN(c.NonTorchAdjustGiB) || math.Abs(c.NonTorchAdjustGiB) > 64 {
		return memory.Setup{}, &FieldError{Field: "non_torch_adjust_gib", Reason: "must be within ±64 GiB"}
	}
	s := memory.Setup{Model: m, GPU: g, Precision: prec, TP: c.TP, Engine: eng, ExtraNonTorchBytes: c.NonTorchAdjustGiB * hardware.GiB}
	if !memory.ValidTP(s, c.TP) {
		return s, &FieldError{Field: "tp", Reason: fmt.Sprintf("%d does not divide %s's %d attention heads (or its %d KV heads) evenly", c.TP, m.ID, m.NumHeads, m.NumKVHeads)}
	}
	draft, err := resolveDrafter(Env{Catalog: cat}, &eng, m, prec, c.TP)
	if err != nil {
		return s, err
	}
	if draft != nil {
		s.DraftWeightsBytes, s.DraftKVBytesPerToken = draft.WeightBytesPerGPU(c.TP, 1), draft.KVBytesPerToken(c.TP)
	}
	return s, nil
}

// Capacity answers the capacity question.
func Capacity(cat *catalogs.Catalog, c CapacitySpec) (memory.Report, error) {
	s, err := ResolveCapacity(cat, c)
	if err != nil {
		return memory.Report{}, err
	}
	return memory.Analyze(s, c.PromptTokens, c.OutputTokens, c.Fragmentation)
}
