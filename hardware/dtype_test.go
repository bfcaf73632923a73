package hardware

import (
	"strings"
	"testing"
)

func TestDTypeBytesByHand(t *testing.T) {
	for _, c := range []struct {
		d             DType
		bytes, weight float64
	}{
		{FP32, 4, 4},
		{BF16, 2, 2},
		{FP16, 2, 2},
		{FP8, 1, 1},  // per-tensor/channel scales not counted
		{INT8, 1, 1}, // idem
		// int4: half a byte + an fp16 scale and a 4-bit zero per 128
		// weights: 0.5 + 2.5/128 = 0.51953125.
		{INT4, 0.5, 0.51953125},
		// NVFP4: + an fp8 scale per 16: 0.5 + 1/16 = 0.5625.
		{FP4, 0.5, 0.5625},
		// MXFP4: + an e8m0 scale per 32: 0.5 + 1/32 = 0.53125.
		{MXFP4, 0.5, 0.53125},
		{DType("fp6"), 0, 0}, // unknown
	} {
		if c.d.Bytes() != c.bytes || c.d.WeightBytes() != c.weight {
			t.Errorf("%s: Bytes %g, WeightBytes %g; want %g, %g", c.d, c.d.Bytes(), c.d.WeightBytes(), c.bytes, c.weight)
		}
	}
	if !INT4.IsInteger() || !INT8.IsInteger() || FP8.IsInteger() {
		t.Error("IsInteger: int4 and int8 only")
	}
	if !FP4.IsSubByte() || !MXFP4.IsSubByte() || !INT4.IsSubByte() || FP8.IsSubByte() {
		t.Error("IsSubByte: the 4-bit formats only")
	}
}

func TestParseDTypeSpellings(t *testing.T) {
	for in, want := range map[string]DType{
		"bfloat16": BF16, " BF16 ": BF16, "half": FP16, "float16": FP16, "float32": FP32, "float": FP32,
		"float8_e4m3fn": FP8, "fp8_e5m2": FP8, "w8a8": INT8, "awq": INT4, "gptq": INT4, "w4a16": INT4,
		"nvfp4": FP4, "mxfp4": MXFP4,
	} {
		got, err := ParseDType(in)
		if err != nil || got != want {
			t.Errorf("ParseDType(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	_, err := ParseDType("fp6")
	if err == nil || !strings.Contains(err.Error(), `"fp6"`) || !strings.Contains(err.Error(), "bf16, fp16") {
		t.Errorf("unknown type: %v, want one naming it and the known types", err)
	}
	var d DType
	if err := d.UnmarshalText([]byte("bfloat16")); err != nil || d != BF16 {
		t.Errorf("UnmarshalText: %q, %v", d, err)
	}
	if err := d.UnmarshalText([]byte("int3")); err == nil {
		t.Error("UnmarshalText accepted int3")
	}
	for _, d := range DTypes {
		if !d.Valid() {
			t.Errorf("%s not valid", d)
		}
	}
	if DType("int3").Valid() {
		t.Error("int3 valid")
	}
}

// FuzzParseDType: any text parses to a known type or fails naming it;
// never a panic, never an unknown type.
func FuzzParseDType(f *testing.F) {
	for _, s := range []string{"bf16", "BFloat16", "", "fp8_e4m3", "\x00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := ParseDType(s)
		if err == nil && !d.Valid() {
			t.Fatalf("ParseDType(%q) = %q, not a known type", s, d)
		}
		if err != nil && d != "" {
			t.Fatalf("ParseDType(%q) failed but returned %q", s, d)
		}
	})
}
