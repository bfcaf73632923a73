package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/headroom-sim/headroom/catalogs"
	"github.com/headroom-sim/headroom/hardware"
	"github.com/headroom-sim/headroom/internal/study/scenario"
	"github.com/headroom-sim/headroom/internal/study/stepreport"
	"github.com/headroom-sim/headroom/sim/memory"
)

// stepFlags are the flags of `headroom steptime`.
type stepFlags struct {
	sf                                  scenarioFlags
	dp, moeTP, moeEP                    int
	expertParallel, asyncScheduling     bool
	weightsDType, kvCacheDType, routing string
	maxNumSeqs, maxBatched, maxModelLen int
	batch                               stepreport.Batch
	format                              string
}

// stepFieldFlags names the flag that sets each field an explanation's
// errors name.
var stepFieldFlags = map[string]string{
	"model": "--model", "gpu": "--gpu", "tp": "--tp", "dp": "--dp",
	"expert_parallel": "--expert-parallel", stepreport.FieldMoETP: "--moe-tp", stepreport.FieldMoEEP: "--moe-ep",
	"weights_dtype": "--weights-dtype", "kv_cache_dtype": "--kv-cache-dtype",
	"steptime.backend": "--steptime", "steptime.kernel_db": "--kernel-db", "steptime.moe_routing": "--moe-routing",
	"engine.max_num_seqs": "--max-num-seqs", "engine.max_num_batched_tokens": "--max-num-batched-tokens",
	"engine.max_model_len": "--max-model-len", "engine.async_scheduling": "--async-scheduling",
	stepreport.FieldDecodeSeqs: "--batch-decode", stepreport.FieldKVLen: "--kv-len",
	stepreport.FieldPrefillTokens: "--prefill-tokens", stepreport.FieldPrefillContext: "--prefill-context",
	stepreport.FieldPrefillChunks: "--prefill-chunks",
}

func runStepTime(ctx context.Context, e *env, args []string) error {
	var f stepFlags
	fs := newFlagSet("steptime")
	s := &f.sf
	fs.StringVar(&s.file, "scenario", "", "scenario file whose model, GPU, layout, precision, engine and step-time settings to use (its workload is not read)")
	fs.Var(&s.sets, "set", "override any scenario field: --set engine.max_num_seqs=128 (repeatable)")
	fs.StringVar(&s.catalogDir, "catalog-dir", "", "directory of extra catalog entries")
	fs.StringVar(&s.model, "model", "", "model id, alias or Hugging Face id (default: the scenario's, llama-3.1-8b)")
	fs.StringVar(&s.gpu, "gpu", "", "GPU id or alias (default: the scenario's, h100-sxm)")
	fs.IntVar(&s.tp, "tp", 0, "tensor-parallel degree")
	fs.IntVar(&f.dp, "dp", 0, "data-parallel engine ranks (a MoE model's ranks meet in the MoE layers)")
	fs.BoolVar(&f.expertParallel, "expert-parallel", false, "whole routed experts over the tp × dp GPUs (vLLM --enable-expert-parallel)")
	fs.IntVar(&f.moeTP, "moe-tp", 0, "slices of every routed expert (moe_tp × moe_ep = tp × dp)")
	fs.IntVar(&f.moeEP, "moe-ep", 0, "groups the routed experts are spread over (moe_tp × moe_ep = tp × dp)")
	fs.StringVar(&f.weightsDType, "weights-dtype", "", "weights dtype: bf16|fp16|fp8|int8|int4|fp4|mxfp4 (default: the checkpoint's)")
	fs.StringVar(&f.kvCacheDType, "kv-cache-dtype", "", "KV-cache dtype: auto|bf16|fp16|fp8|int8")
	fs.IntVar(&f.batch.DecodeSeqs, "batch-decode", 0, "sequences decoding one token this step")
	fs.IntVar(&f.batch.KVLen, "kv-len", 0, "tokens each decoding sequence attends to (its context, the decoded token included)")
	fs.IntVar(&f.batch.PrefillTokens, "prefill-tokens", 0, "new tokens of each prefill chunk")
	fs.IntVar(&f.batch.PrefillContextTokens, "prefill-context", 0, "tokens already cached before each prefill chunk")
	fs.IntVar(&f.batch.PrefillChunks, "prefill-chunks", 0, "prefill chunks in the step (default 1 with --prefill-tokens)")
	fs.BoolVar(&f.batch.PrefillPartial, "prefill-partial", false, "the chunks do not complete their prompts (no token sampled for them)")
	fs.StringVar(&s.backend, "steptime", "", "step-time backend: table (measured kernels where they cover a shape) or formula")
	fs.StringVar(&s.kernelDB, "kernel-db", "", "measured kernel latencies laid out like AIConfigurator's perf database (<system>/<op>/<framework>/<version>/*.parquet), for the table backend")
	fs.StringVar(&f.routing, "moe-routing", "", "fused-MoE routing the table backend reads: balanced|power_law_1.2|power_law_1.01")
	fs.StringVar(&s.calibration, "calibration", "", "step-time profile from headroom calibrate")
	fs.IntVar(&f.maxNumSeqs, "max-num-seqs", 0, "max running sequences (default: vLLM's for the GPU); with --max-num-batched-tokens it sets the CUDA-graph capture size")
	fs.IntVar(&f.maxBatched, "max-num-batched-tokens", 0, "token budget per step (default: vLLM's for the GPU)")
	fs.IntVar(&f.maxModelLen, "max-model-len", 0, "max context length (default: the model's)")
	fs.BoolVar(&f.asyncScheduling, "async-scheduling", true, "overlap the engine's CPU work with the GPU (vLLM --async-scheduling; =false turns it off)")
	fs.StringVar(&f.format, "output", "table", "output format: table|json")
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
	given := givenFlags(fs)
	req, err := f.request(e, given)
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	rep, err := stepreport.Explain(req.req, req.env)
	if err != nil {
		return stepError(err)
	}
	if f.format == "json" {
		return writeJSON(e.stdout, rep)
	}
	writeStepTable(e.stdout, rep)
	return nil
}

