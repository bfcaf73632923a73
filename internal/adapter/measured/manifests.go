package measured

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"regexp"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// The inference-perf demos (kubernetes-sigs/inference-perf demos/, e.g.
// kubecon-na-2025/<variant>/manifests.yaml) publish the Kubernetes
// manifests of the server beside the results: a Deployment whose
// container runs vLLM's OpenAI server. What the replay needs is read from
// it:
//
//   - the container's args and command as vLLM flags: --flag=value,
//     "--flag value" in one item, or --flag followed by its value in the
//     next item; $(VAR) is replaced by the container's env value. Read:
//     --model (the served model; the replay's model), --max-num-seqs,
//     --max-num-batched-tokens, --max-model-len, --block-size,
//     --gpu-memory-utilization, --[no-]enable-prefix-caching,
//     --[no-]enable-chunked-prefill, --[no-]async-scheduling, --dtype,
//     --kv-cache-dtype, --tensor-parallel-size, --data-parallel-size,
//     --quantization and --speculative-config (JSON: method,
//     num_speculative_tokens, model); other flags are listed as ignored;
//   - env VLLM_USE_V1=0: vLLM's V0 engine (scheduler v0);
//   - the image tag (vllm/vllm-openai:v0.9.0): the engine version;
//   - the node selector's accelerator label (GKE's
//     cloud.google.com/gke-accelerator: nvidia-h100-80gb): the GPU;
//   - resources.limits nvidia.com/gpu: the GPUs of one server, and the
//     Deployment's replicas.
//
// Other documents (Service, PodMonitoring) are skipped.

// manifestNames are the file names the server manifests go by.
var manifestNames = []string{"manifests.yaml", "manifest.yaml", "deployment.yaml"}

// maxManifestBytes bounds a manifests file.
const maxManifestBytes = 1 << 20

type k8sDoc struct {
	Kind string `yaml:"kind"`
	Spec struct {
		Replicas *int `yaml:"replicas"`
		Template struct {
			Spec k8sPodSpec `yaml:"spec"`
		} `yaml:"template"`
	} `yaml:"spec"`
}

type k8sPodSpec struct {
	Containers []struct {
		Name    string   `yaml:"name"`
		Image   string   `yaml:"image"`
		Command []string `yaml:"command"`
		Args    []string `yaml:"args"`
		Env     []struct {
			Name  string `yaml:"name"`
			Value string `yaml:"value"`
		} `yaml:"env"`
		Resources struct {
			Limits map[string]string `yaml:"limits"`
		} `yaml:"resources"`
	} `yaml:"containers"`
	NodeSelector map[string]string `yaml:"nodeSelector"`
}

// applyManifests reads the server's manifests beside the results (see
// above) into run; a folder without them is left as it is.
func applyManifests(fsys fs.FS, dir string, run *Run) error {
	name := findAbove(fsys, dir, 1, manifestNames...)
	if name == "" {
		return nil
	}
	b, err := fs.ReadFile(fsys, name)
	if err != nil {
		return err
	}
	if len(b) > maxManifestBytes {
		return fmt.Errorf("%s: larger than 1 MiB", name)
	}
	return readManifests(b, name, run)
}

// readManifests reads the vLLM server of a multi-document manifests file.
func readManifests(b []byte, name string, run *Run) error {
	dec := yaml.NewDecoder(strings.NewReader(string(b)))
	found := false
	for doc := 1; ; doc++ {
		var d k8sDoc
		err := dec.Decode(&d)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("%s: document %d: %v", name, doc, err)
		}
		switch d.Kind {
		case "Deployment", "StatefulSet", "LeaderWorkerSet":
		default:
			continue
		}
		for _, c := range d.Spec.Template.Spec.Containers {
			if !isVLLMContainer(c.Image, c.Command, c.Args) {
				continue
			}
			if found {
				run.note("%s: another vLLM container (%s) is not read", name, c.Name)
				continue
			}
			found = true
			env := map[string]string{}
			for _, e := range c.Env {
				env[e.Name] = e.Value
			}
			if err := manifestServer(name, run, env, c.Image, append(append([]string(nil), c.Command...), c.Args...)); err != nil {
				return err
			}
			if g := c.Resources.Limits["nvidia.com/gpu"]; g != "" {
				run.note("%s: %s GPU(s) per server (resources.limits nvidia.com/gpu)", name, g)
			}
			manifestGPU(name, run, d.Spec.Template.Spec.NodeSelector)
			if r := d.Spec.Replicas; r != nil && *r > 1 {
				run.note("%s: %d replicas of the server behind one Service: the replay serves one", name, *r)
			}
		}
	}
	if !found {
		run.note("%s: no Deployment running vLLM's OpenAI server: the server's settings are unknown", name)
	}
	return nil
}

