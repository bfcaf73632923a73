package models

import "github.com/headroom-sim/headroom/hardware"

// Shapes of real models for the tests of this package, copied from each
// model's Hugging Face config.json. They mirror entries of
// catalogs/models/*.yaml; the catalogs package cannot be imported here (it
// imports this one), and catalogs/models_test.go checks the catalog itself.

func llama31_8B() *Model {
	return &Model{
		ID: "llama-3.1-8b", Architecture: "LlamaForCausalLM", DType: hardware.BF16,
		NumLayers: 32, HiddenSize: 4096, IntermediateSize: 14336,
		NumHeads: 32, NumKVHeads: 8, HeadDim: 128,
		VocabSize: 128256, MaxPositions: 131072,
	}
}

func llama2_7B() *Model {
	return &Model{
		ID: "llama-2-7b", Architecture: "LlamaForCausalLM", DType: hardware.FP16,
		NumLayers: 32, HiddenSize: 4096, IntermediateSize: 11008,
		NumHeads: 32, NumKVHeads: 32, HeadDim: 128, // multi-head attention
		VocabSize: 32000, MaxPositions: 4096,
	}
}

func llama2_70B() *Model {
	return &Model{
		ID: "llama-2-70b", Architecture: "LlamaForCausalLM", DType: hardware.FP16,
		NumLayers: 80, HiddenSize: 8192, IntermediateSize: 28672,
		NumHeads: 64, NumKVHeads: 8, HeadDim: 128,
		VocabSize: 32000, MaxPositions: 4096,
	}
}

func codellama34B() *Model {
	return &Model{
		ID: "codellama-34b", Architecture: "LlamaForCausalLM", DType: hardware.BF16,
		NumLayers: 48, HiddenSize: 8192, IntermediateSize: 22016,
		NumHeads: 64, NumKVHeads: 8, HeadDim: 128,
		VocabSize: 32000, MaxPositions: 16384,
	}
}

func mistral7B() *Model {
	return &Model{
		ID: "mistral-7b", Architecture: "MistralForCausalLM", DType: hardware.BF16,
		NumLayers: 32, HiddenSize: 4096, IntermediateSize: 14336,
		NumHeads: 32, NumKVHeads: 8, HeadDim: 128,
		VocabSize: 32000, MaxPositions: 32768,
		SlidingWindow: 4096, // every layer
	}
}

func qwen3_30B_A3B() *Model {
	return &Model{
		ID: "qwen3-30b-a3b", Architecture: "Qwen3MoeForCausalLM", DType: hardware.BF16,
		NumLayers: 48, HiddenSize: 2048, IntermediateSize: 6144,
		NumHeads: 32, NumKVHeads: 4, HeadDim: 128,
		VocabSize: 151936, MaxPositions: 40960,
		MoE: &MoE{NumExperts: 128, NumExpertsPerTok: 8, ExpertIntermediateSize: 768},
	}
}

func mixtral8x7B() *Model {
	return &Model{
		ID: "mixtral-8x7b", Architecture: "MixtralForCausalLM", DType: hardware.BF16,
		NumLayers: 32, HiddenSize: 4096, IntermediateSize: 14336,
		NumHeads: 32, NumKVHeads: 8, HeadDim: 128,
		VocabSize: 32000, MaxPositions: 32768,
		MoE: &MoE{NumExperts: 8, NumExpertsPerTok: 2, ExpertIntermediateSize: 14336},
	}
}

func deepseekV3() *Model {
	return &Model{
		ID: "deepseek-v3", Architecture: "DeepseekV3ForCausalLM", DType: hardware.BF16,
		NumLayers: 61, HiddenSize: 7168, IntermediateSize: 18432,
		NumHeads: 128, NumKVHeads: 128, HeadDim: 56, // hidden/heads; MLA dims govern
		VocabSize: 129280, MaxPositions: 163840,
		MoE: &MoE{NumExperts: 256, NumExpertsPerTok: 8, ExpertIntermediateSize: 2048,
			NumSharedExperts: 1, FirstDenseLayers: 3},
		MLA:          &MLA{QLoRARank: 1536, KVLoRARank: 512, QKNopeHeadDim: 128, QKRopeHeadDim: 64, VHeadDim: 128},
		Quantization: &Quantization{Method: "fp8", DType: hardware.FP8},
	}
}

