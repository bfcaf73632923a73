package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/headroom-sim/headroom/catalogs"
	"github.com/headroom-sim/headroom/hardware"
	"github.com/headroom-sim/headroom/internal/study/scenario"
	"github.com/headroom-sim/headroom/sim/memory"
)

func runCapacity(ctx context.Context, e *env, args []string) error {
	c := scenario.DefaultCapacity()
	var format, catalogDir string
	fs := newFlagSet("capacity")
	fs.StringVar(&c.Model, "model", c.Model, "model id, alias or Hugging Face id")
	fs.StringVar(&c.GPU, "gpu", c.GPU, "GPU id or alias")
	fs.IntVar(&c.TP, "tp", c.TP, "tensor-parallel degree (GPUs per replica)")
	fs.StringVar(&c.WeightsDType, "weights-dtype", "", "weights dtype: bf16|fp16|fp8|int8|int4|fp4|mxfp4 (default: the checkpoint's)")
	fs.StringVar(&c.KVCacheDType, "kv-cache-dtype", c.KVCacheDType, "KV-cache dtype: auto|bf16|fp16|fp8|int8")
	fs.Float64Var(&c.Engine.GPUMemoryUtilization, "gpu-memory-utilization", c.Engine.GPUMemoryUtilization, "fraction of GPU memory vLLM may use")
	fs.IntVar(&c.Engine.MaxNumBatchedTokens, "max-num-batched-tokens", 0, "token budget per step (0: vLLM's default for the GPU)")
	fs.IntVar(&c.Engine.MaxNumSeqs, "max-num-seqs", 0, "max running sequences (0: vLLM's default for the GPU)")
	fs.IntVar(&c.Engine.MaxModelLen, "max-model-len", 0, "max context length (0: the model's max positions)")
	fs.IntVar(&c.Engine.BlockSize, "block-size", 0, "KV block size in tokens (0: vLLM's default, 16; 64 for MLA)")
	fs.IntVar(&c.PromptTokens, "prompt-tokens", 0, "prompt length for the max-concurrency answer")
	fs.IntVar(&c.OutputTokens, "output-tokens", 0, "output length for the max-concurrency answer")
	fs.Float64Var(&c.Fragmentation, "fragmentation", 0, "extra KV fragmentation allowance on top of block rounding, in [0, 1)")
	fs.StringVar(&format, "output", "table", "output format: table|json")
	fs.StringVar(&catalogDir, "catalog-dir", "", "directory of extra catalog entries (gpus/*.yaml, models/*.yaml)")
	var calibration string
	fs.StringVar(&calibration, "calibration", "", "calibration file from `headroom calibrate` (applies its memory calibration)")
	pos, err := parseFlags(fs, args, e.stdout)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usagef("unexpected argument %q", pos[0])
	}
	if err := outputFormat(format); err != nil {
		return err
	}
	cat, err := loadCatalog(e, catalogDir)
	if err != nil {
		return err
	}
	if calibration != "" {
		p, err := loadProfileFile(calibration)
		if err != nil {
			return usagef("--calibration: %v", err)
		}
		c.NonTorchAdjustGiB = p.NonTorchAdjustGiB
	}
	rep, err := scenario.Capacity(cat, c)
	if err != nil {
		return capacityError(err)
	}
	if format == "json" {
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
		return &infeasibleError{Msg: fmt.Sprintf("%s on %d× %s: %s (%s)", rep.Model, rep.TP, rep.GPU, rep.Reason, hint)}
	}
	return nil
}

// capacityError names the flag behind a capacity error.
func capacityError(err error) error {
	var fe *hardware.FieldError
	switch {
	case errors.As(err, &fe):
		return usagef("%s: %s", flagName(strings.TrimPrefix(fe.Field, "engine.")), fe.Reason)
	case errors.Is(err, catalogs.ErrUnknownModel):
		return usagef("--model: %v", errors.Unwrap(err))
	case errors.Is(err, catalogs.ErrUnknownGPU):
		return usagef("--gpu: %v", errors.Unwrap(err))
	}
	return err
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
