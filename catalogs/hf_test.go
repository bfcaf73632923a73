package catalogs

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/headroom-sim/headroom/hardware"
	"github.com/headroom-sim/headroom/models"
)

// hfFixtures maps each testdata/hf/*.json file to the catalog id whose
// shape its import must equal.
var hfFixtures = []struct{ file, id string }{
	{"llama-3.1-8b.json", "llama-3.1-8b"},
	{"qwen3-30b-a3b.json", "qwen3-30b-a3b"},
	{"deepseek-v3.json", "deepseek-v3"},
	{"gemma-2-9b.json", "gemma-2-9b"},
	{"mixtral-8x7b.json", "mixtral-8x7b"},
	{"gpt-oss-120b.json", "gpt-oss-120b"},
	{"qwen2.5-7b.json", "qwen2.5-7b"},
}

func hfReadFixture(t testing.TB, file string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "hf", file))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// hfShape is m without the fields that name it rather than describe it.
func hfShape(m *models.Model) models.Model {
	s := *m
	s.ID, s.Name, s.HFID, s.Aliases, s.Source = "", "", "", nil, ""
	return s
}

func TestImportHFMatchesCatalog(t *testing.T) {
	cat, err := Builtin()
	if err != nil {
		t.Fatalf("Builtin: %v", err)
	}
	for _, fx := range hfFixtures {
		t.Run(fx.id, func(t *testing.T) {
			want, err := cat.Model(fx.id)
			if err != nil {
				t.Fatal(err)
			}
			got, ignored, err := ImportHF(fx.file, bytes.NewReader(hfReadFixture(t, fx.file)), fx.id)
			if err != nil {
				t.Fatalf("ImportHF: %v", err)
			}
			if got.ID != fx.id {
				t.Errorf("ID = %q, want %q", got.ID, fx.id)
			}
			if g, w := hfShape(got), hfShape(want); !reflect.DeepEqual(g, w) {
				t.Errorf("imported shape differs from the catalog entry:\n got  %+v\n want %+v", g, w)
				if !reflect.DeepEqual(g.MoE, w.MoE) && g.MoE != nil && w.MoE != nil {
					t.Errorf("moe: got %+v, want %+v", *g.MoE, *w.MoE)
				}
				if !reflect.DeepEqual(g.Quantization, w.Quantization) && g.Quantization != nil && w.Quantization != nil {
					t.Errorf("quantization: got %+v, want %+v", *g.Quantization, *w.Quantization)
				}
			}
			if len(ignored) == 0 {
				t.Errorf("no ignored keys reported; every fixture has some (rope_theta, token ids)")
			}
			for _, k := range ignored {
				if hfUsedKeys[k] {
					t.Errorf("key %q reported as ignored but the importer reads it", k)
				}
			}
		})
	}
}

func hfFixtureWith(t testing.TB, file string, edit func(s string) string) string {
	return edit(string(hfReadFixture(t, file)))
}

