package hardware

import (
	"fmt"
	"strings"
)

// DType is a numeric storage format for weights, activations or the KV cache.
type DType string

// The data types Headroom models.
const (
	FP32  DType = "fp32"
	BF16  DType = "bf16"
	FP16  DType = "fp16"
	FP8   DType = "fp8"   // e4m3/e5m2, per-tensor or per-channel scales
	INT8  DType = "int8"  // W8A8 or weight-only, per-channel scales
	INT4  DType = "int4"  // GPTQ/AWQ style, one fp16 scale and a 4-bit zero per group of 128
	FP4   DType = "fp4"   // NVFP4: one fp8 scale per 16 elements
	MXFP4 DType = "mxfp4" // OCP MX FP4: one e8m0 scale per 32 elements (gpt-oss experts)
)

// DTypes lists every known data type, in a stable order.
var DTypes = []DType{FP32, BF16, FP16, FP8, INT8, INT4, FP4, MXFP4}

// ParseDType accepts the canonical names and the common spellings used by
// PyTorch and Hugging Face configs ("bfloat16", "float16", "half", …).
func ParseDType(s string) (DType, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "fp32", "float32", "float":
		return FP32, nil
	case "bf16", "bfloat16":
		return BF16, nil
	case "fp16", "float16", "half":
		return FP16, nil
	case "fp8", "fp8_e4m3", "fp8_e5m2", "float8", "float8_e4m3fn":
		return FP8, nil
	case "int8", "w8a8":
		return INT8, nil
	case "int4", "awq", "gptq", "w4a16":
		return INT4, nil
	case "fp4", "nvfp4":
		return FP4, nil
	case "mxfp4":
		return MXFP4, nil
	}
	return "", fmt.Errorf("unknown data type %q (want one of %s)", s, dtypeList())
}

func dtypeList() string {
	names := make([]string, len(DTypes))
	for i, d := range DTypes {
		names[i] = string(d)
	}
	return strings.Join(names, ", ")
}

// Valid reports whether d is a known data type.
func (d DType) Valid() bool {
	for _, k := range DTypes {
		if d == k {
			return true
		}
	}
	return false
}

// Bytes is the size of one element, without quantisation scales.
func (d DType) Bytes() float64 {
	switch d {
	case FP32:
		return 4
	case BF16, FP16:
		return 2
	case FP8, INT8:
		return 1
	case INT4, FP4, MXFP4:
		return 0.5
	}
	return 0
}

// Group-scale overheads of the quantised formats, in bytes per weight.
const (
	// int4 (GPTQ/AWQ): an fp16 scale and a packed 4-bit zero point per group
	// of 128 weights: (2 + 0.5) / 128.
	int4GroupOverheadBytes = (2.0 + 0.5) / 128
	// NVFP4: one fp8 (e4m3) scale per 16 elements, plus a negligible fp32
	// tensor scale.
	fp4GroupOverheadBytes = 1.0 / 16
	// MXFP4: one e8m0 scale byte per block of 32 elements (OCP MX spec v1.0).
	mxfp4GroupOverheadBytes = 1.0 / 32
)

// WeightBytes is the storage cost of one weight in this format, including
// the per-group scales of the sub-byte formats. Per-tensor and per-channel
// scales of fp8 and int8 are below 0.01% and not counted.
func (d DType) WeightBytes() float64 {
	switch d {
	case INT4:
		return d.Bytes() + int4GroupOverheadBytes
	case FP4:
		return d.Bytes() + fp4GroupOverheadBytes
	case MXFP4:
		return d.Bytes() + mxfp4GroupOverheadBytes
	}
	return d.Bytes()
}

// IsInteger reports whether d is an integer format (int8, int4).
func (d DType) IsInteger() bool { return d == INT8 || d == INT4 }

// IsSubByte reports whether one element is smaller than a byte.
func (d DType) IsSubByte() bool { return d.Bytes() < 1 }

// UnmarshalText accepts every spelling ParseDType does, so catalog files
// and request bodies may say "bfloat16".
func (d *DType) UnmarshalText(b []byte) error {
	v, err := ParseDType(string(b))
	if err != nil {
		return err
	}
	*d = v
	return nil
}
