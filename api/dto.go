package api

import (
	"encoding/json"
	"time"

	"github.com/headroom-sim/headroom/models"
	"github.com/headroom-sim/headroom/sim/scenario"
)

// Request and response bodies. Their `binding` tags are checked at run time
// (validator/v10) and read by swag into the OpenAPI schema: one tag, two
// uses. Domain types carry no such tags.

// CapacityRequest is the body of POST /v1/capacity: the flags of
// `headroom capacity`, named as in the scenario.
type CapacityRequest struct {
	// Model is a catalog id, alias or Hugging Face id.
	Model string `json:"model" binding:"required,max=256" example:"llama-3.1-70b"`
	// GPU is a catalog id or alias.
	GPU string `json:"gpu" binding:"required,max=256" example:"h100-sxm"`
	// TP is the tensor-parallel degree; it must divide the model's
	// attention heads (and its KV heads, or be a multiple of them).
	TP int `json:"tp" binding:"omitempty,min=1,max=1024" default:"1" example:"4"`
	// WeightsDType overrides the checkpoint's weights type.
	WeightsDType string `json:"weights_dtype" binding:"omitempty,oneof=bf16 fp16 fp32 fp8 int8 int4 fp4 mxfp4" example:"bf16"`
	// KVCacheDType is auto (follows the weights) or a KV-cache type.
	KVCacheDType string `json:"kv_cache_dtype" binding:"omitempty,oneof=auto bf16 fp16 fp32 fp8 int8" default:"auto"`
	// Engine holds vLLM's memory-relevant settings; zero means vLLM's
	// default for this GPU and model.
	Engine CapacityEngine `json:"engine"`
	// PromptTokens and OutputTokens shape the max-concurrency answer (both
	// 0: vLLM's figure for max_model_len-token requests); their sum must
	// not exceed max_model_len.
	PromptTokens int `json:"prompt_tokens" binding:"min=0,max=16777216" example:"2048"`
	OutputTokens int `json:"output_tokens" binding:"min=0,max=16777216" example:"512"`
	// Fragmentation is an extra KV allowance on top of block rounding, in
	// [0, 1).
	Fragmentation float64 `json:"fragmentation" binding:"gte=0,lt=1" example:"0"`
}

// CapacityEngine is the engine part of a capacity question.
type CapacityEngine struct {
	GPUMemoryUtilization float64 `json:"gpu_memory_utilization" binding:"omitempty,gt=0,lte=1" default:"0.9" example:"0.9"`
	MaxNumSeqs           int     `json:"max_num_seqs" binding:"omitempty,min=1,max=1048576" example:"256"`
	// MaxNumBatchedTokens must be >= max_num_seqs when both are given.
	MaxNumBatchedTokens int `json:"max_num_batched_tokens" binding:"omitempty,min=1,max=16777216" example:"8192"`
	MaxModelLen         int `json:"max_model_len" binding:"omitempty,min=1,max=16777216" example:"8192"`
	BlockSize           int `json:"block_size" binding:"omitempty,min=1,max=1024" example:"16"`
	// EnableChunkedPrefill (default true) changes the default
	// max_num_batched_tokens.
	EnableChunkedPrefill *bool `json:"enable_chunked_prefill" default:"true"`
}

// spec turns the request into the domain's capacity question.
func (r *CapacityRequest) spec() scenario.CapacitySpec {
	c := scenario.DefaultCapacity()
	c.Model, c.GPU = r.Model, r.GPU
	if r.TP > 0 {
		c.TP = r.TP
	}
	c.WeightsDType = r.WeightsDType
	if r.KVCacheDType != "" {
		c.KVCacheDType = r.KVCacheDType
	}
	e := r.Engine
	if e.GPUMemoryUtilization > 0 {
		c.Engine.GPUMemoryUtilization = e.GPUMemoryUtilization
	}
	c.Engine.MaxNumSeqs, c.Engine.MaxNumBatchedTokens = e.MaxNumSeqs, e.MaxNumBatchedTokens
	c.Engine.MaxModelLen, c.Engine.BlockSize = e.MaxModelLen, e.BlockSize
	if e.EnableChunkedPrefill != nil {
		c.Engine.EnableChunkedPrefill = *e.EnableChunkedPrefill
	}
	c.PromptTokens, c.OutputTokens, c.Fragmentation = r.PromptTokens, r.OutputTokens, r.Fragmentation
	return c
}

// ImportModelQuery is the query of POST /v1/models.
type ImportModelQuery struct {
	// ID names the new model; it must not name an existing one.
	ID string `form:"id" binding:"required,catalog_id" example:"my-llama"`
	// HFID is the model's Hugging Face id (an alias).
	HFID string `form:"hf_id" binding:"omitempty,max=256" example:"my-org/my-llama"`
	// IgnoreUnknown accepts config.json keys Headroom does not know.
	IgnoreUnknown bool `form:"ignore_unknown"`
}

// ModelDetail is a model with its parameter counts, as
// `headroom catalog show models ID --output json`.
type ModelDetail struct {
	Model  *models.Model      `json:"model"`
	Params models.ParamCounts `json:"params"`
}

// ImportedModel is the answer of POST /v1/models.
type ImportedModel struct {
	Model  *models.Model      `json:"model"`
	Params models.ParamCounts `json:"params"`
	// IgnoredKeys are config.json keys that do not change the shape.
	IgnoredKeys []string `json:"ignored_keys"`
	// Persisted is true when the model was written to the model store.
	Persisted bool `json:"persisted"`
}

// JobRequest is the body of POST /v1/jobs.
type JobRequest struct {
	// Kind selects the runner: simulate (sweep, plan, calibrate later).
	Kind string `json:"kind" binding:"required,max=64" example:"simulate"`
	// Params are the kind's input: for simulate, a scenario.
	Params json.RawMessage `json:"params" binding:"required" swaggertype:"object"`
}

// JobView is a job's state.
type JobView struct {
	ID    string   `json:"id" example:"Q3VJ4CMBVW3XGZ6Y2M5ZWJ3RBA"`
	Kind  string   `json:"kind" example:"simulate"`
	State JobState `json:"state" enums:"queued,running,succeeded,failed,cancelled" example:"running"`
	// Progress is the fraction done, 0 to 1.
	Progress   float64    `json:"progress" example:"0.42"`
	CreatedAt  time.Time  `json:"created_at"`
	StartedAt  *time.Time `json:"started_at,omitempty"`
	FinishedAt *time.Time `json:"finished_at,omitempty"`
	// Result is the kind's answer (for simulate, the report) once succeeded.
	Result any `json:"result,omitempty" swaggertype:"object"`
	// Error is the problem that failed the job.
	Error *Problem `json:"error,omitempty"`
}

// JobList is the answer of GET /v1/jobs (results left out).
type JobList struct {
	Jobs []JobView `json:"jobs"`
}

// Health is the answer of /healthz and /readyz.
type Health struct {
	Status string `json:"status" example:"ok"`
}
