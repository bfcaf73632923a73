package measured

import (
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"path"

	"github.com/headroom-sim/headroom/sim/workload"
)

// llmsMeta is the part of LLMServingSim's bench meta.json Headroom uses.
type llmsMeta struct {
	Model       string `json:"model"`
	VLLMVersion string `json:"vllm_version"`
	EngineArgs  struct {
		TP                  int     `json:"tensor_parallel_size"`
		DP                  int     `json:"data_parallel_size"`
		EP                  bool    `json:"enable_expert_parallel"`
		MaxNumSeqs          int     `json:"max_num_seqs"`
		MaxNumBatchedTokens int     `json:"max_num_batched_tokens"`
		MaxModelLen         *int    `json:"max_model_len"`
		DType               string  `json:"dtype"`
		KVCacheDType        string  `json:"kv_cache_dtype"`
		GPUMemUtil          float64 `json:"gpu_memory_utilization"`
	} `json:"engine_kwargs"`
	DatasetPath string `json:"dataset_path"`
	KVCache     *struct {
		NumGPUBlocks        int     `json:"num_gpu_blocks"`
		BlockSize           int     `json:"block_size"`
		GPUMemUtil          float64 `json:"gpu_memory_utilization"`
		EnablePrefixCaching *bool   `json:"enable_prefix_caching"`
	} `json:"kv_cache"`
	Hardware *struct {
		DeviceName  string `json:"device_name"`
		TotalMemory int64  `json:"device_total_memory_bytes"`
		DeviceCount int    `json:"device_count"`
	} `json:"hardware"`
	Resolved *struct {
		Scheduler *struct {
			AsyncScheduling      *bool `json:"async_scheduling"`
			EnableChunkedPrefill *bool `json:"enable_chunked_prefill"`
		} `json:"scheduler_config"`
	} `json:"resolved_config"`
}

// llmsRequest is one line of LLMServingSim's requests.jsonl: arrival_time
// is epoch seconds at the frontend, the *_ts stamps are the engine's
// monotonic clock.
type llmsRequest struct {
	ID         string   `json:"request_id"`
	InputToks  int      `json:"input_toks"`
	OutputToks int      `json:"output_toks"`
	Arrival    *float64 `json:"arrival_time"`
	Queued     *float64 `json:"queued_ts"`
	Scheduled  *float64 `json:"scheduled_ts"`
	FirstToken *float64 `json:"first_token_ts"`
	LastToken  *float64 `json:"last_token_ts"`
}

// llmsTokenBlock is the block size used to hash the prompt token ids of an
// LLMServingSim workload (vLLM's default KV block size, so shared prefixes
// map onto shared blocks exactly).
const llmsTokenBlock = workload.LLMServingSimBlockTokens

// IsLLMServingSimDir reports whether dir is an LLMServingSim bench run:
// meta.json and requests.jsonl in it, or in its vllm/ folder (the layout
// of LLMServingSim's repository, bench/examples/<GPU>/<model>/).
func IsLLMServingSimDir(fsys fs.FS, dir string) bool {
	for _, d := range []string{dir, path.Join(dir, "vllm")} {
		if fileExists(fsys, path.Join(d, "meta.json")) && fileExists(fsys, path.Join(d, "requests.jsonl")) {
			return true
		}
	}
	return false
}

