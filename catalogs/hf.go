package catalogs

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"sort"
	"strings"

	"github.com/headroom-sim/headroom/hardware"
	"github.com/headroom-sim/headroom/models"
)

// maxHFConfigBytes bounds a config.json (real ones are a few KiB).
const maxHFConfigBytes = 4 << 20

// maxHFInt bounds every integer of a config.json; real values are far
// smaller, and the bound keeps the derived products inside int64.
const maxHFInt = 1 << 30

// ImportHF builds a Model with id id from a Hugging Face config.json read
// from r; name (the file name) prefixes every error. It returns the config
// keys it ignored (known keys that do not change the shape: rope_theta,
// token ids, …), sorted. A key it does not know is an error naming it: the
// importer cannot tell whether it changes the shape. ImportHFLenient accepts
// such keys instead.
//
// Multimodal wrappers (Llava, Gemma 3, Mistral 3 …) keep the language model
// under text_config; it is read first, the top level second.
//
// The quantization_config of pre-quantised checkpoints is read into
// Model.Quantization (see hf_quant.go): fp8 (per-tensor or block),
// fbgemm_fp8, mxfp4, awq, gptq, compressed-tensors and NVIDIA ModelOpt.
func ImportHF(name string, r io.Reader, id string) (*models.Model, []string, error) {
	return ImportHFWith(name, r, HFOptions{ID: id})
}

// ImportHFLenient is ImportHF, except that unknown config keys are returned
// with the ignored ones instead of failing the import.
func ImportHFLenient(name string, r io.Reader, id string) (*models.Model, []string, error) {
	return ImportHFWith(name, r, HFOptions{ID: id, Lenient: true})
}

// HFOptions are the settings of ImportHFWith.
type HFOptions struct {
	// ID is the catalog id of the imported model.
	ID string
	// Lenient ignores unknown keys (of config.json and of its
	// quantization_config) instead of failing.
	Lenient bool
	// QuantConfig, when not nil, is NVIDIA ModelOpt's hf_quant_config.json
	// of the same checkpoint, read beside config.json; QuantConfigName
	// names it in errors.
	QuantConfig     io.Reader
	QuantConfigName string
}

// ImportHFWith is ImportHF with options: lenient key checking, and
// ModelOpt's hf_quant_config.json as a second input.
func ImportHFWith(name string, r io.Reader, opts HFOptions) (*models.Model, []string, error) {
	var qf *hfQuantFile
	if opts.QuantConfig != nil {
		qname := opts.QuantConfigName
		if qname == "" {
			qname = "hf_quant_config.json"
		}
		var err error
		if qf, err = readHFQuantFile(qname, opts.QuantConfig, opts.Lenient); err != nil {
			return nil, nil, err
		}
	}
	return importHF(name, r, opts.ID, opts.Lenient, qf)
}

// hfLevel is one object of the config: text_config, or the top level.
type hfLevel struct {
	prefix string
	m      map[string]json.RawMessage
}

// hfConfig reads typed values from a config.json, looking in text_config
// first (when present) and the top level second.
type hfConfig struct {
	file   string
	levels []hfLevel
	// fields maps a models.Model field name (as Validate names it) to the
	// config key it was read from, for error messages.
	fields map[string]string
}

func (c *hfConfig) errf(field, format string, args ...any) error {
	return &FileError{File: c.file, Field: field, Err: fmt.Errorf(format, args...)}
}

func isJSONNull(r json.RawMessage) bool { return string(bytes.TrimSpace(r)) == "null" }

// lookup finds key's value, skipping nulls; field is the key as errors name
// it (text_config.hidden_size when it is or should be nested).
func (c *hfConfig) lookup(key string) (raw json.RawMessage, field string, ok bool) {
	for _, l := range c.levels {
		if r, found := l.m[key]; found && !isJSONNull(r) {
			return r, l.prefix + key, true
		}
	}
	return nil, c.levels[0].prefix + key, false
}

func jsonKind(v any) string {
	switch v.(type) {
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case json.Number:
		return "a number"
	case []any:
		return "a list"
	case map[string]any:
		return "an object"
	}
	return "null"
}

func decodeJSONValue(raw json.RawMessage) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	err := dec.Decode(&v)
	return v, err
}

