package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/headroom-sim/headroom/catalogs"
	"github.com/headroom-sim/headroom/hardware"
	"github.com/headroom-sim/headroom/sim/engine"
	"github.com/headroom-sim/headroom/sim/memory"
)

// capacityFlags are the flags of `headroom capacity`.
type capacityFlags struct {
	model, gpu            string
	tp                    int
	weightsDType, kvDType string
	eng                   engine.Config
	prompt, output        int
	fragmentation         float64
	format, catalogDir    string
}

func runCapacity(ctx context.Context, e *env, args []string) error {
	f := capacityFlags{eng: engine.Defaults()}
	fs := newFlagSet("capacity")
	fs.StringVar(&f.model, "model", "llama-3.1-8b", "model id, alias or Hugging Face id")
	fs.StringVar(&f.gpu, "gpu", "h100-sxm", "GPU id or alias")
	fs.IntVar(&f.tp, "tp", 1, "tensor-parallel degree (GPUs per replica)")
	fs.StringVar(&f.weightsDType, "weights-dtype", "", "weights dtype: bf16|fp16|fp8|int8|int4|fp4|mxfp4 (default: the checkpoint's)")
	fs.StringVar(&f.kvDType, "kv-cache-dtype", "auto", "KV-cache dtype: auto|bf16|fp16|fp8|int8")
	fs.Float64Var(&f.eng.GPUMemoryUtilization, "gpu-memory-utilization", f.eng.GPUMemoryUtilization, "fraction of GPU memory vLLM may use")
	fs.IntVar(&f.eng.MaxNumBatchedTokens, "max-num-batched-tokens", 0, "token budget per step (0: vLLM's default for the GPU)")
	fs.IntVar(&f.eng.MaxNumSeqs, "max-num-seqs", 0, "max running sequences (0: vLLM's default for the GPU)")
	fs.IntVar(&f.eng.MaxModelLen, "max-model-len", 0, "max context length (0: the model's max positions)")
	fs.IntVar(&f.eng.BlockSize, "block-size", 0, "KV block size in tokens (0: vLLM's default, 16; 64 for MLA)")
	fs.IntVar(&f.prompt, "prompt-tokens", 0, "prompt length for the max-concurrency answer")
	fs.IntVar(&f.output, "output-tokens", 0, "output length for the max-concurrency answer")
	fs.Float64Var(&f.fragmentation, "fragmentation", 0, "extra KV fragmentation allowance on top of block rounding, in [0, 1)")
	fs.StringVar(&f.format, "output", "table", "output format: table|json")
	fs.StringVar(&f.catalogDir, "catalog-dir", "", "directory of extra catalog entries (gpus/*.yaml, models/*.yaml)")
	pos, err := parseFlags(fs, args, e.stdout)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usagef("unexpected argument %q", pos[0])
	}
	if err := outputFormat(f.format); err != nil {
		return err
	}
	cat, err := loadCatalog(e, f.catalogDir)
	if err != nil {
		return err
	}
	setup, err := capacitySetup(cat, &f)
	if err != nil {
		return err
	}
	rep, err := memory.Analyze(setup, f.prompt, f.output, f.fragmentation)
	if err != nil {
		return fieldAsFlag(err)
	}
	if f.format == "json" {
		if err := writeJSON(e.stdout, rep); err != nil {
			return err
		}
	} else {
		writeCapacityTable(e.stdout, &rep)
	}
	if !rep.Fits {
		hint := "no tensor-parallel degree up to the GPU's node size fits"
		if rep.MinTPThatFits > 0 {
			hint = fmt.Sprintf("smallest tp that fits: %d", rep.MinTPThatFits)
		}
		return &infeasibleError{fmt.Sprintf("%s on %d× %s: %s (%s)", rep.Model, rep.TP, rep.GPU, rep.Reason, hint)}
	}
	return nil
}

