package models

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/headroom-sim/headroom/hardware"
)

// denseAttentionExcluded is Llama-3.1-8B quantised to NVFP4 everywhere but
// attention: the case Precision.Attention exists for.
func denseAttentionExcluded() *Model {
	m := llama31_8B()
	m.ID = "llama-3.1-8b-nvfp4-attn-bf16"
	m.Quantization = &Quantization{Method: "modelopt", DType: hardware.FP4, Scheme: SchemeNVFP4, GroupSize: 16, AttentionUnquantized: true}
	return m
}

// TestDefaultPrecisionCheckpoints: how each measured checkpoint is served
// when nothing is overridden.
func TestDefaultPrecisionCheckpoints(t *testing.T) {
	bf16, fp8, fp4, mx := hardware.BF16, hardware.FP8, hardware.FP4, hardware.MXFP4
	tests := []struct {
		name                              string
		m                                 *Model
		weights, experts, attention, kv   hardware.DType
		scheme                            QuantScheme
		gemmInputs                        hardware.DType // ActivationDType of the quantised GEMMs
		wantWeights, wantExperts, wantAtt hardware.DType // the accessors
	}{
		{"minimax-m2.5 fp8 block", minimaxM25(), fp8, "", "", bf16, SchemeFP8Block, fp8, fp8, fp8, fp8},
		{"minimax-m2.5 nvfp4 experts", minimaxM25NVFP4(), bf16, fp4, "", fp8, SchemeNVFP4, fp4, bf16, fp4, bf16},
		{"qwen3-235b bf16", qwen3_235B_A22B(), bf16, "", "", bf16, "", "", bf16, bf16, bf16},
		{"qwen3-235b fp8 block", qwen3_235B_A22B_FP8(), fp8, "", "", bf16, SchemeFP8Block, fp8, fp8, fp8, fp8},
		{"gpt-oss-120b mxfp4 experts", gptOSS120B(), bf16, mx, "", bf16, SchemeMXFP4, bf16, bf16, mx, bf16},
		{"llama-3.1-8b fp8 per-tensor", llama31_8B_FP8(), fp8, "", "", fp8, SchemeFP8PerTensor, fp8, fp8, fp8, fp8},
		{"dense nvfp4, attention bf16", denseAttentionExcluded(), fp4, "", bf16, bf16, SchemeNVFP4, fp4, fp4, fp4, bf16},
		// A hand-written entry that only says attention is excluded: the
		// experts are all that is left, so it is served as experts-only.
		{"moe nvfp4, attention bf16", func() *Model {
			m := minimaxM25NVFP4()
			m.Quantization.ExpertsOnly = false
			return m
		}(), bf16, fp4, "", fp8, SchemeNVFP4, fp4, bf16, fp4, bf16},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.m.Validate(); err != nil {
				t.Fatalf("Validate: %v", err)
			}
			p := tt.m.DefaultPrecision()
			if p.Weights != tt.weights || p.Experts != tt.experts || p.Attention != tt.attention || p.KV != tt.kv || p.Activations != bf16 {
				t.Errorf("DefaultPrecision = %+v, want weights %s experts %q attention %q KV %s activations bf16",
					p, tt.weights, tt.experts, tt.attention, tt.kv)
			}
			if p.Weights != tt.wantWeights || p.ExpertDType() != tt.wantExperts || p.AttentionDType() != tt.wantAtt {
				t.Errorf("Weights/ExpertDType/AttentionDType = %s/%s/%s, want %s/%s/%s",
					p.Weights, p.ExpertDType(), p.AttentionDType(), tt.wantWeights, tt.wantExperts, tt.wantAtt)
			}
			q := tt.m.Quantization
			if q == nil {
				if tt.scheme != "" {
					t.Fatalf("no quantization, want scheme %s", tt.scheme)
				}
				return
			}
			if got := q.KernelScheme(); got != tt.scheme {
				t.Errorf("KernelScheme = %s, want %s", got, tt.scheme)
			}
			if got := q.ActivationDType(tt.m.DType); got != tt.gemmInputs {
				t.Errorf("ActivationDType = %s, want %s", got, tt.gemmInputs)
			}
		})
	}
}

