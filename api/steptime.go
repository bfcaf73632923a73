package api

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/headroom-sim/headroom/internal/study/scenario"
	"github.com/headroom-sim/headroom/internal/study/stepreport"
)

// StepTimeRequest is the body of POST /v1/steptime: the flags of `headroom
// steptime`, named as in the scenario, and the batch whose step to explain.
type StepTimeRequest struct {
	// Model is a catalog id, alias or Hugging Face id.
	Model string `json:"model" binding:"required,max=256" example:"llama-3.1-8b"`
	// GPU is a catalog id or alias.
	GPU string `json:"gpu" binding:"required,max=256" example:"h100-sxm"`
	// TP is the tensor-parallel degree.
	TP int `json:"tp" binding:"omitempty,min=1,max=1024" default:"1" example:"1"`
	// DP is the data-parallel engine ranks of the replica (a MoE model's
	// ranks meet in the MoE layers).
	DP int `json:"dp" binding:"omitempty,min=1,max=1024" default:"1"`
	// ExpertParallel spreads whole routed experts over the tp × dp GPUs.
	ExpertParallel bool `json:"expert_parallel"`
	// MoETP × MoEEP split the routed experts over the tp × dp GPUs
	// explicitly (one alone: the other follows); not with expert_parallel.
	MoETP int `json:"moe_tp" binding:"omitempty,min=1,max=1048576"`
	MoEEP int `json:"moe_ep" binding:"omitempty,min=1,max=1048576"`
	// WeightsDType overrides the checkpoint's weights type.
	WeightsDType string `json:"weights_dtype" binding:"omitempty,oneof=bf16 fp16 fp32 fp8 int8 int4 fp4 mxfp4" example:"bf16"`
	// KVCacheDType is auto (follows the weights) or a KV-cache type.
	KVCacheDType string `json:"kv_cache_dtype" binding:"omitempty,oneof=auto bf16 fp16 fp32 fp8 int8" default:"auto"`
	// Calibration names a stored calibration (POST /v1/calibrations)
	// whose step-time profile to use.
	Calibration string `json:"calibration" binding:"omitempty,max=64" example:"k3vj4cmbvw3xgz6y2m5z"`
	// StepTime chooses the backend, as a scenario's steptime section.
	StepTime StepTimeSpec `json:"steptime"`
	// Engine holds the engine settings the step depends on; zero means
	// vLLM's default for this GPU and model.
	Engine StepTimeEngine `json:"engine"`
	// Batch is the step to explain.
	Batch StepBatch `json:"batch"`
}

// StepTimeSpec is a scenario's steptime section.
type StepTimeSpec struct {
	// Backend is table (measured kernels where the tables cover a shape)
	// or formula; default formula (table when kernel_db is given).
	Backend string `json:"backend" binding:"omitempty,oneof=table formula" example:"table"`
	// KernelDB names a directory under the server's kernel_db_dir (400
	// when the server sets none); "" reads the built-in measurements.
	KernelDB string `json:"kernel_db" binding:"omitempty,max=1024"`
	// MoERouting is the fused-MoE routing the table backend reads.
	MoERouting string `json:"moe_routing" binding:"omitempty,oneof=balanced power_law_1.2 power_law_1.01 random" default:"power_law_1.2"`
}

// StepTimeEngine is the engine part of a step-time question.
type StepTimeEngine struct {
	GPUMemoryUtilization float64 `json:"gpu_memory_utilization" binding:"omitempty,gt=0,lte=1" default:"0.9"`
	// MaxNumSeqs and MaxNumBatchedTokens bound the batch and set the
	// CUDA-graph capture size, min(2 × max_num_seqs, 512,
	// max_num_batched_tokens).
	MaxNumSeqs          int `json:"max_num_seqs" binding:"omitempty,min=1,max=1048576" example:"256"`
	MaxNumBatchedTokens int `json:"max_num_batched_tokens" binding:"omitempty,min=1,max=16777216" example:"8192"`
	MaxModelLen         int `json:"max_model_len" binding:"omitempty,min=1,max=16777216"`
	BlockSize           int `json:"block_size" binding:"omitempty,oneof=1 8 16 32 64 128 256"`
	// AsyncScheduling (default true) hides part of the CPU time behind the
	// GPU.
	AsyncScheduling      *bool `json:"async_scheduling" default:"true"`
	EnableChunkedPrefill *bool `json:"enable_chunked_prefill" default:"true"`
}