func isVLLMContainer(image string, cmd, args []string) bool {
	all := strings.ToLower(strings.Join(append(append([]string{image}, cmd...), args...), " "))
	return strings.Contains(all, "vllm")
}

// reEnvRef is a Kubernetes $(VAR) reference in an argument.
var reEnvRef = regexp.MustCompile(`\$\(([A-Za-z_][A-Za-z0-9_]*)\)`)

// reImageTag is a vLLM image's version tag (v0.9.0, 0.11.0, v0.10.1.1).
var reImageTag = regexp.MustCompile(`:v?([0-9]+\.[0-9]+(?:\.[0-9]+)*)(?:[-+@].*)?$`)

// vllmFlags splits a container's command and args into flags: key (with
// "-" as "_", without the leading dashes) to value ("true" for a bare
// flag), in order; positional words (python3, -m, the module, a model
// after `serve`) are returned apart.
func vllmFlags(words []string, env map[string]string) (flags [][2]string, positional []string) {
	var toks []string
	for _, w := range words {
		w = reEnvRef.ReplaceAllStringFunc(w, func(ref string) string {
			if v, ok := env[reEnvRef.FindStringSubmatch(ref)[1]]; ok {
				return v
			}
			return ref
		})
		w = strings.TrimSpace(w)
		if strings.HasPrefix(w, "--") && !strings.Contains(w, "=") {
			if k, v, ok := strings.Cut(w, " "); ok {
				toks = append(toks, k, strings.TrimSpace(v)) // "--quantization bitsandbytes" in one item
				continue
			}
		}
		toks = append(toks, w)
	}
	for i := 0; i < len(toks); i++ {
		t := toks[i]
		if !strings.HasPrefix(t, "--") {
			positional = append(positional, t)
			continue
		}
		k, v, ok := strings.Cut(strings.TrimPrefix(t, "--"), "=")
		if !ok {
			v = "true"
			if i+1 < len(toks) && !strings.HasPrefix(toks[i+1], "--") {
				v, i = toks[i+1], i+1
			}
		}
		flags = append(flags, [2]string{strings.ReplaceAll(k, "-", "_"), v})
	}
	return flags, positional
}