// capacitySetup resolves ids, dtypes and engine defaults, mapping every
// problem to the flag that caused it.
func capacitySetup(cat *catalogs.Catalog, f *capacityFlags) (memory.Setup, error) {
	m, err := cat.Model(f.model)
	if err != nil {
		return memory.Setup{}, usagef("--model: %v", err)
	}
	g, err := cat.GPU(f.gpu)
	if err != nil {
		return memory.Setup{}, usagef("--gpu: %v", err)
	}
	var wdt, kvdt hardware.DType
	if f.weightsDType != "" {
		if wdt, err = hardware.ParseDType(f.weightsDType); err != nil {
			return memory.Setup{}, usagef("--weights-dtype: %v", err)
		}
	}
	if f.kvDType != "" && f.kvDType != "auto" {
		if kvdt, err = hardware.ParseDType(f.kvDType); err != nil {
			return memory.Setup{}, usagef("--kv-cache-dtype: %v", err)
		}
		switch kvdt {
		case hardware.BF16, hardware.FP16, hardware.FP8, hardware.INT8, hardware.FP32:
		default:
			return memory.Setup{}, usagef("--kv-cache-dtype: %s is not a KV-cache type (auto, bf16, fp16, fp8, int8)", kvdt)
		}
	}
	if f.tp < 1 {
		return memory.Setup{}, usagef("--tp: must be >= 1")
	}
	eng, err := f.eng.Resolve(m, g)
	if err != nil {
		return memory.Setup{}, fieldAsFlag(err)
	}
	s := memory.Setup{Model: m, GPU: g, Precision: m.ResolvePrecision(wdt, kvdt), TP: f.tp, Engine: eng}
	if !memory.ValidTP(s, f.tp) {
		return s, usagef("--tp: %d does not divide %s's %d attention heads (or its %d KV heads evenly)", f.tp, m.ID, m.NumHeads, m.NumKVHeads)
	}
	return s, nil
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func writeCapacityTable(w io.Writer, r *memory.Report) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "Model\t%s (%.2fB params, %.2fB active)\n", r.Model, float64(r.Params.Total)/1e9, float64(r.Params.Active)/1e9)
	fmt.Fprintf(tw, "GPU\t%d× %s, weights %s, KV cache %s\n", r.TP, r.GPU, r.Precision.Weights, r.Precision.KV)
	fmt.Fprintf(tw, "Engine\tgpu_memory_utilization %.2f, max_num_batched_tokens %d, max_num_seqs %d, max_model_len %d, block_size %d\n",
		r.Engine.GPUMemoryUtilization, r.Engine.MaxNumBatchedTokens, r.Engine.MaxNumSeqs, r.Engine.MaxModelLen, r.Engine.BlockSize)
	fmt.Fprintln(tw, "\nMemory per GPU\tGiB")
	m := r.Memory
	for _, row := range []struct {
		name string
		v    float64
	}{
		{"total (driver)", m.TotalGiBPerGPU},
		{"usable (× utilization)", m.UsableGiBPerGPU},
		{"weights", m.WeightsGiBPerGPU},
		{"peak activation", m.ActivationGiBPerGPU},
		{"non-torch", m.NonTorchGiBPerGPU},
		{"KV cache", m.KVCacheGiBPerGPU},
	} {
		fmt.Fprintf(tw, "  %s\t%8.2f\n", row.name, row.v)
	}
	k := r.KVCache
	fmt.Fprintf(tw, "\nKV cache\t%d blocks of %d tokens = %d tokens per GPU (%.0f bytes/token)\n", k.NumGPUBlocks, k.BlockSize, k.NumTokens, k.BytesPerTokenPerGPU)
	fmt.Fprintf(tw, "  at max_model_len %d\t%.2fx concurrency\n", k.MaxModelLen, k.ConcurrencyAtMaxLenX)
	if c := r.Concurrency; c != nil {
		fmt.Fprintf(tw, "  %d in / %d out\t%.1f blocks/request on average, %d at the end\n", c.PromptTokens, c.OutputTokens, c.BlocksPerRequestMean, c.BlocksPerRequestFinal)
		fmt.Fprintf(tw, "Max concurrency\t%d (limited by %s; %d by KV alone, %d with no preemption at all)\n", c.MaxConcurrency, c.LimitedBy, c.MaxConcurrencyKV, c.MaxConcurrencyNoPreemption)
	} else {
		fmt.Fprintf(tw, "Max concurrency\t%d requests of max_model_len tokens\n", r.MaxConcurrency)
	}
	if r.Fits {
		fmt.Fprintf(tw, "Fits\tyes (smallest tp that fits: %d)\n", r.MinTPThatFits)
	} else {
		fmt.Fprintf(tw, "Fits\tNO: %s\n", r.Reason)
		if r.MinTPThatFits > 0 {
			fmt.Fprintf(tw, "  smallest tp that fits\t%d\n", r.MinTPThatFits)
		}
	}
	tw.Flush()
}

var _ = errors.New