// toInt converts a decoded JSON value to a non-negative integer; integral
// floats (4096.0) are accepted.
func toInt(v any) (int, string) {
	n, ok := v.(json.Number)
	if !ok {
		return 0, "must be an integer, not " + jsonKind(v)
	}
	i, err := n.Int64()
	if err != nil {
		f, ferr := n.Float64()
		if ferr != nil || f != math.Trunc(f) || math.Abs(f) > maxHFInt {
			return 0, fmt.Sprintf("must be an integer, not %s", n)
		}
		i = int64(f)
	}
	if i < 0 || i > maxHFInt {
		return 0, fmt.Sprintf("%d is out of range (0 to %d)", i, maxHFInt)
	}
	return int(i), ""
}

// int reads an optional non-negative integer; ok is false when absent or
// null.
func (c *hfConfig) int(key string) (v int, ok bool, err error) {
	raw, field, ok := c.lookup(key)
	if !ok {
		return 0, false, nil
	}
	x, err := decodeJSONValue(raw)
	if err != nil {
		return 0, true, c.errf(field, "%v", err)
	}
	v, msg := toInt(x)
	if msg != "" {
		return 0, true, c.errf(field, "%s", msg)
	}
	return v, true, nil
}

// required reads an integer that must be present and > 0.
func (c *hfConfig) required(key string) (int, error) {
	v, ok, err := c.int(key)
	if err != nil {
		return 0, err
	}
	_, field, _ := c.lookup(key)
	if !ok {
		return 0, c.errf(field, "is required")
	}
	if v <= 0 {
		return 0, c.errf(field, "must be > 0")
	}
	return v, nil
}

func (c *hfConfig) bool(key string) (v, ok bool, err error) {
	raw, field, ok := c.lookup(key)
	if !ok {
		return false, false, nil
	}
	x, err := decodeJSONValue(raw)
	if err != nil {
		return false, true, c.errf(field, "%v", err)
	}
	b, isBool := x.(bool)
	if !isBool {
		return false, true, c.errf(field, "must be a boolean, not %s", jsonKind(x))
	}
	return b, true, nil
}

func (c *hfConfig) string(key string) (v string, ok bool, err error) {
	raw, field, ok := c.lookup(key)
	if !ok {
		return "", false, nil
	}
	x, err := decodeJSONValue(raw)
	if err != nil {
		return "", true, c.errf(field, "%v", err)
	}
	s, isStr := x.(string)
	if !isStr {
		return "", true, c.errf(field, "must be a string, not %s", jsonKind(x))
	}
	return s, true, nil
}

func (c *hfConfig) strings(key string) (v []string, ok bool, err error) {
	raw, field, ok := c.lookup(key)
	if !ok {
		return nil, false, nil
	}
	x, err := decodeJSONValue(raw)
	if err != nil {
		return nil, true, c.errf(field, "%v", err)
	}
	list, isList := x.([]any)
	if !isList {
		return nil, true, c.errf(field, "must be a list of strings, not %s", jsonKind(x))
	}
	out := make([]string, len(list))
	for i, e := range list {
		s, isStr := e.(string)
		if !isStr {
			return nil, true, c.errf(fmt.Sprintf("%s[%d]", field, i), "must be a string, not %s", jsonKind(e))
		}
		out[i] = s
	}
	return out, true, nil
}

func (c *hfConfig) object(key string) (v map[string]any, field string, ok bool, err error) {
	raw, field, ok := c.lookup(key)
	if !ok {
		return nil, field, false, nil
	}
	x, err := decodeJSONValue(raw)
	if err != nil {
		return nil, field, true, c.errf(field, "%v", err)
	}
	obj, isObj := x.(map[string]any)
	if !isObj {
		return nil, field, true, c.errf(field, "must be an object, not %s", jsonKind(x))
	}
	return obj, field, true, nil
}

// firstInt reads the first present of several spellings of one value.
func (c *hfConfig) firstInt(keys ...string) (v int, key string, err error) {
	for _, k := range keys {
		v, ok, err := c.int(k)
		if err != nil || ok {
			return v, k, err
		}
	}
	return 0, "", nil
}

