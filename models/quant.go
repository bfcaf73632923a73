package models

import (
	"fmt"
	"slices"
	"strings"

	"github.com/headroom-sim/headroom/hardware"
)

// QuantScheme names the kernel family a checkpoint's quantised linear layers
// run on in the serving engine. Two checkpoints with the same weight dtype can
// need different kernels (per-tensor fp8 runs cuBLASLt/CUTLASS W8A8, block fp8
// runs DeepGEMM-style kernels with per-token-group activation scales), and the
// kernel tables are keyed by it.
type QuantScheme string

// The schemes Headroom knows. The comment names the weight and activation
// formats and the checkpoints that use it.
const (
	// SchemeFP8PerTensor: fp8 e4m3 weights with one scale per tensor, fp8
	// activations (W8A8); ModelOpt FP8 (nvidia/*-FP8), fp8 without
	// weight_block_size. The kernel tables' "fp8".
	SchemeFP8PerTensor QuantScheme = "fp8_per_tensor"
	// SchemeFP8PerChannel: fp8 weights with one scale per output channel,
	// fp8 activations scaled per token (W8A8); fbgemm_fp8, compressed-tensors
	// FP8_DYNAMIC, ModelOpt FP8_PER_CHANNEL_PER_TOKEN.
	SchemeFP8PerChannel QuantScheme = "fp8_per_channel"
	// SchemeFP8Block: fp8 weights with one scale per WeightBlockSize block
	// (128 × 128), fp8 activations scaled per token and group of 128
	// (W8A8); DeepSeek-V3, Qwen3-*-FP8, MiniMax-M2. The kernel tables'
	// "fp8_block".
	SchemeFP8Block QuantScheme = "fp8_block"
	// SchemeFP8WeightOnly: fp8 weights, activations in the model dtype
	// (W8A16, dequantising kernels); compressed-tensors without
	// input_activations.
	SchemeFP8WeightOnly QuantScheme = "fp8_weight_only"
	// SchemeINT8W8A8: int8 weights per output channel, int8 activations
	// per token (SmoothQuant-style); compressed-tensors W8A8, ModelOpt
	// W8A8_SQ_PER_CHANNEL.
	SchemeINT8W8A8 QuantScheme = "int8_w8a8"
	// SchemeINT8WeightOnly: int8 weights, activations in the model dtype
	// (W8A16); GPTQ 8-bit, compressed-tensors W8A16.
	SchemeINT8WeightOnly QuantScheme = "int8_weight_only"
	// SchemeINT4WeightOnly: int4 weights in groups of GroupSize,
	// activations in the model dtype (W4A16, Marlin-style kernels); GPTQ,
	// AWQ, compressed-tensors W4A16 (Red Hat, Kimi-K2 experts), ModelOpt
	// W4A16_AWQ. The kernel tables' MoE "int4_wo".
	SchemeINT4WeightOnly QuantScheme = "int4_weight_only"
	// SchemeINT4W4A8FP8: int4 weights in groups, fp8 activations (W4A8);
	// compressed-tensors W4AFP8, ModelOpt W4A8_AWQ.
	SchemeINT4W4A8FP8 QuantScheme = "int4_w4a8_fp8"
	// SchemeNVFP4: fp4 e2m1 weights and activations with an fp8 e4m3 scale
	// per 16 elements and an fp32 tensor scale (W4A4, Blackwell tensor
	// cores); ModelOpt NVFP4, compressed-tensors nvfp4. The kernel tables'
	// "nvfp4".
	SchemeNVFP4 QuantScheme = "nvfp4"
	// SchemeNVFP4WeightOnly: NVFP4 weights, activations in the model dtype
	// (W4A16 fp4, for GPUs without fp4 tensor cores); compressed-tensors
	// nvfp4 without input_activations.
	SchemeNVFP4WeightOnly QuantScheme = "nvfp4_weight_only"
	// SchemeMXFP4: fp4 e2m1 weights with an e8m0 scale per 32 elements
	// (OCP MX), activations in the model dtype in the checkpoint; gpt-oss
	// experts. The kernel tables' MoE "w4a16_mxfp4".
	SchemeMXFP4 QuantScheme = "mxfp4"
)

// schemeFormats is what each scheme stores and computes in: the weight
// dtype, the dtype activations are quantised to before the GEMM ("" for
// weight-only), and the fixed group size of the format (0: free).
var schemeFormats = map[QuantScheme]struct {
	weights, acts hardware.DType
	group         int
}{
	SchemeFP8PerTensor:    {hardware.FP8, hardware.FP8, 0},
	SchemeFP8PerChannel:   {hardware.FP8, hardware.FP8, 0},
	SchemeFP8Block:        {hardware.FP8, hardware.FP8, 0},
	SchemeFP8WeightOnly:   {hardware.FP8, "", 0},
	SchemeINT8W8A8:        {hardware.INT8, hardware.INT8, 0},
	SchemeINT8WeightOnly:  {hardware.INT8, "", 0},
	SchemeINT4WeightOnly:  {hardware.INT4, "", 0},
	SchemeINT4W4A8FP8:     {hardware.INT4, hardware.FP8, 0},
	SchemeNVFP4:           {hardware.FP4, hardware.FP4, 16},
	SchemeNVFP4WeightOnly: {hardware.FP4, "", 16},
	SchemeMXFP4:           {hardware.MXFP4, "", 32},
}