func TestImportHFErrors(t *testing.T) {
	llama := func(old, new string) func(string) string {
		return func(s string) string {
			out := strings.Replace(s, old, new, 1)
			if out == s {
				panic("fixture edit did not apply: " + old)
			}
			return out
		}
	}
	tests := []struct {
		name      string
		edit      func(string) string
		wantField string // "" when the error is about the whole file
		wantIn    string
	}{
		{"missing num_hidden_layers", llama(`"num_hidden_layers": 32,`, ""), "num_hidden_layers", "is required"},
		{"null hidden_size", llama(`"hidden_size": 4096,`, `"hidden_size": null,`), "hidden_size", "is required"},
		{"zero heads", llama(`"num_attention_heads": 32,`, `"num_attention_heads": 0,`), "num_attention_heads", "must be > 0"},
		{"string layers", llama(`"num_hidden_layers": 32,`, `"num_hidden_layers": "32",`), "num_hidden_layers", "must be an integer, not a string"},
		{"fractional hidden", llama(`"hidden_size": 4096,`, `"hidden_size": 4096.5,`), "hidden_size", "must be an integer"},
		{"negative vocab", llama(`"vocab_size": 128256`, `"vocab_size": -1`), "vocab_size", "out of range"},
		{"bool as string", llama(`"tie_word_embeddings": false,`, `"tie_word_embeddings": "no",`), "tie_word_embeddings", "must be a boolean"},
		{"architectures not list", llama(`"architectures": [
    "LlamaForCausalLM"
  ],`, `"architectures": "LlamaForCausalLM",`), "architectures", "must be a list"},
		{"unknown dtype", llama(`"torch_dtype": "bfloat16"`, `"torch_dtype": "float12"`), "torch_dtype", "unknown data type"},
		{"unknown key", llama(`"use_cache": true,`, `"use_cache": true, "num_hidden_layerz": 32,`), "num_hidden_layerz", "unknown config.json key"},
		{"kv heads do not divide", llama(`"num_key_value_heads": 8,`, `"num_key_value_heads": 7,`), "num_key_value_heads", "does not divide"},
		{"bad quant method", llama(`"use_cache": true,`, `"use_cache": true, "quantization_config": {"quant_method": "bitsandbytes"},`), "quantization_config.quant_method", "unsupported"},
		{"layer_types length", llama(`"use_cache": true,`, `"use_cache": true, "sliding_window": 4096, "layer_types": ["sliding_attention"],`), "layer_types", "has 1 entries for 32 layers"},
		{"not JSON", func(string) string { return "architectures: [Llama]\n" }, "", "not a JSON object"},
		{"JSON list", func(string) string { return "[1, 2]" }, "", "not a JSON object"},
		{"JSON null", func(string) string { return "null" }, "", "not a JSON object"},
		{"trailing garbage", func(s string) string { return s + "}" }, "", "not a JSON object"},
		{"text_config not object", func(string) string { return `{"text_config": 3}` }, "text_config", "must be an object"},
		{"nested missing", func(string) string {
			return `{"architectures": ["LlavaForConditionalGeneration"], "text_config": {"hidden_size": 4096}}`
		}, "text_config.num_hidden_layers", "is required"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := hfFixtureWith(t, "llama-3.1-8b.json", tt.edit)
			_, _, err := ImportHF("config.json", strings.NewReader(in), "x")
			var fe *FileError
			if !errors.As(err, &fe) {
				t.Fatalf("error %v (%T), want *FileError", err, err)
			}
			if fe.File != "config.json" || fe.Field != tt.wantField || !strings.Contains(err.Error(), tt.wantIn) {
				t.Errorf("error %q (field %q), want file config.json, field %q, containing %q", err, fe.Field, tt.wantField, tt.wantIn)
			}
			if !strings.HasPrefix(err.Error(), "config.json: ") {
				t.Errorf("error %q does not start with the file name", err)
			}
		})
	}
}

func TestImportHFErrorMessage(t *testing.T) {
	in := strings.Replace(string(hfReadFixture(t, "llama-3.1-8b.json")), `"num_hidden_layers": 32,`, "", 1)
	_, _, err := ImportHF("config.json", strings.NewReader(in), "x")
	if want := "config.json: field num_hidden_layers: is required"; err == nil || err.Error() != want {
		t.Errorf("error %v, want %q", err, want)
	}
}

func TestImportHFLenient(t *testing.T) {
	in := strings.Replace(string(hfReadFixture(t, "llama-3.1-8b.json")), `"use_cache": true,`,
		`"use_cache": true, "brand_new_key": {"a": 1},`, 1)
	if _, _, err := ImportHF("config.json", strings.NewReader(in), "x"); err == nil || !strings.Contains(err.Error(), "brand_new_key") {
		t.Fatalf("ImportHF error %v, want one naming brand_new_key", err)
	}
	m, ignored, err := ImportHFLenient("config.json", strings.NewReader(in), "x")
	if err != nil {
		t.Fatalf("ImportHFLenient: %v", err)
	}
	if m.NumLayers != 32 {
		t.Errorf("NumLayers = %d, want 32", m.NumLayers)
	}
	found := false
	for _, k := range ignored {
		found = found || k == "brand_new_key"
	}
	if !found {
		t.Errorf("ignored keys %v do not include brand_new_key", ignored)
	}
	// Lenience is about unknown keys only: wrong types still fail.
	bad := strings.Replace(in, `"hidden_size": 4096,`, `"hidden_size": "4096",`, 1)
	if _, _, err := ImportHFLenient("config.json", strings.NewReader(bad), "x"); err == nil {
		t.Error("ImportHFLenient accepted a string hidden_size")
	}
}