// LoadLLMServingSim reads an LLMServingSim bench run directory (meta.json,
// requests.jsonl, config.json) from fsys. dir is the folder that holds
// them or, as LLMServingSim's repository lays its examples out, the
// <GPU>/<model> folder with the cluster config (config.json) above the
// vllm/ folder that holds meta.json and requests.jsonl; the run is then
// named <GPU>/<model>. The GPU is meta.json's hardware.device_name, else
// config.json's first instance's hardware. When the workload file meta.json
// names is found in a workloads/ folder beside the run or up to three
// levels above it, prompt token ids give exact prefix identities. Times:
// TTFT = first_token_ts − queued_ts and E2E = last_token_ts − queued_ts
// (the engine's own view, as the bench's summary.txt reports them); send
// times come from arrival_time.
func LoadLLMServingSim(fsys fs.FS, dir string) (*Run, error) {
	runName := path.Base(dir)
	cfgDirs := []string{dir}
	if !fileExists(fsys, path.Join(dir, "meta.json")) && fileExists(fsys, path.Join(dir, "vllm", "meta.json")) {
		if p := path.Dir(dir); p != "." {
			runName = path.Base(p) + "/" + runName
		}
		cfgDirs = append(cfgDirs, path.Join(dir, "vllm"))
		dir = path.Join(dir, "vllm")
	} else {
		cfgDirs = append(cfgDirs, path.Dir(dir))
	}
	name := func(f string) string { return path.Join(dir, f) }
	var meta llmsMeta
	if err := readJSON(fsys, name("meta.json"), &meta); err != nil {
		return nil, err
	}
	run := &Run{
		Name: runName, Format: "llmservingsim", Model: meta.Model, ExpertParallel: meta.EngineArgs.EP,
		TP: max(meta.EngineArgs.TP, 1), DP: max(meta.EngineArgs.DP, 1), EngineVersion: meta.VLLMVersion,
		ServerSide: true, HashTokens: llmsTokenBlock,
	}
	e := &run.Engine
	e.MaxNumSeqs, e.MaxNumBatchedTokens = meta.EngineArgs.MaxNumSeqs, meta.EngineArgs.MaxNumBatchedTokens
	if meta.EngineArgs.MaxModelLen != nil {
		e.MaxModelLen = *meta.EngineArgs.MaxModelLen
	}
	e.DType, e.KVCacheDType, e.GPUMemoryUtilization = meta.EngineArgs.DType, meta.EngineArgs.KVCacheDType, meta.EngineArgs.GPUMemUtil
	if kv := meta.KVCache; kv != nil {
		run.LoggedBlocks, e.BlockSize = kv.NumGPUBlocks, kv.BlockSize
		e.GPUMemoryUtilization = kv.GPUMemUtil
		e.EnablePrefixCaching = kv.EnablePrefixCaching
	}
	if hw := meta.Hardware; hw != nil {
		run.GPU, run.GPUMemoryBytes = hw.DeviceName, hw.TotalMemory
		run.GPUNote = "meta.json hardware.device_name"
	}
	if r := meta.Resolved; r != nil && r.Scheduler != nil {
		e.AsyncScheduling, e.EnableChunkedPrefill = r.Scheduler.AsyncScheduling, r.Scheduler.EnableChunkedPrefill
	}
	for _, d := range cfgDirs {
		if run.GPU != "" {
			break
		}
		var cfg struct {
			Nodes []struct {
				Instances []struct {
					Hardware string `json:"hardware"`
				} `json:"instances"`
			} `json:"nodes"`
		}
		cf := path.Join(d, "config.json")
		if !fileExists(fsys, cf) {
			continue
		}
		if err := readJSON(fsys, cf, &cfg); err != nil {
			return nil, err
		}
		if len(cfg.Nodes) > 0 && len(cfg.Nodes[0].Instances) > 0 && cfg.Nodes[0].Instances[0].Hardware != "" {
			run.GPU = cfg.Nodes[0].Instances[0].Hardware
			run.GPUNote = "config.json instances[0].hardware"
		}
	}

	f, err := fsys.Open(name("requests.jsonl"))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	// The requests file is read as `inspect` and `validate` read it
	// alone (the llmservingsim format): one reader of it.
	reqs, err := Import(f, name("requests.jsonl"), "llmservingsim")
	if err != nil {
		return nil, err
	}
	run.Requests = reqs.Requests
	if meta.DatasetPath != "" {
		for up, d := 0, path.Dir(dir); up < 4; up, d = up+1, path.Dir(d) {
			wl := path.Join(d, "workloads", path.Base(meta.DatasetPath))
			if !fileExists(fsys, wl) {
				if d == "." {
					break
				}
				continue
			}
			wf, err := fsys.Open(wl)
			if err != nil {
				return nil, err
			}
			err = attachTokenHashes(wf, wl, run)
			wf.Close()
			if err != nil {
				return nil, err
			}
			break
		}
	}
	run.normalise()
	return run, nil
}

// attachTokenHashes reads the run's workload file (LLMServingSim's
// workload JSONL, one line per request in request order, read as
// `simulate` reads it: workload.ParseTraceInOrder) and gives each
// request whose prompt length agrees the workload's hashes of its prompt
// token ids, one per llmsTokenBlock tokens.
func attachTokenHashes(r io.Reader, name string, run *Run) error {
	recs, err := workload.ParseTraceInOrder(r, workload.FormatLLMServingSim, name)
	if err != nil {
		return err
	}
	for i := range min(len(recs), len(run.Requests)) {
		if recs[i].InputTokens == run.Requests[i].InputTokens && recs[i].HashIDs != nil {
			run.Requests[i].HashIDs = recs[i].HashIDs
		}
	}
	return nil
}

func readJSON(fsys fs.FS, name string, v any) error {
	b, err := fs.ReadFile(fsys, name)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	return nil
}