// checkKeys sorts every key of every level into used, ignored and unknown.
func (c *hfConfig) checkKeys(lenient bool) ([]string, error) {
	var ignored []string
	for _, l := range c.levels {
		keys := make([]string, 0, len(l.m))
		for k := range l.m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			switch {
			case hfUsedKeys[k]:
			case hfIgnoredKeys[k]:
				ignored = append(ignored, l.prefix+k)
			case lenient:
				ignored = append(ignored, l.prefix+k)
			default:
				return nil, c.errf(l.prefix+k, "unknown config.json key (use the lenient import to ignore it)")
			}
		}
	}
	sort.Strings(ignored)
	return ignored, nil
}

func importHF(name string, r io.Reader, id string, lenient bool, qf *hfQuantFile) (*models.Model, []string, error) {
	data, err := io.ReadAll(io.LimitReader(r, maxHFConfigBytes+1))
	if err != nil {
		return nil, nil, &FileError{File: name, Err: err}
	}
	if len(data) > maxHFConfigBytes {
		return nil, nil, &FileError{File: name, Err: fmt.Errorf("larger than %d bytes", maxHFConfigBytes)}
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(data, &top); err != nil {
		return nil, nil, &FileError{File: name, Err: fmt.Errorf("not a JSON object: %v", err)}
	}
	if top == nil {
		return nil, nil, &FileError{File: name, Err: errors.New("not a JSON object: null")}
	}
	c := &hfConfig{file: name, levels: []hfLevel{{m: top}}, fields: map[string]string{}}
	if raw, ok := top["text_config"]; ok && !isJSONNull(raw) {
		var text map[string]json.RawMessage
		if err := json.Unmarshal(raw, &text); err != nil || text == nil {
			return nil, nil, c.errf("text_config", "must be an object")
		}
		c.levels = []hfLevel{{prefix: "text_config.", m: text}, {m: top}}
	}
	ignored, err := c.checkKeys(lenient)
	if err != nil {
		return nil, nil, err
	}
	m, err := c.model(id)
	if err != nil {
		return nil, nil, err
	}
	quantIgnored, err := c.readQuantization(m, qf, lenient)
	if err != nil {
		return nil, nil, err
	}
	if len(quantIgnored) > 0 {
		ignored = append(ignored, quantIgnored...)
		sort.Strings(ignored)
	}
	m.Source = name
	if err := m.Validate(); err != nil {
		var fe *hardware.FieldError
		if errors.As(err, &fe) {
			field := fe.Field
			if k, ok := c.fields[field]; ok {
				field = k
			}
			return nil, nil, c.errf(field, "%s", fe.Reason)
		}
		return nil, nil, &FileError{File: name, Err: err}
	}
	return m, ignored, nil
}

// model reads the shape. Each step names the config keys it reads.
func (c *hfConfig) model(id string) (*models.Model, error) {
	m := &models.Model{ID: id, Name: id}
	var err error
	req := []struct {
		key string
		dst *int
	}{
		{"num_hidden_layers", &m.NumLayers},
		{"hidden_size", &m.HiddenSize},
		{"num_attention_heads", &m.NumHeads},
		{"vocab_size", &m.VocabSize},
		{"max_position_embeddings", &m.MaxPositions},
	}
	for _, r := range req {
		if *r.dst, err = c.required(r.key); err != nil {
			return nil, err
		}
		_, c.fields[r.key], _ = c.lookup(r.key)
	}

	archs, _, err := c.strings("architectures")
	if err != nil {
		return nil, err
	}
	if len(archs) > 0 {
		m.Architecture = archs[0]
	}
	modelType, _, err := c.string("model_type")
	if err != nil {
		return nil, err
	}
	family := strings.ToLower(modelType + " " + m.Architecture)

	if err := c.readDType(m); err != nil {
		return nil, err
	}
	if err := c.readAttention(m, family); err != nil {
		return nil, err
	}
	if m.IntermediateSize, _, err = c.int("intermediate_size"); err != nil {
		return nil, err
	}
	_, c.fields["intermediate_size"], _ = c.lookup("intermediate_size")
	if err := c.readMoE(m, family); err != nil {
		return nil, err
	}
	if err := c.readMLA(m); err != nil {
		return nil, err
	}
	if err := c.readSlidingWindow(m, family); err != nil {
		return nil, err
	}
	if err := c.readAttentionTypes(m); err != nil {
		return nil, err
	}
	if m.NumNextNPredictLayers, _, err = c.int("num_nextn_predict_layers"); err != nil {
		return nil, err
	}
	_, c.fields["num_nextn_predict_layers"], _ = c.lookup("num_nextn_predict_layers")
	return m, nil
}

// readDType: torch_dtype, or dtype (transformers ≥ 4.56); bf16 when absent
// (gpt-oss's config.json has neither; its unquantised weights are bf16).
func (c *hfConfig) readDType(m *models.Model) error {
	m.DType = hardware.BF16
	for _, key := range []string{"torch_dtype", "dtype"} {
		s, ok, err := c.string(key)
		if err != nil {
			return err
		}
		if !ok {
			continue
		}
		dt, perr := hardware.ParseDType(s)
		if perr != nil {
			_, field, _ := c.lookup(key)
			return c.errf(field, "%v", perr)
		}
		m.DType = dt
		return nil
	}
	return nil
}

// readAttention: num_key_value_heads (default: num_attention_heads),
// head_dim (default hidden_size / num_attention_heads), attention_bias
// (default true for Qwen2, whose configs omit it), tie_word_embeddings
// (default false, true for Gemma), partial_rotary_factor.
func (c *hfConfig) readAttention(m *models.Model, family string) error {
	kv, ok, err := c.int("num_key_value_heads")
	if err != nil {
		return err
	}
	m.NumKVHeads = m.NumHeads
	if ok {
		m.NumKVHeads = kv
	}
	_, c.fields["num_key_value_heads"], _ = c.lookup("num_key_value_heads")

	hd, ok, err := c.int("head_dim")
	if err != nil {
		return err
	}
	_, c.fields["head_dim"], _ = c.lookup("head_dim")
	_, _, mla := c.lookup("kv_lora_rank")
	switch {
	case ok:
		m.HeadDim = hd
	case m.HiddenSize%m.NumHeads != 0 && !mla:
		return c.errf(c.fields["head_dim"], "is required: hidden_size %d is not a multiple of num_attention_heads %d", m.HiddenSize, m.NumHeads)
	default:
		// MLA models have no single head_dim; the mla fields govern.
		m.HeadDim = m.HiddenSize / m.NumHeads
	}

	bias, ok, err := c.bool("attention_bias")
	if err != nil {
		return err
	}
	m.AttentionBias = bias
	if !ok && strings.Contains(family, "qwen2") {
		m.AttentionBias = true // Qwen2/2.5 q, k, v projections have biases
	}

	tie, ok, err := c.bool("tie_word_embeddings")
	if err != nil {
		return err
	}
	m.TieWordEmbeddings = tie
	if !ok && strings.Contains(family, "gemma") {
		m.TieWordEmbeddings = true // Gemma configs default to tied embeddings
	}

	factor, field, ok, err := c.partialRotaryFactor()
	if err != nil {
		return err
	}
	if ok {
		if !(factor > 0 && factor <= 1) {
			return c.errf(field, "must be in (0, 1], not %v", factor)
		}
		if factor < 1 {
			m.RotaryDim = int(math.Round(factor * float64(m.HeadDim)))
			if m.RotaryDim == 0 {
				return c.errf(field, "rotates no dimension of a %d-wide head", m.HeadDim)
			}
		}
	}
	// rotary_dim (MiniMax-M2: 64 of 128) states the rotated width directly.
	rd, rdSet, err := c.int("rotary_dim")
	if err != nil || !rdSet {
		return err
	}
	_, rdField, _ := c.lookup("rotary_dim")
	if rd <= 0 || rd > m.HeadDim {
		return c.errf(rdField, "must be between 1 and head_dim (%d), not %d", m.HeadDim, rd)
	}
	if fromFactor := cmp.Or(m.RotaryDim, m.HeadDim); ok && rd != fromFactor {
		return c.errf(rdField, "%d disagrees with %s %v (%d of %d dims)", rd, field, factor, fromFactor, m.HeadDim)
	}
	m.RotaryDim = 0
	if rd < m.HeadDim {
		m.RotaryDim = rd
	}
	return nil
}

// readAttentionTypes: MiniMax's attn_type_list gives each layer's attention
// kind, 1 for softmax attention and 0 for lightning (linear) attention
// (MiniMax-Text-01 mixes them); only softmax layers are modelled.
func (c *hfConfig) readAttentionTypes(m *models.Model) error {
	raw, field, ok := c.lookup("attn_type_list")
	if !ok {
		return nil
	}
	x, err := decodeJSONValue(raw)
	if err != nil {
		return c.errf(field, "%v", err)
	}
	list, isList := x.([]any)
	if !isList {
		return c.errf(field, "must be a list of 0 and 1, not %s", jsonKind(x))
	}
	if len(list) != m.NumLayers {
		return c.errf(field, "has %d entries for %d layers", len(list), m.NumLayers)
	}
	for i, e := range list {
		v, msg := toInt(e)
		switch {
		case msg != "":
			return c.errf(fmt.Sprintf("%s[%d]", field, i), "%s", msg)
		case v == 0:
			return c.errf(fmt.Sprintf("%s[%d]", field, i), "layer %d uses lightning (linear) attention, which Headroom does not model", i)
		case v != 1:
			return c.errf(fmt.Sprintf("%s[%d]", field, i), "unknown attention type %d (want 1, softmax attention)", v)
		}
	}
	return nil
}

// partialRotaryFactor reads partial_rotary_factor, at the top of the config
// or inside rope_parameters (transformers ≥ 5).
func (c *hfConfig) partialRotaryFactor() (float64, string, bool, error) {
	raw, field, ok := c.lookup("partial_rotary_factor")
	var x any
	if ok {
		var err error
		if x, err = decodeJSONValue(raw); err != nil {
			return 0, field, true, c.errf(field, "%v", err)
		}
	} else {
		params, pfield, pok, err := c.object("rope_parameters")
		if err != nil || !pok {
			return 0, field, false, err
		}
		if x, ok = params["partial_rotary_factor"]; !ok || x == nil {
			return 0, field, false, nil
		}
		field = pfield + ".partial_rotary_factor"
	}
	n, isNum := x.(json.Number)
	if !isNum {
		return 0, field, true, c.errf(field, "must be a number, not %s", jsonKind(x))
	}
	f, err := n.Float64()
	if err != nil {
		return 0, field, true, c.errf(field, "must be a number, not %s", n)
	}
	return f, field, true, nil
}

// readMoE: routed experts under num_local_experts (Mixtral, gpt-oss,
// PhiMoE), num_experts (Qwen MoE) or n_routed_experts (DeepSeek); top-k
// num_experts_per_tok (experts_per_token in gpt-oss); expert width
// moe_intermediate_size, else intermediate_size (Mixtral, gpt-oss); shared
// experts n_shared_experts (DeepSeek) or one of
// shared_expert_intermediate_size (Qwen2-MoE) or shared_intermediate_size
// (MiniMax; 0 means none); first_k_dense_replace dense
// layers (DeepSeek). gpt-oss experts carry biases.
func (c *hfConfig) readMoE(m *models.Model, family string) error {
	experts, expertsKey, err := c.firstInt("num_local_experts", "num_experts", "n_routed_experts")
	if err != nil || experts == 0 {
		return err
	}
	e := &models.MoE{NumExperts: experts}
	_, c.fields["moe.num_experts"], _ = c.lookup(expertsKey)
	topk, topkKey, err := c.firstInt("num_experts_per_tok", "experts_per_token")
	if err != nil {
		return err
	}
	if topkKey == "" {
		_, field, _ := c.lookup("num_experts_per_tok")
		return c.errf(field, "is required for a mixture-of-experts model (%s is %d)", expertsKey, experts)
	}
	e.NumExpertsPerTok = topk
	_, c.fields["moe.num_experts_per_tok"], _ = c.lookup(topkKey)

	width, widthKey, err := c.firstInt("moe_intermediate_size", "intermediate_size")
	if err != nil {
		return err
	}
	if widthKey == "" {
		_, field, _ := c.lookup("moe_intermediate_size")
		return c.errf(field, "is required for a mixture-of-experts model")
	}
	e.ExpertIntermediateSize = width
	_, c.fields["moe.moe_intermediate_size"], _ = c.lookup(widthKey)

	if e.NumSharedExperts, _, err = c.int("n_shared_experts"); err != nil {
		return err
	}
	sharedWidth, _, err := c.firstInt("shared_expert_intermediate_size", "shared_intermediate_size")
	if err != nil {
		return err
	}
	if sharedWidth > 0 {
		e.SharedExpertIntermediateSize = sharedWidth
		if e.NumSharedExperts == 0 {
			e.NumSharedExperts = 1
		}
	}
	_, c.fields["moe.num_shared_experts"], _ = c.lookup("n_shared_experts")
	if e.FirstDenseLayers, _, err = c.int("first_k_dense_replace"); err != nil {
		return err
	}
	_, c.fields["moe.first_dense_layers"], _ = c.lookup("first_k_dense_replace")
	e.ExpertBias = strings.Contains(family, "gpt_oss") || strings.Contains(family, "gptoss")
	m.MoE = e
	return nil
}

// readMLA: multi-head latent attention when kv_lora_rank is set
// (q_lora_rank null means plain query projections).
func (c *hfConfig) readMLA(m *models.Model) error {
	kvRank, ok, err := c.int("kv_lora_rank")
	if err != nil || !ok {
		return err
	}
	a := &models.MLA{KVLoRARank: kvRank}
	if a.QLoRARank, _, err = c.int("q_lora_rank"); err != nil {
		return err
	}
	for _, f := range []struct {
		key string
		dst *int
	}{
		{"qk_nope_head_dim", &a.QKNopeHeadDim},
		{"qk_rope_head_dim", &a.QKRopeHeadDim},
		{"v_head_dim", &a.VHeadDim},
	} {
		if *f.dst, err = c.required(f.key); err != nil {
			return err
		}
		_, c.fields["mla."+f.key], _ = c.lookup(f.key)
	}
	_, c.fields["mla.kv_lora_rank"], _ = c.lookup("kv_lora_rank")
	_, c.fields["mla.q_lora_rank"], _ = c.lookup("q_lora_rank")
	m.MLA = a
	return nil
}

// readSlidingWindow: sliding_window (null: none), unless use_sliding_window
// is false (Qwen2/2.5/3). Which layers use it: layer_types (count of
// "sliding_attention"), else sliding_window_pattern (Gemma 3: every p-th
// layer is global), else Gemma 2's alternation (even layers local), else
// Qwen2's max_window_layers (layers from that index up are windowed), else
// every layer (Mistral).
func (c *hfConfig) readSlidingWindow(m *models.Model, family string) error {
	window, _, err := c.int("sliding_window")
	if err != nil {
		return err
	}
	_, c.fields["sliding_window"], _ = c.lookup("sliding_window")
	use, useSet, err := c.bool("use_sliding_window")
	if err != nil {
		return err
	}
	if useSet && !use {
		window = 0
	}
	L := m.NumLayers
	sliding := L
	types, typesSet, err := c.strings("layer_types")
	if err != nil {
		return err
	}
	_, typesField, _ := c.lookup("layer_types")
	c.fields["sliding_window_layers"] = typesField
	pattern, patternSet, err := c.int("sliding_window_pattern")
	if err != nil {
		return err
	}
	maxWindowLayers, mwlSet, err := c.int("max_window_layers")
	if err != nil {
		return err
	}
	switch {
	case typesSet:
		if len(types) != L {
			return c.errf(typesField, "has %d entries for %d layers", len(types), L)
		}
		sliding = 0
		for i, t := range types {
			switch t {
			case "sliding_attention":
				sliding++
			case "full_attention":
			default:
				return c.errf(fmt.Sprintf("%s[%d]", typesField, i), "unsupported layer type %q (want full_attention or sliding_attention)", t)
			}
		}
		if sliding > 0 && window == 0 && !(useSet && !use) {
			return c.errf(c.fields["sliding_window"], "is required: layer_types has %d sliding_attention layers", sliding)
		}
	case patternSet && pattern > 0:
		sliding = L - L/pattern
	case strings.Contains(family, "gemma2"):
		sliding = (L + 1) / 2
	case useSet && use && mwlSet:
		sliding = max(L-maxWindowLayers, 0)
	}
	if window == 0 || sliding == 0 {
		return nil
	}
	m.SlidingWindow = window
	if sliding < L {
		m.SlidingWindowLayers = sliding
	}
	return nil
}
