package catalogs

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/headroom-sim/headroom/hardware"
	"github.com/headroom-sim/headroom/models"
)

// The quantisation formats of Hugging Face checkpoints, as config.json's
// quantization_config (and ModelOpt's hf_quant_config.json) write them:
//
//   - fp8 (transformers FineGrainedFP8, vLLM Fp8Config): fp8 e4m3 weights,
//     one scale per weight_block_size block when given (DeepSeek-V3,
//     Qwen3-FP8, MiniMax-M2: [128, 128]), else per tensor; activations
//     quantised dynamically or statically (activation_scheme).
//   - fbgemm_fp8: per-channel fp8 weights, dynamic per-token activations.
//   - mxfp4 (gpt-oss): MXFP4 routed experts; every other layer unquantised.
//   - awq, gptq (and their _marlin spellings): int4 or int8 weight-only, in
//     groups of group_size (-1: per channel).
//   - compressed-tensors (llm-compressor: Red Hat and Neural Magic
//     checkpoints, Kimi-K2): config_groups, each with targets and the
//     weights / input_activations arguments (num_bits, type, strategy,
//     group_size, block_structure, dynamic), an ignore list, kv_cache_scheme.
//   - modelopt (NVIDIA ModelOpt): quant_algo (FP8, NVFP4, …), group_size,
//     exclude_modules, kv_cache_quant_algo, flat or under "quantization",
//     in config.json and/or hf_quant_config.json; some exports also carry
//     compressed-tensors style config_groups, ignore and kv_cache_scheme.
//
// The module lists (modules_to_not_convert, ignore, exclude_modules) decide
// Quantization.AttentionUnquantized and ExpertsOnly.

// Limits on what one quantization config may hold.
const (
	maxQuantGroups   = 64   // config_groups entries
	maxQuantPatterns = 8192 // excluded-module patterns
	// maxRegexPatterns bounds the wildcard and regular-expression patterns,
	// which are matched against every examined layer.
	maxRegexPatterns = 256
	// maxLayersExamined bounds the layers whose module names are matched
	// against the exclusions; a deeper model has its first ones and its
	// last one examined (real models have at most a few hundred).
	maxLayersExamined = 512
)

// quantSpec is what a quantisation config says, before it is applied to
// the model.
type quantSpec struct {
	method    string
	scheme    models.QuantScheme
	block     []int
	group     int
	actScheme string
	kv        hardware.DType
	// excluded are the modules the checkpoint leaves unquantised.
	excluded []exclPattern
	// expertsOnly: the config quantises only the routed experts (mxfp4;
	// compressed-tensors groups that target the experts).
	expertsOnly bool
	// groupsFile and groupsField locate compressed-tensors config_groups.
	groupsFile, groupsField string
}

// Keys of each method's quantization_config.
var (
	quantKeysFP8      = setOf("quant_method", "fmt", "activation_scheme", "weight_block_size", "modules_to_not_convert", "ignored_layers", "dequantize")
	quantKeysFBGEMM   = setOf("quant_method", "activation_scale_ub", "modules_to_not_convert")
	quantKeysMXFP4    = setOf("quant_method", "modules_to_not_convert", "dequantize")
	quantKeysWeightQ  = setOf("quant_method", "bits", "group_size", "zero_point", "version", "modules_to_not_convert", "backend", "do_fuse", "fuse_max_seq_len", "exllama_config", "modules_to_fuse", "desc_act", "sym", "damp_percent", "damp_auto_increment", "true_sequential", "static_groups", "model_name_or_path", "model_file_base_name", "checkpoint_format", "meta", "dataset", "tokenizer", "use_exllama", "use_cuda_fp16", "batch_size", "pad_token_id", "cache_block_outputs", "modules_in_block_to_quantize", "module_name_preceding_first_block", "block_name_to_quantize", "max_input_length", "lm_head", "format", "pack_dtype", "mse", "act_group_aware", "hyb_act", "v2", "v2_alpha")
	quantKeysCT       = setOf("quant_method", "config_groups", "ignore", "kv_cache_scheme", "format", "quantization_status", "global_compression_ratio", "sparsity_config", "version", "transform_config", "provider")
	quantKeysCTGroup  = setOf("targets", "weights", "input_activations", "output_activations", "format")
	quantKeysCTArgs   = setOf("num_bits", "type", "symmetric", "group_size", "strategy", "block_structure", "dynamic", "actorder", "observer", "observer_kwargs", "scale_dtype", "zp_dtype")
	quantKeysModelOpt = setOf("quant_method", "quant_algo", "kv_cache_quant_algo", "group_size", "exclude_modules", "producer", "quantization", "has_zero_point", "pre_quant_scale", "awq_block_size",
		// compressed-tensors style fields some ModelOpt exports add
		"config_groups", "ignore", "kv_cache_scheme", "quantization_status", "format", "version", "sparsity_config")
)