func TestResolvePrecisionKVHint(t *testing.T) {
	tests := []struct {
		name        string
		m           *Model
		weights, kv hardware.DType
		want        Precision
	}{
		{"hint kept on auto", minimaxM25NVFP4(), "", "auto",
			Precision{Weights: hardware.BF16, Experts: hardware.FP4, KV: hardware.FP8, Activations: hardware.BF16}},
		{"explicit KV wins over the hint", minimaxM25NVFP4(), "", hardware.BF16,
			Precision{Weights: hardware.BF16, Experts: hardware.FP4, KV: hardware.BF16, Activations: hardware.BF16}},
		{"overridden weights drop the hint", minimaxM25NVFP4(), hardware.BF16, "",
			Precision{Weights: hardware.BF16, KV: hardware.BF16, Activations: hardware.BF16}},
		// vLLM's --kv-cache-dtype auto: an fp8 checkpoint without KV scales
		// keeps a 16-bit cache.
		{"no hint: fp8 block weights keep a bf16 KV", minimaxM25(), "", "",
			Precision{Weights: hardware.FP8, KV: hardware.BF16, Activations: hardware.BF16, FP8Blocks: true}},
		{"override clears the attention dtype and the block scheme", denseAttentionExcluded(), hardware.FP8, "",
			Precision{Weights: hardware.FP8, KV: hardware.BF16, Activations: hardware.BF16}},
		{"attention dtype kept", denseAttentionExcluded(), "", "",
			Precision{Weights: hardware.FP4, Attention: hardware.BF16, KV: hardware.BF16, Activations: hardware.BF16}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.m.ResolvePrecision(tt.weights, tt.kv); got != tt.want {
				t.Errorf("ResolvePrecision(%q, %q) = %+v, want %+v", tt.weights, tt.kv, got, tt.want)
			}
		})
	}
}

// TestAttentionDTypeBytes: an unquantised attention costs its bf16 bytes in
// weight memory and in the per-step weight reads, and nothing else moves.
func TestAttentionDTypeBytes(t *testing.T) {
	m := denseAttentionExcluded()
	excluded := m.DefaultPrecision()
	all := excluded
	all.Attention = ""
	// Llama-3.1-8B attention: 32 × (2 × 4096 × 4096 + 2 × 4096 × 1024).
	attnParams := 32.0 * (2*4096*4096 + 2*4096*1024)
	want := attnParams * (2 - hardware.FP4.WeightBytes())
	for _, tp := range []int{1, 2} {
		got := m.WeightBytesPerGPU(excluded, tp) - m.WeightBytesPerGPU(all, tp)
		if math.Abs(got/(want/float64(tp))-1) > 1e-12 {
			t.Errorf("tp%d: bf16 attention adds %.6g bytes, want %.6g", tp, got, want/float64(tp))
		}
	}
	var b Batch
	b.AddDecode(100, 0)
	withBF16 := m.NewCostModel(excluded, 1).Step(&b)
	withFP4 := m.NewCostModel(all, 1).Step(&b)
	for _, k := range []OpKind{OpQKVProj, OpOProj} {
		if r := withBF16[k].WeightBytes / withFP4[k].WeightBytes; math.Abs(r-2/hardware.FP4.WeightBytes()) > 1e-12 {
			t.Errorf("%s weight bytes ratio bf16/fp4 = %.6f, want %.6f", k, r, 2/hardware.FP4.WeightBytes())
		}
	}
	if withBF16[OpMLP].WeightBytes != withFP4[OpMLP].WeightBytes {
		t.Errorf("MLP weight bytes changed with the attention dtype: %v vs %v", withBF16[OpMLP].WeightBytes, withFP4[OpMLP].WeightBytes)
	}
}