// TestImportHFVariants covers key spellings and defaults the fixtures do
// not: multimodal nesting, dtype, missing head_dim and KV heads, partial
// rotary, awq, Qwen2-MoE shared experts, Gemma 3 patterns, Qwen2 windows.
func TestImportHFVariants(t *testing.T) {
	base := `"architectures": ["LlamaForCausalLM"], "model_type": "llama", "num_hidden_layers": 32,
		"hidden_size": 4096, "intermediate_size": 11008, "num_attention_heads": 32,
		"vocab_size": 32000, "max_position_embeddings": 4096`
	tests := []struct {
		name  string
		json  string
		check func(m *models.Model) bool
	}{
		{"defaults: kv heads, head_dim, bf16, untied", `{` + base + `}`, func(m *models.Model) bool {
			return m.NumKVHeads == 32 && m.HeadDim == 128 && m.DType == hardware.BF16 && !m.TieWordEmbeddings && m.Architecture == "LlamaForCausalLM"
		}},
		{"dtype key", `{` + base + `, "dtype": "float16"}`, func(m *models.Model) bool { return m.DType == hardware.FP16 }},
		{"partial rotary", `{` + base + `, "partial_rotary_factor": 0.75}`, func(m *models.Model) bool { return m.RotaryDim == 96 }},
		{"partial rotary in rope_parameters", `{` + base + `, "rope_parameters": {"rope_theta": 10000, "partial_rotary_factor": 0.5}}`, func(m *models.Model) bool { return m.RotaryDim == 64 }},
		{"awq", `{` + base + `, "quantization_config": {"quant_method": "awq", "bits": 4, "group_size": 128}}`, func(m *models.Model) bool {
			return m.Quantization != nil && m.Quantization.DType == hardware.INT4 && m.Quantization.Method == "awq"
		}},
		{"gptq 8-bit", `{` + base + `, "quantization_config": {"quant_method": "gptq", "bits": 8}}`, func(m *models.Model) bool {
			return m.Quantization != nil && m.Quantization.DType == hardware.INT8
		}},
		{"mistral window on all layers", `{` + base + `, "sliding_window": 4096}`, func(m *models.Model) bool {
			return m.SlidingWindow == 4096 && m.SlidingWindowLayers == 0 && m.NumSlidingLayers() == 32
		}},
		{"use_sliding_window false", `{` + base + `, "sliding_window": 4096, "use_sliding_window": false}`, func(m *models.Model) bool { return m.SlidingWindow == 0 }},
		{"qwen2 max_window_layers", `{` + base + `, "sliding_window": 4096, "use_sliding_window": true, "max_window_layers": 28}`, func(m *models.Model) bool {
			return m.SlidingWindow == 4096 && m.SlidingWindowLayers == 4
		}},
		{"gemma3 pattern", `{` + base + `, "model_type": "gemma3_text", "sliding_window": 1024, "sliding_window_pattern": 6}`, func(m *models.Model) bool {
			return m.SlidingWindowLayers == 32-5 && m.TieWordEmbeddings
		}},
		{"qwen2 bias default", `{` + strings.Replace(base, `"llama"`, `"qwen2"`, 1) + `}`, func(m *models.Model) bool { return m.AttentionBias }},
		{"qwen2-moe shared expert", `{` + base + `, "num_experts": 60, "num_experts_per_tok": 4, "moe_intermediate_size": 1408, "shared_expert_intermediate_size": 5632}`, func(m *models.Model) bool {
			return m.MoE != nil && m.MoE.NumExperts == 60 && m.MoE.NumSharedExperts == 1 && m.MoE.SharedExpertIntermediateSize == 5632 && m.MoE.ExpertIntermediateSize == 1408
		}},
		{"mla without q_lora", `{` + base + `, "kv_lora_rank": 512, "q_lora_rank": null, "qk_nope_head_dim": 128, "qk_rope_head_dim": 64, "v_head_dim": 128}`, func(m *models.Model) bool {
			return m.MLA != nil && m.MLA.QLoRARank == 0 && m.MLA.KVLoRARank == 512
		}},
		{"phi-3-mini-4k", `{"_name_or_path": "Phi-3-mini-4k-instruct", "architectures": ["Phi3ForCausalLM"], "attention_bias": false,
			"attention_dropout": 0.0, "auto_map": {"AutoConfig": "configuration_phi3.Phi3Config"}, "bos_token_id": 1, "embd_pdrop": 0.0,
			"eos_token_id": 32000, "hidden_act": "silu", "hidden_size": 3072, "initializer_range": 0.02, "intermediate_size": 8192,
			"max_position_embeddings": 4096, "model_type": "phi3", "num_attention_heads": 32, "num_hidden_layers": 32,
			"num_key_value_heads": 32, "original_max_position_embeddings": 4096, "pad_token_id": 32000, "resid_pdrop": 0.0,
			"rms_norm_eps": 1e-05, "rope_scaling": null, "rope_theta": 10000.0, "sliding_window": 2047, "tie_word_embeddings": false,
			"torch_dtype": "bfloat16", "transformers_version": "4.40.2", "use_cache": true, "vocab_size": 32064}`, func(m *models.Model) bool {
			return m.HeadDim == 96 && m.NumKVHeads == 32 && m.SlidingWindow == 2047 && m.SlidingWindowLayers == 0
		}},
		{"phi-4-mini partial rotary", `{"architectures": ["Phi3ForCausalLM"], "model_type": "phi3", "full_attn_mod": 1, "interpolate_factor": 1,
			"lm_head_bias": false, "mlp_bias": false, "hidden_size": 3072, "intermediate_size": 8192, "num_attention_heads": 24,
			"num_key_value_heads": 8, "num_hidden_layers": 32, "vocab_size": 200064, "max_position_embeddings": 131072,
			"original_max_position_embeddings": 4096, "partial_rotary_factor": 0.75, "tie_word_embeddings": true,
			"rope_scaling": {"long_factor": [1.0, 1.1], "short_factor": [1.0, 1.0], "type": "longrope"},
			"sliding_window": 262144, "torch_dtype": "bfloat16"}`, func(m *models.Model) bool {
			return m.HeadDim == 128 && m.RotaryDim == 96 && m.TieWordEmbeddings
		}},
		{"multimodal text_config", `{"architectures": ["Mistral3ForConditionalGeneration"], "model_type": "mistral3", "torch_dtype": "bfloat16",
			"image_token_index": 10, "vision_config": {"hidden_size": 1024}, "projector_hidden_act": "gelu",
			"text_config": {"model_type": "mistral", "num_hidden_layers": 40, "hidden_size": 5120, "intermediate_size": 32768,
			"num_attention_heads": 32, "num_key_value_heads": 8, "head_dim": 128, "vocab_size": 131072,
			"max_position_embeddings": 131072, "rope_theta": 1000000000.0, "sliding_window": null}}`, func(m *models.Model) bool {
			return m.NumLayers == 40 && m.HeadDim == 128 && m.Architecture == "Mistral3ForConditionalGeneration" && m.SlidingWindow == 0
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, _, err := ImportHF("config.json", strings.NewReader(tt.json), "x")
			if err != nil {
				t.Fatalf("ImportHF: %v", err)
			}
			if !tt.check(m) {
				t.Errorf("unexpected model %+v (moe %+v, mla %+v, quantization %+v)", *m, m.MoE, m.MLA, m.Quantization)
			}
		})
	}
}