// readQuantization reads quantization_config (and, for ModelOpt, the
// hf_quant_config.json qf) into m.Quantization. It returns the quantisation
// keys it ignored in lenient mode.
func (c *hfConfig) readQuantization(m *models.Model, qf *hfQuantFile, lenient bool) ([]string, error) {
	obj, field, ok, err := c.object("quantization_config")
	if err != nil {
		return nil, err
	}
	var ignored []string
	var spec *quantSpec
	switch {
	case ok:
		q := qobj{file: c.file, field: field, m: obj}
		raw, present := q.get("quant_method")
		if !present {
			return nil, q.errf("quant_method", "is required")
		}
		method, isStr := raw.(string)
		if !isStr {
			return nil, q.errf("quant_method", "must be a string, not %s", jsonKind(raw))
		}
		method = strings.ToLower(method)
		if qf != nil && method != "modelopt" {
			return nil, &FileError{File: qf.name, Err: fmt.Errorf("is a ModelOpt quantisation config, but %s says quant_method %q", c.file, method)}
		}
		if spec, err = parseQuantConfig(q, method, m, qf, lenient, &ignored); err != nil {
			return nil, err
		}
	case qf != nil:
		if spec, err = parseModelOpt(nil, qf, lenient, &ignored); err != nil {
			return nil, err
		}
	default:
		return nil, nil
	}
	quant, err := applyQuantSpec(c.file, m, spec)
	if err != nil {
		return nil, err
	}
	m.Quantization = quant
	return ignored, nil
}

func parseQuantConfig(q qobj, method string, m *models.Model, qf *hfQuantFile, lenient bool, ignored *[]string) (*quantSpec, error) {
	switch method {
	case "fp8":
		return parseFP8(q, lenient, ignored)
	case "fbgemm_fp8":
		if err := q.checkKeys(quantKeysFBGEMM, lenient, ignored); err != nil {
			return nil, err
		}
		spec := &quantSpec{method: method, scheme: models.SchemeFP8PerChannel, actScheme: "dynamic"}
		return spec, spec.readExcluded(q, "modules_to_not_convert")
	case "mxfp4":
		if err := q.checkKeys(quantKeysMXFP4, lenient, ignored); err != nil {
			return nil, err
		}
		if m.MoE == nil {
			return nil, q.errf("quant_method", "mxfp4 quantises routed experts only, and this model has none")
		}
		spec := &quantSpec{method: method, scheme: models.SchemeMXFP4, group: 32, expertsOnly: true}
		return spec, spec.readExcluded(q, "modules_to_not_convert")
	case "awq", "gptq", "awq_marlin", "gptq_marlin":
		return parseWeightOnly(q, method, lenient, ignored)
	case "compressed-tensors":
		if err := q.checkKeys(quantKeysCT, lenient, ignored); err != nil {
			return nil, err
		}
		spec := &quantSpec{method: method}
		if err := spec.readCompressedTensors(q, lenient, ignored, true); err != nil {
			return nil, err
		}
		return spec, nil
	case "modelopt":
		return parseModelOpt(&q, qf, lenient, ignored)
	}
	return nil, q.errf("quant_method", "unsupported quant_method %q (want fp8, fbgemm_fp8, mxfp4, awq, gptq, compressed-tensors or modelopt)", method)
}