// StepBatch is the step to explain: sequences decoding one token each at
// kv_len tokens of context, and prefill chunks of prefill_tokens new tokens
// after prefill_context_tokens cached ones. It must not be empty.
type StepBatch struct {
	// DecodeSeqs sequences decode one token this step.
	DecodeSeqs int `json:"decode_seqs" binding:"min=0,max=16777216" example:"64"`
	// KVLen is the tokens each decoding sequence attends to, the decoded
	// one included (required with decode_seqs).
	KVLen int `json:"kv_len" binding:"min=0,max=16777216" example:"2048"`
	// PrefillTokens is each prefill chunk's new tokens.
	PrefillTokens int `json:"prefill_tokens" binding:"min=0,max=16777216" example:"512"`
	// PrefillContextTokens are cached before each chunk.
	PrefillContextTokens int `json:"prefill_context_tokens" binding:"min=0,max=16777216"`
	// PrefillChunks is the number of chunks (default 1 with
	// prefill_tokens).
	PrefillChunks int `json:"prefill_chunks" binding:"omitempty,min=1,max=1048576" default:"1"`
	// PrefillCompletes says the chunks end their prompts, so the step
	// samples a token for each (default true).
	PrefillCompletes *bool `json:"prefill_completes" default:"true"`
}

// request is the domain's question: the default scenario with the
// request's settings.
func (r *StepTimeRequest) request() stepreport.Request {
	sc := scenario.Default()
	sc.Model, sc.GPU = r.Model, r.GPU
	if r.TP > 0 {
		sc.TP = r.TP
	}
	sc.DP, sc.ExpertParallel = r.DP, r.ExpertParallel
	sc.WeightsDType = r.WeightsDType
	if r.KVCacheDType != "" {
		sc.KVCacheDType = r.KVCacheDType
	}
	sc.Calibration = r.Calibration
	sc.StepTime = scenario.StepTimeSpec{Backend: r.StepTime.Backend, KernelDB: r.StepTime.KernelDB, MoERouting: r.StepTime.MoERouting}
	e := r.Engine
	if e.GPUMemoryUtilization > 0 {
		sc.Engine.GPUMemoryUtilization = e.GPUMemoryUtilization
	}
	sc.Engine.MaxNumSeqs, sc.Engine.MaxNumBatchedTokens = e.MaxNumSeqs, e.MaxNumBatchedTokens
	sc.Engine.MaxModelLen, sc.Engine.BlockSize = e.MaxModelLen, e.BlockSize
	if e.AsyncScheduling != nil {
		sc.Engine.AsyncScheduling = *e.AsyncScheduling
	}
	if e.EnableChunkedPrefill != nil {
		sc.Engine.EnableChunkedPrefill = *e.EnableChunkedPrefill
	}
	b := r.Batch
	return stepreport.Request{Scenario: sc, MoETP: r.MoETP, MoEEP: r.MoEEP, Batch: stepreport.Batch{
		DecodeSeqs: b.DecodeSeqs, KVLen: b.KVLen, PrefillTokens: b.PrefillTokens, PrefillContextTokens: b.PrefillContextTokens,
		PrefillChunks: b.PrefillChunks, PrefillPartial: b.PrefillCompletes != nil && !*b.PrefillCompletes,
	}}
}

// steptime godoc
//
//	@Summary		Explain one engine step
//	@Description	The answer of `headroom steptime`: every kernel of one engine step (a batch of sequences decoding at a KV length and prefill chunks after cached tokens) with its predicted time, what bounds it (compute, memory, link, launch/cpu), the source of its time (a kernel table's measured shape, an interpolation between measured shapes, or the fitted formula and its profile) and, where the table holds the exact shape, the measured latency beside the prediction; then the totals per op kind and per bound, GPU and CPU time, the CPU time async scheduling hides, the step's wall time, and the throughput and (for a pure decode batch) the TPOT it implies. The scenario resolves as for POST /v1/simulate (vLLM's defaults, the built-in kernel tables for steptime.backend table); steptime.kernel_db names a directory under the server's kernel_db_dir, and is refused (400) when the server sets none. A batch the engine could not run in one step (beyond max_num_seqs, max_num_batched_tokens, max_model_len or the KV cache) is a 400 naming the batch field.
//	@Tags			simulate
//	@Accept			json
//	@Produce		json,application/problem+json
//	@Param			request	body		StepTimeRequest	true	"the model, layout, engine settings and batch"
//	@Success		200		{object}	stepreport.Report
//	@Failure		400		{object}	Problem	"malformed or invalid (errors lists the fields)"
//	@Failure		404		{object}	Problem	"unknown model, GPU or calibration"
//	@Failure		413		{object}	Problem	"body too large"
//	@Failure		422		{object}	Problem	"the model does not fit"
//	@Security		BearerToken
//	@Router			/v1/steptime [post]
func (s *Server) steptime(c *gin.Context) {
	var req StepTimeRequest
	if err := s.bindJSON(c, &req); err != nil {
		s.fail(c, err)
		return
	}
	rep, err := s.engine.StepTime(req.request(), s.runEnv(0))
	if err != nil {
		s.fail(c, err)
		return
	}
	s.respond(c, http.StatusOK, rep)
}
