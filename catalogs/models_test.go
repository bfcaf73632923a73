package catalogs

import (
	"bytes"
	"errors"
	"io/fs"
	"math"
	"strings"
	"testing"

	"github.com/headroom-sim/headroom/hardware"
)

// modelTestFiles returns the embedded models/*.yaml files and their contents.
func modelTestFiles(t testing.TB) map[string][]byte {
	t.Helper()
	names, err := fs.Glob(builtinFS, "models/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(names) == 0 {
		t.Fatal("no embedded models/*.yaml files")
	}
	out := map[string][]byte{}
	for _, n := range names {
		data, err := fs.ReadFile(builtinFS, n)
		if err != nil {
			t.Fatal(err)
		}
		out[n] = data
	}
	return out
}

// modelTestCatalog loads only the embedded model files, so that these tests
// do not depend on the GPU catalog.
func modelTestCatalog(t testing.TB) *Catalog {
	t.Helper()
	c := New()
	for name, data := range modelTestFiles(t) {
		if err := c.LoadModels(name, bytes.NewReader(data)); err != nil {
			t.Fatalf("LoadModels(%s): %v", name, err)
		}
	}
	return c
}

// requiredModels are the ids the built-in catalog must have, each with a
// name people type (Hugging Face repo ids, any case).
var requiredModels = []struct{ id, alias string }{
	{"llama-2-7b", "meta-llama/Llama-2-7b-hf"},
	{"llama-2-7b", "meta-llama/llama-2-7b-chat-hf"},
	{"llama-2-13b", "meta-llama/Llama-2-13b-hf"},
	{"llama-2-70b", "meta-llama/Llama-2-70b-hf"},
	{"llama-3.1-8b", "META-LLAMA/LLAMA-3.1-8B-INSTRUCT"},
	{"llama-3.1-8b", "meta-llama/Meta-Llama-3.1-8B-Instruct"},
	{"llama-3.1-70b", "meta-llama/Llama-3.1-70B-Instruct"},
	{"llama-3.1-70b", "meta-llama/Llama-3.3-70B-Instruct"},
	{"llama-3.1-405b", "meta-llama/Llama-3.1-405B-Instruct"},
	{"codellama-34b", "codellama/CodeLlama-34b-Instruct-hf"},
	{"codellama-34b", "codellama/CodeLlama-34b-hf"},
	{"mistral-7b", "mistralai/Mistral-7B-v0.1"},
	{"mistral-nemo-12b", "mistralai/Mistral-Nemo-Instruct-2407"},
	{"mixtral-8x7b", "mistralai/Mixtral-8x7B-Instruct-v0.1"},
	{"mixtral-8x7b", "mistralai/Mixtral-8x7B-v0.1"},
	{"qwen2.5-7b", "Qwen/Qwen2.5-7B-Instruct"},
	{"qwen2.5-7b", "qwen/qwen2.5-7b"},
	{"qwen2.5-72b", "Qwen/Qwen2.5-72B-Instruct"},
	{"qwen3-8b", "Qwen/Qwen3-8B"},
	{"qwen3-14b", "Qwen/Qwen3-14B"},
	{"qwen3-32b", "Qwen/Qwen3-32B"},
	{"qwen3-30b-a3b", "Qwen/Qwen3-30B-A3B"},
	{"qwen3-30b-a3b", "Qwen/Qwen3-30B-A3B-Instruct-2507"},
	{"yi-34b", "01-ai/Yi-34B"},
	{"gemma-2-9b", "google/gemma-2-9b-it"},
	{"gemma-2-9b", "google/gemma-2-9b"},
	{"deepseek-v3", "deepseek-ai/DeepSeek-V3"},
	{"deepseek-v3", "deepseek-ai/DeepSeek-R1"},
	{"gpt-oss-120b", "openai/gpt-oss-120b"},
	{"gpt-oss-20b", "openai/gpt-oss-20b"},
	{"qwen2.5-14b", "Qwen/Qwen2.5-14B-Instruct"},
	{"qwen2.5-32b", "Qwen/Qwen2.5-32B-Instruct"},
	// The models of the measured runs (silicon_vllm_agg.csv model_path).
	{"minimax-m2.5", "MiniMaxAI/MiniMax-M2.5"},
	{"minimax-m2.5-nvfp4", "nvidia/MiniMax-M2.5-NVFP4"},
	{"qwen3-235b-a22b", "Qwen/Qwen3-235B-A22B"},
	{"qwen3-235b-a22b-fp8", "Qwen/Qwen3-235B-A22B-FP8"},
	{"llama-3.1-8b-instruct-fp8", "nvidia/Llama-3.1-8B-Instruct-FP8"},
}