// QuantSchemes lists the known schemes, sorted.
func QuantSchemes() []QuantScheme {
	out := make([]QuantScheme, 0, len(schemeFormats))
	for s := range schemeFormats {
		out = append(out, s)
	}
	slices.Sort(out)
	return out
}

// Valid reports whether s is a known scheme.
func (s QuantScheme) Valid() bool {
	_, ok := schemeFormats[s]
	return ok
}

// WeightDType is the storage type of the scheme's weights.
func (s QuantScheme) WeightDType() hardware.DType { return schemeFormats[s].weights }

// ActivationDType is the type activations are quantised to before the
// scheme's GEMMs; "" for a weight-only scheme.
func (s QuantScheme) ActivationDType() hardware.DType { return schemeFormats[s].acts }

// KernelScheme is Scheme, or for entries that leave it out the default of
// their dtype and method: fp8 with a weight_block_size is block fp8, fp8
// without one is per-tensor (vLLM's fp8 method), fbgemm_fp8 is per-channel,
// int8 from GPTQ is weight-only and otherwise W8A8, int4 is weight-only,
// fp4 is NVFP4 W4A4.
func (q *Quantization) KernelScheme() QuantScheme {
	if q.Scheme != "" {
		return q.Scheme
	}
	method := strings.ToLower(q.Method)
	switch q.DType {
	case hardware.FP8:
		switch {
		case len(q.WeightBlockSize) > 0:
			return SchemeFP8Block
		case method == "fbgemm_fp8":
			return SchemeFP8PerChannel
		}
		return SchemeFP8PerTensor
	case hardware.INT8:
		if strings.HasPrefix(method, "gptq") || strings.HasPrefix(method, "awq") {
			return SchemeINT8WeightOnly
		}
		return SchemeINT8W8A8
	case hardware.INT4:
		return SchemeINT4WeightOnly
	case hardware.FP4:
		return SchemeNVFP4
	case hardware.MXFP4:
		return SchemeMXFP4
	}
	return ""
}

// ActivationDType is the type the inputs of the quantised GEMMs are in:
// the scheme's activation format (fp8 for W8A8 fp8, fp4 for NVFP4), or
// model, the checkpoint's torch_dtype, for weight-only schemes.
func (q *Quantization) ActivationDType(model hardware.DType) hardware.DType {
	if a := q.KernelScheme().ActivationDType(); a != "" {
		return a
	}
	return model
}

// maxBlockOrGroup bounds block and group sizes (real ones are 16 to 128).
const maxBlockOrGroup = 1 << 16

// Validate checks that the fields agree with each other; errors name the
// field as quantization.<yaml key>.
func (q *Quantization) Validate() error {
	if !q.DType.Valid() {
		return &FieldError{Field: "quantization.dtype", Reason: fmt.Sprintf("unknown data type %q", q.DType)}
	}
	if q.Scheme != "" {
		if !q.Scheme.Valid() {
			return &FieldError{Field: "quantization.scheme", Reason: fmt.Sprintf("unknown scheme %q (want one of %s)", q.Scheme, schemeList())}
		}
		if w := q.Scheme.WeightDType(); w != q.DType {
			return &FieldError{Field: "quantization.dtype", Reason: fmt.Sprintf("%s does not match scheme %s, which stores %s weights", q.DType, q.Scheme, w)}
		}
	}
	scheme := q.KernelScheme()
	if b := q.WeightBlockSize; len(b) > 0 {
		if len(b) != 2 || b[0] <= 0 || b[1] <= 0 || b[0] > maxBlockOrGroup || b[1] > maxBlockOrGroup {
			return &FieldError{Field: "quantization.weight_block_size", Reason: fmt.Sprintf("must be [rows, columns], each 1 to %d, not %v", maxBlockOrGroup, b)}
		}
		if scheme != SchemeFP8Block {
			return &FieldError{Field: "quantization.weight_block_size", Reason: fmt.Sprintf("applies to scheme fp8_block only, not %s", scheme)}
		}
	} else if q.Scheme == SchemeFP8Block {
		return &FieldError{Field: "quantization.weight_block_size", Reason: "is required for scheme fp8_block (e.g. [128, 128])"}
	}
	if q.GroupSize < 0 || q.GroupSize > maxBlockOrGroup {
		return &FieldError{Field: "quantization.group_size", Reason: fmt.Sprintf("must be between 0 and %d", maxBlockOrGroup)}
	}
	if g := schemeFormats[scheme].group; g > 0 && q.GroupSize != 0 && q.GroupSize != g {
		return &FieldError{Field: "quantization.group_size", Reason: fmt.Sprintf("scheme %s has groups of %d, not %d", scheme, g, q.GroupSize)}
	}
	switch q.ActivationScheme {
	case "", "dynamic", "static":
	default:
		return &FieldError{Field: "quantization.activation_scheme", Reason: fmt.Sprintf("%q is not dynamic or static", q.ActivationScheme)}
	}
	switch q.KVCacheQuantAlgo {
	case "", hardware.FP8, hardware.INT8, hardware.BF16, hardware.FP16:
	default:
		return &FieldError{Field: "quantization.kv_cache_quant_algo", Reason: fmt.Sprintf("%s is not a KV-cache type (fp8, int8, bf16, fp16)", q.KVCacheQuantAlgo)}
	}
	return nil
}

func schemeList() string {
	names := make([]string, 0, len(schemeFormats))
	for _, s := range QuantSchemes() {
		names = append(names, string(s))
	}
	return strings.Join(names, ", ")
}