// readExcluded appends the module list under key.
func (s *quantSpec) readExcluded(q qobj, key string) error {
	list, ok, err := q.strs(key)
	if err != nil || !ok {
		return err
	}
	if len(s.excluded)+len(list) > maxQuantPatterns {
		return q.errf(key, "lists more than %d modules", maxQuantPatterns)
	}
	for i, p := range list {
		s.excluded = append(s.excluded, exclPattern{text: p, file: q.file, field: fmt.Sprintf("%s[%d]", q.path(key), i)})
	}
	return nil
}

func parseFP8(q qobj, lenient bool, ignored *[]string) (*quantSpec, error) {
	if err := q.checkKeys(quantKeysFP8, lenient, ignored); err != nil {
		return nil, err
	}
	spec := &quantSpec{method: "fp8", scheme: models.SchemeFP8PerTensor, actScheme: "dynamic"}
	if f, ok, err := q.str("fmt"); err != nil {
		return nil, err
	} else if ok {
		switch strings.ToLower(f) {
		case "e4m3", "float8_e4m3fn":
		default:
			return nil, q.errf("fmt", "%q is not supported (want e4m3)", f)
		}
	}
	if a, ok, err := q.str("activation_scheme"); err != nil {
		return nil, err
	} else if ok {
		switch strings.ToLower(a) {
		case "dynamic", "static":
			spec.actScheme = strings.ToLower(a)
		default:
			return nil, q.errf("activation_scheme", "%q is not dynamic or static", a)
		}
	}
	block, ok, err := q.blockSize("weight_block_size")
	if err != nil {
		return nil, err
	}
	if ok {
		spec.scheme, spec.block = models.SchemeFP8Block, block
	}
	if err := spec.readExcluded(q, "modules_to_not_convert"); err != nil {
		return nil, err
	}
	return spec, spec.readExcluded(q, "ignored_layers")
}

func parseWeightOnly(q qobj, method string, lenient bool, ignored *[]string) (*quantSpec, error) {
	if err := q.checkKeys(quantKeysWeightQ, lenient, ignored); err != nil {
		return nil, err
	}
	bits, ok, err := q.int("bits")
	if err != nil {
		return nil, err
	}
	if !ok {
		bits = 4
	}
	spec := &quantSpec{method: method, group: 128}
	switch bits {
	case 4:
		spec.scheme = models.SchemeINT4WeightOnly
	case 8:
		spec.scheme = models.SchemeINT8WeightOnly
	default:
		return nil, q.errf("bits", "%d-bit %s is not supported (want 4 or 8)", bits, method)
	}
	if v, present := q.get("group_size"); present {
		// GPTQ writes -1 for one scale per output channel.
		if n, isNum := v.(json.Number); isNum && n.String() == "-1" {
			spec.group = 0
		} else if spec.group, _, err = q.int("group_size"); err != nil {
			return nil, err
		}
	}
	return spec, spec.readExcluded(q, "modules_to_not_convert")
}

// applyQuantSpec turns a parsed config into the model's Quantization,
// deciding from the excluded modules whether attention (and everything but
// the experts) stays unquantised.
func applyQuantSpec(file string, m *models.Model, s *quantSpec) (*models.Quantization, error) {
	ex, err := compileExclusions(s.excluded)
	if err != nil {
		return nil, err
	}
	q := &models.Quantization{
		Method: s.method, DType: s.scheme.WeightDType(), Scheme: s.scheme,
		WeightBlockSize: s.block, GroupSize: s.group, ActivationScheme: s.actScheme,
		KVCacheQuantAlgo:    s.kv,
		ModulesToNotConvert: foldLayerPatterns(s.excluded, m.NumLayers),
	}
	if s.expertsOnly && m.MoE == nil {
		return nil, &FileError{File: file, Field: "quantization_config", Err: errors.New("quantises routed experts only, and this model has none")}
	}
	attn, dense, shared := ex.analyse(m)
	q.AttentionUnquantized = attn || s.expertsOnly
	q.ExpertsOnly = s.expertsOnly || (m.MoE != nil && attn && dense && shared)
	return q, nil
}