func TestBuiltinModels(t *testing.T) {
	c, err := Builtin()
	if err != nil {
		t.Fatalf("Builtin: %v", err)
	}
	for _, r := range requiredModels {
		if _, err := c.Model(r.id); err != nil {
			t.Errorf("Builtin().Model(%q): %v", r.id, err)
		}
	}
}

func TestModelLookup(t *testing.T) {
	c := modelTestCatalog(t)
	for _, r := range requiredModels {
		for _, name := range []string{r.id, strings.ToUpper(r.id), r.alias, strings.ToUpper(r.alias), strings.ToLower(r.alias), " " + r.alias + " "} {
			m, err := c.Model(name)
			if err != nil {
				t.Errorf("Model(%q): %v", name, err)
				continue
			}
			if m.ID != r.id {
				t.Errorf("Model(%q) = %q, want %q", name, m.ID, r.id)
			}
		}
	}
	_, err := c.Model("llama-3.1-9b")
	if !errors.Is(err, ErrUnknownModel) || !strings.Contains(err.Error(), "did you mean") {
		t.Errorf("Model(llama-3.1-9b) error %v, want ErrUnknownModel with a suggestion", err)
	}
}

// TestModelNamesResolveToOwner: every entry's hf_id and aliases lead back
// to it, in any case.
func TestModelNamesResolveToOwner(t *testing.T) {
	c := modelTestCatalog(t)
	for _, m := range c.Models() {
		if m.HFID == "" {
			t.Errorf("%s: no hf_id", m.ID)
		}
		for _, name := range append([]string{m.HFID}, m.Aliases...) {
			for _, n := range []string{name, strings.ToUpper(name)} {
				got, err := c.Model(n)
				if err != nil || got.ID != m.ID {
					t.Errorf("Model(%q) = %v, %v; want %q", n, got, err, m.ID)
				}
			}
		}
	}
}

// TestModelEntriesSourced: every entry names the config.json it comes from,
// and every file starts with a comment naming its source.
func TestModelEntriesSourced(t *testing.T) {
	for name, data := range modelTestFiles(t) {
		if !bytes.HasPrefix(data, []byte("#")) {
			t.Errorf("%s does not start with a comment naming its source", name)
		}
		for i, doc := range strings.Split(string(data), "\n---\n") {
			if !strings.Contains(doc, "\nhead_dim:") {
				t.Errorf("%s entry %d: head_dim is not written explicitly", name, i+1)
			}
		}
	}
	for _, m := range modelTestCatalog(t).Models() {
		if !strings.HasPrefix(m.Source, "https://huggingface.co/") || !strings.HasSuffix(m.Source, "/config.json") {
			t.Errorf("%s: source %q is not a Hugging Face config.json URL", m.ID, m.Source)
		}
		if m.Name == "" || m.Architecture == "" {
			t.Errorf("%s: name %q, architecture %q: both are required here", m.ID, m.Name, m.Architecture)
		}
	}
}

