package measured

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// `vllm bench serve --metadata KEY=VALUE …` (and benchmark_serving.py's)
// writes each pair at the top level of the result, the value a string.
// Keys that say what served the run are read: gpu (also gpus, gpu_type,
// accelerator, hardware) as "[<count>x]<name>" with "_" for spaces
// ("4xNVIDIA_L40S" is four NVIDIA L40S), num_gpus / gpu_count, and the
// deployment's layout (deployment, replicas, prefill_replicas,
// decode_replicas), which is said in a note: the replay serves one
// engine, so a layout of several engines needs --tp and the folder's own
// settings. Other metadata keys are listed as ignored.

// metaGPUKeys name the GPU in --metadata, most specific first.
var metaGPUKeys = []string{"gpu", "gpus", "gpu_type", "gpu_name", "accelerator", "hardware"}

// metaLayoutKeys describe the deployment in --metadata.
var metaLayoutKeys = []string{"deployment", "replicas", "num_replicas", "prefill_replicas", "decode_replicas", "num_gpus", "gpu_count"}

// reMetaGPU splits "4xNVIDIA_L40S" (or "4 x H100", "8*H200") into count and
// name.
var reMetaGPU = regexp.MustCompile(`^\s*(?:([0-9]{1,5})\s*[x×*]\s*)?(.+?)\s*$`)

// benchMetadata reads the --metadata keys of one result object (the
// benchmark's index is stage) into run.
func benchMetadata(p *parser, record int, obj map[string]json.RawMessage, used map[string]bool, run *Run, stage int) error {
	str := func(k string) (string, bool, error) {
		raw, ok := obj[k]
		if !ok || string(raw) == "null" {
			return "", false, nil
		}
		var s string
		if json.Unmarshal(raw, &s) == nil {
			return strings.TrimSpace(s), true, nil
		}
		var n num
		if err := p.unmarshal(record, k, raw, &n); err != nil {
			return "", false, p.errf(record, k, "%s is not a string or a number", strings.TrimSpace(string(raw)))
		}
		return strconv.FormatFloat(n.V, 'f', -1, 64), true, nil
	}
	gpuCount := 0
	for _, k := range metaGPUKeys {
		v, ok, err := str(k)
		if err != nil {
			return err
		}
		if !ok || v == "" {
			continue
		}
		used[k] = true
		if run.GPU != "" {
			continue
		}
		m := reMetaGPU.FindStringSubmatch(v)
		name := strings.Join(strings.Fields(strings.ReplaceAll(m[2], "_", " ")), " ")
		if m[1] != "" {
			gpuCount, _ = strconv.Atoi(m[1])
		}
		run.GPU, run.GPUNote = name, fmt.Sprintf("the result's --metadata %s=%s", k, v)
	}
	var layout []string
	for _, k := range metaLayoutKeys {
		v, ok, err := str(k)
		if err != nil {
			return err
		}
		if !ok {
			continue
		}
		used[k] = true
		layout = append(layout, k+"="+v)
		if (k == "num_gpus" || k == "gpu_count") && gpuCount == 0 {
			gpuCount, _ = strconv.Atoi(v)
		}
	}
	if gpuCount > 0 {
		layout = append([]string{fmt.Sprintf("%d GPUs in all", gpuCount)}, layout...)
	}
	if len(layout) > 0 && stage == 0 {
		run.note("--metadata: %s; how they split into tensor parallelism and engines is not recorded: the replay serves one engine of --tp GPUs (default 1)", strings.Join(layout, ", "))
	}
	return nil
}