func TestImportHFTooLarge(t *testing.T) {
	big := `{"x": "` + strings.Repeat("a", maxHFConfigBytes) + `"}`
	_, _, err := ImportHF("config.json", strings.NewReader(big), "x")
	if err == nil || !strings.HasPrefix(err.Error(), "config.json: ") || !strings.Contains(err.Error(), "larger than") {
		t.Errorf("error %v, want a size error naming config.json", err)
	}
}

// minimalHF opens a small valid config.json (2 layers) for fuzz seeds.
const minimalHF = `{"num_hidden_layers": 2, "hidden_size": 8, "num_attention_heads": 2, "vocab_size": 4, "max_position_embeddings": 8,
	"intermediate_size": 4, "num_local_experts": 2, "num_experts_per_tok": 1, `

func FuzzImportHF(f *testing.F) {
	for _, fx := range hfFixtures {
		f.Add(hfReadFixture(f, fx.file))
	}
	for _, dir := range []string{"aiconfigurator", "layout"} {
		files, err := filepath.Glob(filepath.Join("testdata", "hf", dir, "*_config.json"))
		if err != nil || len(files) == 0 {
			f.Fatalf("no fixtures in testdata/hf/%s: %v", dir, err)
		}
		for _, file := range files {
			if !strings.HasSuffix(file, "_hf_quant_config.json") {
				f.Add(hfReadFixture(f, dir+"/"+filepath.Base(file)))
			}
		}
	}
	for _, s := range []string{
		`{}`, `null`, `[]`, `"x"`, `{"text_config": {}}`, `{"text_config": null}`,
		`{"num_hidden_layers": 1e300, "hidden_size": -5}`,
		`{"num_hidden_layers": 2, "hidden_size": 8, "num_attention_heads": 3, "vocab_size": 1, "max_position_embeddings": 1}`,
		`{"num_hidden_layers": 2, "hidden_size": 8, "num_attention_heads": 2, "vocab_size": 1, "max_position_embeddings": 1, "intermediate_size": 4, "layer_types": ["sliding_attention", "full_attention"], "sliding_window": 1, "num_experts": 2, "num_experts_per_tok": 3}`,
		`{"quantization_config": {"quant_method": 4}}`,
		// quantization_config shapes, on a minimal valid model
		minimalHF + `"quantization_config": {"quant_method": "fp8", "weight_block_size": [128, "x"]}}`,
		minimalHF + `"quantization_config": {"quant_method": "compressed-tensors", "config_groups": {"g": {"targets": ["Linear"], "weights": {"num_bits": 4, "type": "int", "strategy": "group", "group_size": 0}}}, "ignore": ["re:[", "model.layers.*"]}}`,
		minimalHF + `"quantization_config": {"quant_method": "modelopt", "quant_algo": "NVFP4", "group_size": 16, "exclude_modules": ["*self_attn*"]}}`,
		minimalHF + `"quantization_config": {"quant_method": "gptq", "bits": 8, "group_size": -1}}`,
		minimalHF + `"attn_type_list": [1, 0], "rotary_dim": 2}`,
	} {
		f.Add([]byte(s))
	}
	const name = "fuzz-config.json"
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, importer := range []func(string, *bytes.Reader, string) (*models.Model, []string, error){
			func(n string, r *bytes.Reader, id string) (*models.Model, []string, error) { return ImportHF(n, r, id) },
			func(n string, r *bytes.Reader, id string) (*models.Model, []string, error) {
				return ImportHFLenient(n, r, id)
			},
		} {
			m, _, err := importer(name, bytes.NewReader(data), "fuzz")
			if err != nil {
				if !strings.HasPrefix(err.Error(), name+":") {
					t.Fatalf("error %q does not start with %q", err, name+":")
				}
				var fe *FileError
				if !errors.As(err, &fe) {
					t.Fatalf("error %v is a %T, want *FileError", err, err)
				}
				continue
			}
			if err := m.Validate(); err != nil {
				t.Fatalf("imported model fails Validate: %v", err)
			}
			// The derived figures must not panic either.
			_ = m.Params()
			_ = m.KVBytesPerToken(m.DType, 2)
			_ = m.WeightBytesPerGPU(m.DefaultPrecision(), 2)
		}
	})
}