// TestModelSizes checks every entry against the parameter counts and KV
// bytes per token (bf16, TP1, every layer) of docs/catalog-facts.md and the
// model cards: a typo in a shape value moves one of them.
func TestModelSizes(t *testing.T) {
	tests := []struct {
		id           string
		totalB       float64
		kvPerTokBF16 float64
	}{
		{"llama-2-7b", 6.74, 524288},
		{"llama-2-13b", 13.0, 819200},
		{"llama-2-70b", 68.98, 327680},
		{"llama-3.1-8b", 8.03, 131072},
		// Llama 3 8B: "8B" (8.03B, the shape of Llama 3.1 8B).
		{"llama-3-8b", 8.03, 131072},
		{"llama-3.1-70b", 70.55, 327680},
		{"llama-3.1-405b", 405.85, 516096},
		{"codellama-34b", 33.7, 196608},
		{"mistral-7b", 7.24, 131072},
		{"mistral-nemo-12b", 12.2, 163840},
		{"mixtral-8x7b", 46.7, 131072},
		{"qwen2.5-7b", 7.62, 57344},
		{"qwen2.5-14b", 14.7, 196608},
		{"qwen2.5-32b", 32.5, 262144},
		{"qwen2.5-72b", 72.70, 327680},
		{"qwen3-8b", 8.2, 147456},
		{"qwen3-14b", 14.8, 163840},
		{"qwen3-32b", 32.8, 262144},
		{"qwen3-30b-a3b", 30.5, 98304},
		{"yi-34b", 34.4, 245760},
		{"gemma-2-9b", 9.24, 344064},
		{"deepseek-v3", 671, 70272},
		{"gpt-oss-120b", 116.83, 73728},
		{"gpt-oss-20b", 20.91, 49152},
		// MiniMax: "230B total"; KV 2 × 62 layers × 8 heads × 128 × 2 bytes.
		{"minimax-m2.5", 230, 253952},
		{"minimax-m2.5-nvfp4", 230, 253952},
		// Qwen: "235B in total"; KV 2 × 94 × 4 × 128 × 2.
		{"qwen3-235b-a22b", 235, 192512},
		{"qwen3-235b-a22b-fp8", 235, 192512},
		{"llama-3.1-8b-instruct-fp8", 8.03, 131072},
		// Llama 3.2 1B: "1.23B" on the model card; KV 2 × 16 × 8 × 64 × 2.
		{"llama-3.2-1b", 1.24, 32768},
	}
	c := modelTestCatalog(t)
	if len(tests) != len(c.Models()) {
		t.Errorf("%d size rows for %d catalog models: add the new ones here", len(tests), len(c.Models()))
	}
	for _, tt := range tests {
		t.Run(tt.id, func(t *testing.T) {
			m, err := c.Model(tt.id)
			if err != nil {
				t.Fatal(err)
			}
			total := float64(m.Params().Total) / 1e9
			if math.Abs(total/tt.totalB-1) > 0.01 {
				t.Errorf("Params().Total = %.3fB, want %.2fB within 1%%", total, tt.totalB)
			}
			if got := m.KVBytesPerToken(hardware.BF16, 1); got != tt.kvPerTokBF16 {
				t.Errorf("KVBytesPerToken(bf16, tp1) = %v, want %v", got, tt.kvPerTokBF16)
			}
		})
	}
}

const modelFuzzBase = `# test entry
id: test-model
name: Test Model
hf_id: test/Test-Model
aliases: [tm]
architecture: LlamaForCausalLM
torch_dtype: bf16
num_hidden_layers: 2
hidden_size: 64
intermediate_size: 128
num_attention_heads: 4
num_key_value_heads: 2
head_dim: 16
vocab_size: 100
max_position_embeddings: 512
tie_word_embeddings: false
source: https://huggingface.co/test/Test-Model/blob/main/config.json
`

func TestLoadModelsErrors(t *testing.T) {
	moe := modelFuzzBase + "moe: {num_experts: 4, num_experts_per_tok: 2, moe_intermediate_size: 32}\n"
	tests := []struct {
		name      string
		yaml      string
		wantField string
		wantIn    string
	}{
		{"ok", modelFuzzBase, "", ""},
		{"ok moe", moe, "", ""},
		{"unknown key", strings.Replace(modelFuzzBase, "hidden_size:", "hiden_size:", 1), "hiden_size", "unknown key"},
		{"missing hidden_size", strings.Replace(modelFuzzBase, "hidden_size: 64\n", "", 1), "hidden_size", "is required"},
		{"missing head_dim", strings.Replace(modelFuzzBase, "head_dim: 16\n", "", 1), "head_dim", "is required"},
		{"bad dtype", strings.Replace(modelFuzzBase, "torch_dtype: bf16", "torch_dtype: float12", 1), "", "unknown data type"},
		{"kv heads", strings.Replace(modelFuzzBase, "num_key_value_heads: 2", "num_key_value_heads: 3", 1), "num_key_value_heads", "does not divide"},
		{"top-k above experts", strings.Replace(moe, "num_experts_per_tok: 2", "num_experts_per_tok: 5", 1), "moe.num_experts_per_tok", "between"},
		{"window layers without window", modelFuzzBase + "sliding_window_layers: 1\n", "sliding_window", "is required"},
		{"wrong type", strings.Replace(modelFuzzBase, "num_hidden_layers: 2", "num_hidden_layers: two", 1), "", "cannot unmarshal"},
		{"duplicate alias", modelFuzzBase + "---\n" + strings.Replace(modelFuzzBase, "id: test-model", "id: other-model", 1), "aliases", "already names"},
		{"quantization scheme", modelFuzzBase + "quantization: {method: fp8, dtype: fp8, scheme: fp8_rowwise}\n", "quantization.scheme", "unknown scheme"},
		{"quantization block without fp8", modelFuzzBase + "quantization: {method: awq, dtype: int4, weight_block_size: [128, 128]}\n", "quantization.weight_block_size", "fp8_block only"},
		{"quantization unknown key", modelFuzzBase + "quantization: {method: fp8, dtype: fp8, block_size: [128, 128]}\n", "block_size", "unknown key"},
		{"experts_only on a dense model", modelFuzzBase + "quantization: {method: mxfp4, dtype: mxfp4, experts_only: true}\n", "quantization.experts_only", "needs routed experts"},
		{"not a mapping", "- a\n- b\n", "", "mapping"},
		{"empty", "", "", "no entries"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := New().LoadModels("m.yaml", strings.NewReader(tt.yaml))
			if tt.wantIn == "" {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			var fe *FileError
			if !errors.As(err, &fe) {
				t.Fatalf("error %v (%T), want *FileError", err, err)
			}
			if fe.File != "m.yaml" || fe.Field != tt.wantField || !strings.Contains(err.Error(), tt.wantIn) {
				t.Errorf("error %q (field %q), want file m.yaml, field %q, containing %q", err, fe.Field, tt.wantField, tt.wantIn)
			}
		})
	}
}

