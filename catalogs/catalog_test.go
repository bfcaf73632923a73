package catalogs

import (
	"errors"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/headroom-sim/headroom/hardware"
)

// userModel is a user catalog entry whose id is a Hugging Face id the
// built-in catalog already uses.
const userModel = `# user entry
id: MiniMaxAI/MiniMax-M2.5
name: my MiniMax
hf_id: MiniMaxAI/MiniMax-M2.5
architecture: MiniMaxM2ForCausalLM
torch_dtype: bf16
num_hidden_layers: 2
hidden_size: 64
intermediate_size: 32
num_attention_heads: 4
num_key_value_heads: 2
head_dim: 16
vocab_size: 100
max_position_embeddings: 512
moe: {num_experts: 4, num_experts_per_tok: 2, moe_intermediate_size: 32}
`

// TestCatalogDirAliasCannotShadowAnID (issue 23): a catalog directory's
// alias or Hugging Face id that is another model's id (a built-in one's
// too) is refused naming the field, as POST /v1/models refuses it: it
// would make that id resolve to the user's entry without a word.
func TestCatalogDirAliasCannotShadowAnID(t *testing.T) {
	base, err := Builtin()
	if err != nil {
		t.Fatal(err)
	}
	for field, entry := range map[string]string{
		"aliases": strings.Replace(userModel, "id: MiniMaxAI/MiniMax-M2.5", "id: tiny\naliases: [llama-3.1-70b]", 1),
		"hf_id":   strings.Replace(userModel, "hf_id: MiniMaxAI/MiniMax-M2.5", "hf_id: llama-3.1-70b", 1),
	} {
		t.Run(field, func(t *testing.T) {
			c := base.Clone()
			err := c.LoadFS(fstest.MapFS{"models/tiny.yaml": {Data: []byte(entry)}})
			var fe *FileError
			if !errors.As(err, &fe) || fe.Field != field || !strings.Contains(err.Error(), `"llama-3.1-70b" is the id of model`) {
				t.Fatalf("LoadFS = %v, want an aliases error naming the id it would shadow", err)
			}
			if m, _ := c.Model("llama-3.1-70b"); m == nil || m.ID != "llama-3.1-70b" {
				t.Errorf("llama-3.1-70b resolves to %v", m)
			}
		})
	}
}

// TestUserEntriesTakeInheritedNames: a user catalog (a Clone of the
// built-in one) may define a name a built-in entry has; the user's entry
// gets it and the built-in entry keeps its other names. Within one
// catalog a name still belongs to one entry.
func TestUserEntriesTakeInheritedNames(t *testing.T) {
	base, err := Builtin()
	if err != nil {
		t.Fatal(err)
	}
	c := base.Clone()
	if err := c.LoadFS(fstest.MapFS{"models/MiniMaxAI/MiniMax-M2.5.yaml": {Data: []byte(userModel)}}); err != nil {
		t.Fatalf("LoadFS: %v", err)
	}
	for _, name := range []string{"MiniMaxAI/MiniMax-M2.5", "minimaxai/minimax-m2.5"} {
		m, err := c.Model(name)
		if err != nil || m.Name != "my MiniMax" {
			t.Errorf("Model(%q) = %v, %v; want the user's entry", name, m, err)
		}
	}
	if m, err := c.Model("minimax-m2.5"); err != nil || m.ID != "minimax-m2.5" {
		t.Errorf("Model(minimax-m2.5) = %v, %v; want the built-in entry", m, err)
	}
	if m, _ := base.Model("MiniMaxAI/MiniMax-M2.5"); m == nil || m.ID != "minimax-m2.5" {
		t.Errorf("the built-in catalog changed: %v", m)
	}
	// A copy of the user catalog keeps the user's names.
	if m, err := c.Clone().Model("MiniMaxAI/MiniMax-M2.5"); err != nil || m.Name != "my MiniMax" {
		t.Errorf("Clone().Model = %v, %v; want the user's entry", m, err)
	}
	// A second user entry may not take the first one's name.
	second := strings.Replace(userModel, "id: MiniMaxAI/MiniMax-M2.5", "id: other", 1)
	err = c.LoadModels("second.yaml", strings.NewReader(second))
	var fe *FileError
	if !errors.As(err, &fe) || fe.Field != "hf_id" || !strings.Contains(err.Error(), `is the id of model "minimaxai/minimax-m2.5"`) {
		t.Errorf("second entry with the same hf_id: error %v, want an aliases conflict", err)
	}
	// GPUs alike: a user GPU called "h100" takes the alias, h100-sxm stays.
	g := strings.Replace(gpuFuzzBase, "id: test-gpu", "id: h100", 1)
	if err := c.LoadGPUs("g.yaml", strings.NewReader(g)); err != nil {
		t.Fatalf("LoadGPUs: %v", err)
	}
	if got, _ := c.GPU("h100"); got == nil || got.Name != "Test GPU" {
		t.Errorf("GPU(h100) = %v, want the user's", got)
	}
	if got, _ := c.GPU("h100-sxm"); got == nil || got.ID != "h100-sxm" {
		t.Errorf("GPU(h100-sxm) = %v, want the built-in", got)
	}
	// Without Clone (one catalog), the same definitions conflict.
	fresh := New()
	if err := fresh.LoadGPUs("a.yaml", strings.NewReader(strings.Replace(gpuFuzzBase, "aliases: [tg]", "aliases: [h100]", 1))); err != nil {
		t.Fatal(err)
	}
	if err := fresh.LoadGPUs("b.yaml", strings.NewReader(g)); err == nil {
		t.Error("a GPU id equal to another entry's alias in the same catalog was accepted")
	}
}