type stepRequest struct {
	req stepreport.Request
	env scenario.Env
}

// request turns the flags into an explanation request: the scenario (the
// file or the default) with the flags as overrides, resolved as
// `headroom simulate` resolves it.
func (f *stepFlags) request(e *env, given map[string]bool) (*stepRequest, error) {
	for _, c := range []struct {
		flag string
		v    int
	}{{"tp", f.sf.tp}, {"dp", f.dp}, {"moe-tp", f.moeTP}, {"moe-ep", f.moeEP}, {"max-num-seqs", f.maxNumSeqs},
		{"max-num-batched-tokens", f.maxBatched}, {"max-model-len", f.maxModelLen}, {"prefill-chunks", f.batch.PrefillChunks}} {
		if given[c.flag] && c.v < 1 {
			return nil, usagef("--%s: must be >= 1, got %d", c.flag, c.v)
		}
	}
	// The backend and routing flags are checked as the scenario checks them,
	// so that their errors name the flag rather than a field of the
	// document the flags become.
	check := scenario.Default()
	check.StepTime.Backend, check.StepTime.MoERouting = f.sf.backend, f.routing
	if err := check.Validate(); err != nil {
		return nil, stepError(err)
	}
	var sets []string
	add := func(flag, format string, v any) {
		if given[flag] {
			sets = append(sets, fmt.Sprintf(format, v))
		}
	}
	add("dp", "dp=%d", f.dp)
	add("expert-parallel", "expert_parallel=%v", f.expertParallel)
	add("weights-dtype", "weights_dtype=%s", f.weightsDType)
	add("kv-cache-dtype", "kv_cache_dtype=%s", f.kvCacheDType)
	add("moe-routing", "steptime.moe_routing=%s", f.routing)
	add("max-num-seqs", "engine.max_num_seqs=%d", f.maxNumSeqs)
	add("max-num-batched-tokens", "engine.max_num_batched_tokens=%d", f.maxBatched)
	add("max-model-len", "engine.max_model_len=%d", f.maxModelLen)
	add("async-scheduling", "engine.async_scheduling=%v", f.asyncScheduling)
	s := f.sf
	s.sets = append(sets, s.sets...)
	cat, err := loadCatalog(e, s.catalogDir)
	if err != nil {
		return nil, err
	}
	sc, env, err := decodeScenario(e, cat, &s)
	if err != nil {
		return nil, err
	}
	return &stepRequest{req: stepreport.Request{Scenario: sc, Batch: f.batch, MoETP: f.moeTP, MoEEP: f.moeEP}, env: env}, nil
}

// stepError names the flag behind an explanation's error: bad values and
// unknown ids exit 2, a model that does not fit exits 3.
func stepError(err error) error {
	var fe *hardware.FieldError
	msg := err.Error()
	switch {
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return err
	case errors.Is(err, memory.ErrDoesNotFit):
		return &infeasibleError{Msg: msg}
	case errors.As(err, &fe):
		return usagef("%s: %s", stepFlagOf(fe.Field), fe.Reason)
	case errors.Is(err, catalogs.ErrUnknownModel), errors.Is(err, catalogs.ErrUnknownGPU),
		strings.HasPrefix(msg, "calibration: "):
		if field, rest, ok := strings.Cut(msg, ": "); ok {
			return usagef("%s: %s", stepFlagOf(field), rest)
		}
	}
	return scenarioError(err)
}

// stepFlagOf is the flag that sets field, or the field's own name when no
// flag does (a --set or scenario file value).
func stepFlagOf(field string) string {
	if fl, ok := stepFieldFlags[field]; ok {
		return fl
	}
	if field == "calibration" || strings.HasPrefix(field, "calibration.") {
		return "--calibration"
	}
	return field
}