func FuzzLoadModels(f *testing.F) {
	for _, data := range modelTestFiles(f) {
		f.Add(data)
		f.Add(bytes.Replace(data, []byte("hidden_size:"), []byte("hidden_sise:"), 1))
		f.Add(bytes.Replace(data, []byte("\nhidden_size:"), []byte("\n#hidden_size:"), 1))
	}
	for _, s := range []string{
		modelFuzzBase,
		strings.Replace(modelFuzzBase, "hidden_size:", "hidden_sizes:", 1),
		strings.Replace(modelFuzzBase, "hidden_size: 64\n", "", 1),
		strings.Replace(modelFuzzBase, "num_hidden_layers: 2", "num_hidden_layers: two", 1),
		strings.Replace(modelFuzzBase, "vocab_size: 100", "vocab_size: 1e40", 1),
		strings.Replace(modelFuzzBase, "aliases: [tm]", "aliases: {a: b}", 1),
		modelFuzzBase + "moe: {num_experts: 4, num_experts_per_tok: 2, moe_intermediate_size: 32, first_dense_layers: 1}\n",
		modelFuzzBase + "mla: {q_lora_rank: 0, kv_lora_rank: 8, qk_nope_head_dim: 8, qk_rope_head_dim: 4, v_head_dim: 8}\n",
		modelFuzzBase + "quantization: {method: fp8, dtype: fp8}\n",
		modelFuzzBase + "quantization: {method: fp8, dtype: fp8, scheme: fp8_block, weight_block_size: [128, 128], activation_scheme: dynamic}\n",
		modelFuzzBase + "quantization: {method: modelopt, dtype: fp4, scheme: nvfp4, group_size: 32, kv_cache_quant_algo: fp8}\n",
		modelFuzzBase + "quantization: {method: x, dtype: int4, scheme: int4_weight_only, attention_unquantized: true, modules_to_not_convert: [self_attn]}\n",
		modelFuzzBase + "sliding_window: 16\nsliding_window_layers: 1\n",
		modelFuzzBase + "---\n" + modelFuzzBase,
		"---\n---\n",
		"- a\n- b\n",
		"id: [\n",
		"&a [*a]",
		"",
	} {
		f.Add([]byte(s))
	}
	const name = "fuzz.yaml"
	f.Fuzz(func(t *testing.T, data []byte) {
		c := New()
		err := c.LoadModels(name, bytes.NewReader(data))
		if err != nil {
			if _, ok := err.(*FileError); !ok {
				t.Fatalf("error %v is a %T, want *FileError", err, err)
			}
			if !strings.HasPrefix(err.Error(), name+":") {
				t.Fatalf("error %q does not start with %q", err, name+":")
			}
			return
		}
		if len(c.Models()) == 0 {
			t.Fatal("no error and no models")
		}
		for _, m := range c.Models() {
			if err := m.Validate(); err != nil {
				t.Fatalf("loaded model %q fails Validate: %v", m.ID, err)
			}
			if got, err := c.Model(m.ID); err != nil || got != m {
				t.Fatalf("loaded model %q does not resolve by its id: %v", m.ID, err)
			}
			_ = m.Params()
			_ = m.KVBytesForContext(1000, hardware.BF16, 3)
			_ = m.WeightBytesPerGPU(m.DefaultPrecision(), 3)
		}
	})
}