// manifestServer reads the vLLM server's flags, env and image.
func manifestServer(name string, run *Run, env map[string]string, image string, words []string) error {
	flags, positional := vllmFlags(words, env)
	// The engine flags serveParams knows, as JSON strings.
	keys := map[string]json.RawMessage{}
	var ignored []string
	model := ""
	for _, kv := range flags {
		k, v := kv[0], kv[1]
		switch k {
		case "model":
			model = v
			continue
		case "quantization", "q":
			run.Quantization = strings.ToLower(v)
			continue
		case "speculative_config":
			if err := manifestSpeculative(name, run, v); err != nil {
				return err
			}
			continue
		}
		raw, _ := json.Marshal(v)
		keys[flagName(k)] = raw
	}
	if model == "" {
		// `vllm serve MODEL`: the word after serve.
		if i := slices.Index(positional, "serve"); i >= 0 && i+1 < len(positional) {
			model = positional[i+1]
		}
	}
	p := &parser{format: "vllm flags", name: name}
	used := map[string]bool{}
	s, err := serveParams(p, 0, keys, used)
	if err != nil {
		return err
	}
	for _, kv := range flags {
		if f := flagName(kv[0]); keys[f] != nil && !used[f] {
			ignored = append(ignored, f)
		}
	}
	run.Engine.merge(&s.engine)
	if s.tp > 0 {
		run.TP = s.tp
	}
	if s.dp > 0 {
		run.DP = s.dp
	}
	var said []string
	for _, kv := range flags {
		if f := flagName(kv[0]); used[f] {
			if kv[1] == "true" {
				said = append(said, f)
			} else {
				said = append(said, f+"="+kv[1])
			}
		}
	}
	if model != "" {
		if run.Model != "" && !strings.EqualFold(run.Model, model) {
			run.note("%s: the server loaded %s (--model); the per-request records name %s", name, model, run.Model)
		}
		run.Model, run.ModelNote = model, name+": the server's --model"
		if id := env["MODEL_ID"]; id == model {
			run.ModelNote += " (env MODEL_ID)"
		}
		said = append(said, "model "+model)
	}
	if run.Quantization != "" {
		said = append(said, "quantization "+run.Quantization)
	}
	if v, ok := env["VLLM_USE_V1"]; ok {
		switch strings.TrimSpace(v) {
		case "0":
			run.Engine.Scheduler = "v0"
			said = append(said, "VLLM_USE_V1=0 (the V0 engine: scheduler v0)")
		case "1":
			run.Engine.Scheduler = "v1"
			said = append(said, "VLLM_USE_V1=1")
		}
	}
	if m := reImageTag.FindStringSubmatch(image); m != nil {
		run.EngineVersion = m[1]
		said = append(said, "image "+image)
	} else if image != "" {
		run.note("%s: image %s has no version tag: the vLLM version is unknown", name, image)
	}
	run.note("%s: %s", name, strings.Join(said, ", "))
	for _, f := range ignored {
		run.ignore(name+": ", f)
	}
	return nil
}

// flagName is a flag's key as vLLM's help writes it: --max-num-seqs.
func flagName(k string) string { return "--" + strings.ReplaceAll(k, "_", "-") }

// manifestSpeculative reads --speculative-config's JSON.
func manifestSpeculative(name string, run *Run, v string) error {
	var sc struct {
		Method string `json:"method"`
		Model  string `json:"model"`
		Tokens num    `json:"num_speculative_tokens"`
	}
	if err := json.Unmarshal([]byte(v), &sc); err != nil {
		return fmt.Errorf("%s: --speculative-config: %q is not JSON: %v", name, v, err)
	}
	n := count(sc.Tokens.finite())
	if n == 0 || n > 64 {
		return fmt.Errorf("%s: --speculative-config: num_speculative_tokens %v is not a count in [1, 64]", name, sc.Tokens.V)
	}
	run.Engine.Speculative = &Speculative{Method: strings.ToLower(sc.Method), NumSpeculativeTokens: n, DraftModel: sc.Model}
	run.note("%s: speculative decoding %s, %d tokens, draft %s (--speculative-config)", name, sc.Method, n, firstNonEmpty(sc.Model, "the model's own"))
	return nil
}

// gkeAccelerators maps GKE's accelerator node labels to catalog GPU ids.
var gkeAccelerators = map[string]string{
	"nvidia-h100-80gb":      "h100-sxm",
	"nvidia-h100-mega-80gb": "h100-sxm",
	"nvidia-h200-141gb":     "h200",
	"nvidia-b200":           "b200",
	"nvidia-a100-80gb":      "a100-80gb",
	"nvidia-tesla-a100":     "a100-40gb",
	"nvidia-l4":             "l4",
}

// manifestGPU names the GPU from the node selector.
func manifestGPU(name string, run *Run, sel map[string]string) {
	for _, k := range []string{"cloud.google.com/gke-accelerator", "nvidia.com/gpu.product", "node.kubernetes.io/instance-type"} {
		v := sel[k]
		if v == "" {
			continue
		}
		g := v
		if id, ok := gkeAccelerators[strings.ToLower(v)]; ok {
			g = id
		} else if k == "nvidia.com/gpu.product" {
			g = strings.ReplaceAll(v, "-", " ") // NVIDIA-H100-80GB-HBM3
		}
		run.GPU, run.GPUNote = g, fmt.Sprintf("%s's node selector %s: %s", name, k, v)
		return
	}
}
