package api

import (
	"fmt"
	"regexp"

	"github.com/go-playground/validator/v10"

	"github.com/headroom-sim/headroom/models"
	"github.com/headroom-sim/headroom/sim/memory"
)

// Custom rules: their tags appear in validation errors.
const (
	tagTPDividesHeads      = "tp_divides_heads"
	tagWithinMaxModelLen   = "within_max_model_len"
	tagBatchedTokensGESeqs = "gte_max_num_seqs"
)

var catalogIDRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`)

// newValidator checks `binding` tags, the catalog_id rule and the
// cross-field rules of a capacity question. model looks a model up for the
// rules that depend on it; an unknown model is left to the handler (404).
func newValidator(model func(string) (*models.Model, error)) *validator.Validate {
	v := validator.New(validator.WithRequiredStructEnabled())
	v.SetTagName("binding")
	v.RegisterTagNameFunc(jsonName)
	_ = v.RegisterValidation("catalog_id", func(fl validator.FieldLevel) bool {
		return catalogIDRE.MatchString(fl.Field().String())
	})
	v.RegisterStructValidation(func(sl validator.StructLevel) {
		checkCapacity(sl, sl.Current().Interface().(CapacityRequest), model)
	}, CapacityRequest{})
	return v
}

// checkCapacity applies the rules that span fields: max_num_batched_tokens
// >= max_num_seqs, tp divides the model's heads, and prompt + output tokens
// fit max_model_len (the model's max positions when not given).
func checkCapacity(sl validator.StructLevel, r CapacityRequest, model func(string) (*models.Model, error)) {
	e := r.Engine
	if e.MaxNumBatchedTokens > 0 && e.MaxNumSeqs > 0 && e.MaxNumBatchedTokens < e.MaxNumSeqs {
		sl.ReportError(e.MaxNumBatchedTokens, "engine.max_num_batched_tokens", "MaxNumBatchedTokens", tagBatchedTokensGESeqs, fmt.Sprint(e.MaxNumSeqs))
	}
	if r.Model == "" {
		return
	}
	m, err := model(r.Model)
	if err != nil {
		return
	}
	if tp := r.TP; tp > 0 && !memory.ValidTP(memory.Setup{Model: m}, tp) {
		sl.ReportError(tp, "tp", "TP", tagTPDividesHeads, fmt.Sprintf("%s has %d attention heads and %d KV heads", m.ID, m.NumHeads, m.NumKVHeads))
	}
	maxLen := e.MaxModelLen
	if maxLen == 0 {
		maxLen = m.MaxPositions
	}
	if n := r.PromptTokens + r.OutputTokens; maxLen > 0 && n > maxLen {
		sl.ReportError(n, "prompt_tokens", "PromptTokens", tagWithinMaxModelLen, fmt.Sprintf("%d + %d > %d", r.PromptTokens, r.OutputTokens, maxLen))
	}
}