func gemma2_9B() *Model {
	return &Model{
		ID: "gemma-2-9b", Architecture: "Gemma2ForCausalLM", DType: hardware.BF16,
		NumLayers: 42, HiddenSize: 3584, IntermediateSize: 14336,
		NumHeads: 16, NumKVHeads: 8, HeadDim: 256,
		VocabSize: 256000, MaxPositions: 8192, TieWordEmbeddings: true,
		SlidingWindow: 4096, SlidingWindowLayers: 21,
	}
}

func gptOSS120B() *Model {
	return &Model{
		ID: "gpt-oss-120b", Architecture: "GptOssForCausalLM", DType: hardware.BF16,
		NumLayers: 36, HiddenSize: 2880, IntermediateSize: 2880,
		NumHeads: 64, NumKVHeads: 8, HeadDim: 64,
		VocabSize: 201088, MaxPositions: 131072, AttentionBias: true,
		SlidingWindow: 128, SlidingWindowLayers: 18,
		MoE:          &MoE{NumExperts: 128, NumExpertsPerTok: 4, ExpertIntermediateSize: 2880, ExpertBias: true},
		Quantization: &Quantization{Method: "mxfp4", DType: hardware.MXFP4, ExpertsOnly: true},
	}
}

// MiniMax-M2.5: 62 layers, all MoE (256 experts, top 8, width 1536, no
// shared expert), GQA 48/8 heads of 128 with half of each head rotated;
// fp8 e4m3 weights in 128 × 128 blocks, router and LM head unquantised.
func minimaxM25() *Model {
	return &Model{
		ID: "minimax-m2.5", Architecture: "MiniMaxM2ForCausalLM", DType: hardware.BF16,
		NumLayers: 62, HiddenSize: 3072, IntermediateSize: 1536,
		NumHeads: 48, NumKVHeads: 8, HeadDim: 128, RotaryDim: 64,
		VocabSize: 200064, MaxPositions: 196608,
		MoE: &MoE{NumExperts: 256, NumExpertsPerTok: 8, ExpertIntermediateSize: 1536},
		Quantization: &Quantization{Method: "fp8", DType: hardware.FP8, Scheme: SchemeFP8Block,
			WeightBlockSize: []int{128, 128}, ActivationScheme: "dynamic"},
	}
}

// minimaxM25NVFP4 is NVIDIA's ModelOpt re-quantisation: NVFP4 experts,
// attention and router left in bf16, an fp8 KV-cache hint.
func minimaxM25NVFP4() *Model {
	m := minimaxM25()
	m.ID = "minimax-m2.5-nvfp4"
	m.Quantization = &Quantization{Method: "modelopt", DType: hardware.FP4, Scheme: SchemeNVFP4, GroupSize: 16,
		ActivationScheme: "static", ExpertsOnly: true, AttentionUnquantized: true, KVCacheQuantAlgo: hardware.FP8}
	return m
}

// Qwen3-235B-A22B: 94 layers, all MoE (128 experts, top 8, width 1536),
// GQA 64/4 heads of 128 (64 × 128 = 8192 ≠ hidden 4096).
func qwen3_235B_A22B() *Model {
	return &Model{
		ID: "qwen3-235b-a22b", Architecture: "Qwen3MoeForCausalLM", DType: hardware.BF16,
		NumLayers: 94, HiddenSize: 4096, IntermediateSize: 12288,
		NumHeads: 64, NumKVHeads: 4, HeadDim: 128,
		VocabSize: 151936, MaxPositions: 40960,
		MoE: &MoE{NumExperts: 128, NumExpertsPerTok: 8, ExpertIntermediateSize: 1536},
	}
}

func qwen3_235B_A22B_FP8() *Model {
	m := qwen3_235B_A22B()
	m.ID = "qwen3-235b-a22b-fp8"
	m.Quantization = &Quantization{Method: "fp8", DType: hardware.FP8, Scheme: SchemeFP8Block,
		WeightBlockSize: []int{128, 128}, ActivationScheme: "dynamic"}
	return m
}

// llama31_8B_FP8 is nvidia/Llama-3.1-8B-Instruct-FP8: ModelOpt FP8 with
// per-tensor scales on every linear layer of the blocks (LM head excluded)
// and an fp8 KV cache.
func llama31_8B_FP8() *Model {
	m := llama31_8B()
	m.ID = "llama-3.1-8b-instruct-fp8"
	m.Quantization = &Quantization{Method: "modelopt", DType: hardware.FP8, Scheme: SchemeFP8PerTensor,
		ActivationScheme: "static", KVCacheQuantAlgo: hardware.FP8}
	return m
}