func TestModelLookupByPath(t *testing.T) {
	c := modelTestCatalog(t)
	tests := []struct{ name, want string }{
		{"/models/models--openai--gpt-oss-120b/snapshots/b5c939de8f754692c1647ca79fbf85e8c1e70f8a", "gpt-oss-120b"},
		{"/root/.cache/huggingface/hub/models--MiniMaxAI--MiniMax-M2.5", "minimax-m2.5"},
		{"/data/Qwen/Qwen3-235B-A22B-FP8/", "qwen3-235b-a22b-fp8"},
		{"/mnt/weights/llama-3.1-8b", "llama-3.1-8b"},
		{"./nvidia/Llama-3.1-8B-Instruct-FP8", "llama-3.1-8b-instruct-fp8"},
		{"  Qwen/Qwen3-235B-A22B  ", "qwen3-235b-a22b"},
	}
	for _, tt := range tests {
		m, err := c.Model(tt.name)
		if err != nil || m.ID != tt.want {
			t.Errorf("Model(%q) = %v, %v; want %s", tt.name, m, err, tt.want)
		}
	}
	for _, name := range []string{"/models/models--acme--unknown/snapshots/x", "acme/gpt-oss-120b", "/"} {
		if _, err := c.Model(name); !errors.Is(err, ErrUnknownModel) {
			t.Errorf("Model(%q) error %v, want ErrUnknownModel", name, err)
		}
	}
}

// TestUnknownSuggestions: the error names close entries, matching typed
// Hugging Face ids as well as catalog ids.
func TestUnknownSuggestions(t *testing.T) {
	c := modelTestCatalog(t)
	tests := []struct{ name, want string }{
		{"MiniMaxAI/MiniMax-M2", "minimax-m2.5"},
		{"Qwen/Qwen3-235B-A22", "qwen3-235b-a22b"},
		{"gpt-oss-12b", "gpt-oss-120b"},
	}
	for _, tt := range tests {
		_, err := c.Model(tt.name)
		if !errors.Is(err, ErrUnknownModel) || !strings.Contains(err.Error(), "did you mean") || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Model(%q) error %v, want ErrUnknownModel suggesting %s", tt.name, err, tt.want)
		}
	}
	g := gpuTestCatalog(t)
	if _, err := g.GPU("b300-sxm6"); !errors.Is(err, ErrUnknownGPU) || !strings.Contains(err.Error(), "b300") {
		t.Errorf("GPU(b300-sxm6) error %v, want ErrUnknownGPU suggesting b300", err)
	}
}

func TestLoadFSNested(t *testing.T) {
	fsys := fstest.MapFS{
		"models/MiniMaxAI/MiniMax-M2.5.yaml": {Data: []byte(userModel)},
		"models/plain.yml":                   {Data: []byte(modelFuzzBase)},
		"models/.store/broken.yaml":          {Data: []byte("not: [valid")},
		"models/.tmp-1.yaml":                 {Data: []byte("not: [valid")},
		"models/notes.txt":                   {Data: []byte("ignored")},
		"gpus/lab/test.yaml":                 {Data: []byte(gpuFuzzBase)},
	}
	c := New()
	if err := c.LoadFS(fsys); err != nil {
		t.Fatalf("LoadFS: %v", err)
	}
	if len(c.Models()) != 2 || len(c.GPUs()) != 1 {
		t.Fatalf("loaded %d models and %d GPUs, want 2 and 1", len(c.Models()), len(c.GPUs()))
	}
	if _, err := c.Model("MiniMaxAI/MiniMax-M2.5"); err != nil {
		t.Error(err)
	}
	// A broken file in a subdirectory is reported with its path.
	fsys["models/org/bad.yaml"] = &fstest.MapFile{Data: []byte("id: [\n")}
	err := New().LoadFS(fsys)
	var fe *FileError
	if !errors.As(err, &fe) || fe.File != "models/org/bad.yaml" {
		t.Errorf("LoadFS error %v, want one naming models/org/bad.yaml", err)
	}
}

func TestModelFile(t *testing.T) {
	good := map[string]string{
		"minimax-m2.5":           "models/minimax-m2.5.yaml",
		"MiniMaxAI/MiniMax-M2.5": "models/MiniMaxAI/MiniMax-M2.5.yaml",
		"a/b/c":                  "models/a/b/c.yaml",
	}
	for id, want := range good {
		if got, err := ModelFile(id); err != nil || got != want {
			t.Errorf("ModelFile(%q) = %q, %v; want %q", id, got, err, want)
		}
	}
	for _, id := range []string{"", "../x", "a/../b", "a//b", "/abs", "a/", ".hidden", "a/.b", `a\b`, "c:x", "a\x00b", "a\nb"} {
		_, err := ModelFile(id)
		var fe *hardware.FieldError
		if !errors.As(err, &fe) || fe.Field != "id" {
			t.Errorf("ModelFile(%q) error %v, want an id field error", id, err)
		}
	}
}