// TestKernelSchemeDefaults: entries written before Scheme existed get the
// scheme their method and dtype imply.
func TestKernelSchemeDefaults(t *testing.T) {
	tests := []struct {
		q    Quantization
		want QuantScheme
	}{
		{Quantization{Method: "fp8", DType: hardware.FP8}, SchemeFP8PerTensor},
		{Quantization{Method: "fp8", DType: hardware.FP8, WeightBlockSize: []int{128, 128}}, SchemeFP8Block},
		{Quantization{Method: "fbgemm_fp8", DType: hardware.FP8}, SchemeFP8PerChannel},
		{Quantization{Method: "gptq", DType: hardware.INT8}, SchemeINT8WeightOnly},
		{Quantization{Method: "compressed-tensors", DType: hardware.INT8}, SchemeINT8W8A8},
		{Quantization{Method: "awq", DType: hardware.INT4}, SchemeINT4WeightOnly},
		{Quantization{Method: "modelopt", DType: hardware.FP4}, SchemeNVFP4},
		{Quantization{Method: "mxfp4", DType: hardware.MXFP4}, SchemeMXFP4},
		{Quantization{Method: "x", DType: hardware.FP8, Scheme: SchemeFP8PerChannel}, SchemeFP8PerChannel},
	}
	for _, tt := range tests {
		if got := tt.q.KernelScheme(); got != tt.want {
			t.Errorf("%+v: KernelScheme = %s, want %s", tt.q, got, tt.want)
		}
	}
	for _, s := range QuantSchemes() {
		if !s.Valid() || !s.WeightDType().Valid() {
			t.Errorf("scheme %s: weight dtype %q", s, s.WeightDType())
		}
	}
}

func TestQuantizationValidate(t *testing.T) {
	tests := []struct {
		name      string
		q         Quantization
		wantField string // "" = valid
		wantIn    string
	}{
		{"block fp8", Quantization{Method: "fp8", DType: hardware.FP8, Scheme: SchemeFP8Block, WeightBlockSize: []int{128, 128}}, "", ""},
		{"legacy fp8", Quantization{Method: "fp8", DType: hardware.FP8}, "", ""},
		{"unknown dtype", Quantization{Method: "fp8", DType: "fp6"}, "quantization.dtype", "unknown data type"},
		{"unknown scheme", Quantization{Method: "fp8", DType: hardware.FP8, Scheme: "fp8_rowwise"}, "quantization.scheme", "unknown scheme"},
		{"scheme dtype mismatch", Quantization{Method: "modelopt", DType: hardware.FP8, Scheme: SchemeNVFP4}, "quantization.dtype", "does not match scheme nvfp4"},
		{"block needs size", Quantization{Method: "fp8", DType: hardware.FP8, Scheme: SchemeFP8Block}, "quantization.weight_block_size", "is required"},
		{"block of one number", Quantization{Method: "fp8", DType: hardware.FP8, WeightBlockSize: []int{128}}, "quantization.weight_block_size", "[rows, columns]"},
		{"block zero", Quantization{Method: "fp8", DType: hardware.FP8, WeightBlockSize: []int{128, 0}}, "quantization.weight_block_size", "[rows, columns]"},
		{"block on per-tensor", Quantization{Method: "fp8", DType: hardware.FP8, Scheme: SchemeFP8PerTensor, WeightBlockSize: []int{128, 128}}, "quantization.weight_block_size", "fp8_block only"},
		{"negative group", Quantization{Method: "gptq", DType: hardware.INT4, GroupSize: -1}, "quantization.group_size", "between 0"},
		{"nvfp4 group 32", Quantization{Method: "modelopt", DType: hardware.FP4, Scheme: SchemeNVFP4, GroupSize: 32}, "quantization.group_size", "groups of 16"},
		{"int4 group 32", Quantization{Method: "compressed-tensors", DType: hardware.INT4, Scheme: SchemeINT4WeightOnly, GroupSize: 32}, "", ""},
		{"activation scheme", Quantization{Method: "fp8", DType: hardware.FP8, ActivationScheme: "per_token"}, "quantization.activation_scheme", "dynamic or static"},
		{"kv hint fp4", Quantization{Method: "modelopt", DType: hardware.FP4, KVCacheQuantAlgo: hardware.FP4}, "quantization.kv_cache_quant_algo", "not a KV-cache type"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.q.Validate()
			if tt.wantField == "" {
				if err != nil {
					t.Fatalf("Validate: %v", err)
				}
				return
			}
			var fe *FieldError
			if !errors.As(err, &fe) || fe.Field != tt.wantField || !strings.Contains(fe.Reason, tt.wantIn) {
				t.Errorf("Validate = %v, want field %s containing %q", err, tt.wantField, tt.wantIn)
			}
		})
	}
	// experts_only is a model-level check.
	m := llama31_8B()
	m.Quantization = &Quantization{Method: "mxfp4", DType: hardware.MXFP4, ExpertsOnly: true}
	var fe *FieldError
	if err := m.Validate(); !errors.As(err, &fe) || fe.Field != "quantization.experts_only" {
		t.Errorf("experts_only on a dense model: Validate = %v, want a quantization.experts_only error", err)
	}
}
