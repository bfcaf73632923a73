package api

import (
	"encoding/json"
	"time"

	"github.com/headroom-sim/headroom/internal/study/scenario"
	"github.com/headroom-sim/headroom/models"
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
	// Calibration names a stored calibration (POST /v1/calibrations) whose
	// memory calibration applies, as `headroom capacity --calibration`.
	Calibration string `json:"calibration" binding:"omitempty,max=64" example:"k3vj4cmbvw3xgz6y2m5z"`
}

// CapacityEngine is the engine part of a capacity question.
type CapacityEngine struct {
	GPUMemoryUtilization float64 `json:"gpu_memory_utilization" binding:"omitempty,gt=0,lte=1" default:"0.9" example:"0.9"`
	MaxNumSeqs           int     `json:"max_num_seqs" binding:"omitempty,min=1,max=1048576" example:"256"`
	// MaxNumBatchedTokens must be >= max_num_seqs when both are given.
	MaxNumBatchedTokens int `json:"max_num_batched_tokens" binding:"omitempty,min=1,max=16777216" example:"8192"`
	MaxModelLen         int `json:"max_model_len" binding:"omitempty,min=1,max=16777216" example:"8192"`
	BlockSize           int `json:"block_size" binding:"omitempty,oneof=1 8 16 32 64 128 256" example:"16"`
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
	// Kind selects the runner: simulate, sweep, plan, curve, maxload,
	// compare, calibrate or validate.
	Kind string `json:"kind" binding:"required,max=64" example:"simulate"`
	// Params are the kind's input: for simulate a scenario; for the others
	// SweepParams, PlanParams, CurveParams, MaxLoadParams, CompareParams,
	// CalibrateParams or ValidateParams.
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
	// Result is the kind's answer once succeeded: for simulate the report;
	// for sweep, plan, curve, maxload and compare the planner's result
	// (plan.SweepResult, PlanResult, CurveResult, LoadResult,
	// CompareResult); for calibrate the stored calibration; for validate
	// the ValidationReport. GET with
	// Accept: image/svg+xml draws it instead. It is kept encoded, as
	// compact JSON, and served as it was kept.
	Result json.RawMessage `json:"result,omitempty" swaggertype:"object"`
	// ResultBytes is the size of the kept result (it counts towards
	// jobs.max_results_bytes).
	ResultBytes int64 `json:"result_bytes,omitempty" example:"48213"`
	// Notes say what the server changed in the result, such as a time
	// series coarsened to limits.timeseries_points.
	Notes []string `json:"notes,omitempty"`
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

// Params of the planner job kinds (POST /v1/jobs with kind sweep, plan,
// curve, maxload or compare). A scenario inside is decoded like the body
// of POST /v1/simulate: strictly, with vLLM's defaults, no file references,
// and a calibration field naming a stored calibration id.

// SweepParams are a sweep job's params: a what-if grid over scenario
// fields, as `headroom sweep`.
type SweepParams struct {
	// Scenario is the base every point overrides.
	Scenario json.RawMessage `json:"scenario" binding:"required" swaggertype:"object"`
	// Axes are the swept fields; their values are crossed (every
	// combination) unless list is true.
	Axes []SweepAxis `json:"axes" binding:"required,min=1,max=8,dive"`
	// List pairs the axes' values index by index instead of crossing them
	// (every axis then has the same number of values).
	List bool `json:"list"`
}

// SweepAxis is one swept field and its values.
type SweepAxis struct {
	// Path names a scenario field: engine.max_num_seqs, gpu, tp, replicas,
	// workload.arrival.rate_rps …
	Path string `json:"path" binding:"required,max=256" example:"engine.max_num_seqs"`
	// Values are JSON values of the field's type.
	Values []any `json:"values" binding:"required,min=1,max=1000" swaggertype:"array,object" example:"32,64,128"`
}

// PlanParams are a plan job's params: the cheapest clusters that serve the
// scenario's workload within its SLA, as `headroom plan`.
type PlanParams struct {
	// Scenario gives the model, engine settings, workload (the target load)
	// and SLA (required); its gpu, tp and replicas are replaced by the
	// candidates.
	Scenario json.RawMessage `json:"scenario" binding:"required" swaggertype:"object"`
	// GPUs are the candidate GPU ids or aliases (default: the whole catalog).
	GPUs []string `json:"gpus" binding:"omitempty,max=64,dive,required,max=256" example:"h100-sxm,l40s"`
	// TPs are the candidate tensor-parallel degrees (default 1, 2, 4, 8).
	TPs []int `json:"tps" binding:"omitempty,max=16,dive,min=1,max=1024" example:"1,2"`
	// MaxReplicas bounds the replica search per GPU and TP (default 16).
	MaxReplicas int `json:"max_replicas" binding:"omitempty,min=1,max=4096" default:"16" example:"8"`
	// Configs, when given, are simulated as they are instead of searching
	// replicas over gpus × tps.
	Configs []PlanConfig `json:"configs" binding:"omitempty,max=256,dive"`
	// PricePerGPUHourUSD overrides catalog prices, by GPU id or alias.
	PricePerGPUHourUSD map[string]float64 `json:"price_per_gpu_hour_usd" binding:"omitempty,max=64,dive,keys,required,max=256,endkeys,gte=0,lte=100000"`
	// Headroom is the multiple of the target load the recommendation must
	// sustain within the SLA (default 1.3).
	Headroom float64 `json:"headroom" binding:"omitempty,gte=1,lte=100" default:"1.3" example:"1.3"`
	// SkipHeadroom checks each candidate at the target and at headroom ×
	// the target only, without measuring how far above it goes.
	SkipHeadroom bool `json:"skip_headroom"`
	// TargetUtilization is the autoscaler's aim with a rate profile
	// (scenario.workload.rate_profile), as a fraction of each replica's
	// capacity within the SLA (default 0.7).
	TargetUtilization float64 `json:"target_utilization" binding:"omitempty,gt=0,lte=1" default:"0.7" example:"0.7"`
	// WindowS is the length of the windows a rate profile is reported in
	// (default 900 s).
	WindowS float64 `json:"window_s" binding:"omitempty,gte=1,lte=86400" default:"900" example:"900"`
	// ParetoMetric is the report figure the Pareto front trades against
	// cost (default: the binding SLA bound).
	ParetoMetric string `json:"pareto_metric" binding:"omitempty,max=128" example:"ttft_ms.p99"`
	// Disaggregation, when given, adds disaggregated prefill/decode
	// clusters to the ranking (the scenario's disaggregation section, if
	// any, gives their KV link and pool settings).
	Disaggregation *PlanDisaggregation `json:"disaggregation"`
}

// PlanDisaggregation asks a plan for disaggregated candidates: every pair
// of a prefill pool type (prefill_gpus × prefill_tps) and a decode pool
// type, each with the fewest replicas that meet the SLA, or the given
// shapes as they are.
type PlanDisaggregation struct {
	// PrefillGPUs and DecodeGPUs default to the plan's gpus.
	PrefillGPUs []string `json:"prefill_gpus" binding:"omitempty,max=64,dive,required,max=256" example:"h100-sxm"`
	DecodeGPUs  []string `json:"decode_gpus" binding:"omitempty,max=64,dive,required,max=256" example:"h200"`
	// PrefillTPs and DecodeTPs default to the plan's tps.
	PrefillTPs []int `json:"prefill_tps" binding:"omitempty,max=16,dive,min=1,max=1024" example:"1"`
	DecodeTPs  []int `json:"decode_tps" binding:"omitempty,max=16,dive,min=1,max=1024" example:"1"`
	// MaxReplicas bounds each pool's replica search (default: the plan's).
	MaxReplicas int `json:"max_replicas" binding:"omitempty,min=1,max=4096" example:"8"`
	// Shapes, when given, are simulated as they are instead of searching.
	Shapes []PlanDisaggShape `json:"shapes" binding:"omitempty,max=256,dive"`
}

// PlanDisaggShape is a disaggregated cluster to simulate as it is.
type PlanDisaggShape struct {
	Prefill PlanConfig `json:"prefill" binding:"required"`
	Decode  PlanConfig `json:"decode" binding:"required"`
}

// PlanConfig is one cluster shape to simulate as it is.
type PlanConfig struct {
	GPU      string `json:"gpu" binding:"required,max=256" example:"h100-sxm"`
	TP       int    `json:"tp" binding:"omitempty,min=1,max=1024" default:"1" example:"1"`
	Replicas int    `json:"replicas" binding:"omitempty,min=1,max=4096" default:"1" example:"2"`
}

// CurveParams are a curve job's params: a throughput–latency staircase run
// as one simulation whose stages step through the loads, as `headroom
// curve`. Give rates_rps or concurrencies.
type CurveParams struct {
	Scenario json.RawMessage `json:"scenario" binding:"required" swaggertype:"object"`
	// RatesRPS are open-loop arrival rates, req/s, one step each.
	RatesRPS []float64 `json:"rates_rps" binding:"omitempty,max=100,dive,gt=0,lte=1000000" example:"1,2,4,8"`
	// Concurrencies are closed-loop user counts, one step each.
	Concurrencies []int `json:"concurrencies" binding:"omitempty,max=100,dive,min=1,max=1000000" example:"1,4,16"`
	// StepDurationS is each step's length (default 60).
	StepDurationS float64 `json:"step_duration_s" binding:"omitempty,gt=0,lte=86400" default:"60" example:"30"`
}

// MaxLoadParams are a maxload job's params: the highest load the scenario
// sustains within its SLA, as `headroom maxload`.
type MaxLoadParams struct {
	// Scenario has an SLA (required) and an open-loop rate, a closed-loop
	// concurrency or a trace speed-up as its starting load.
	Scenario json.RawMessage `json:"scenario" binding:"required" swaggertype:"object"`
	// MaxLoad caps the search (default 1024 × the scenario's load).
	MaxLoad float64 `json:"max_load" binding:"omitempty,gt=0" example:"200"`
	// Tolerance is the relative width at which bisection stops (default
	// 0.02).
	Tolerance float64 `json:"tolerance" binding:"omitempty,gt=0,lt=1" default:"0.02"`
	// MaxProbes bounds the simulations of the search (default 24); the
	// answer's error band (max_load_interval) takes up to max_probes / 2
	// (at least 4) more for each of its four ends.
	MaxProbes int `json:"max_probes" binding:"omitempty,min=1,max=200" default:"24"`
	// MinDurationS makes each rate probe send at least rate × this many
	// seconds of requests (default 120).
	MinDurationS float64 `json:"min_duration_s" binding:"omitempty,gt=0,lte=86400" default:"120"`
	// SkipBands leaves out the search of the answer's error band
	// (max_load_interval), and its simulations.
	SkipBands bool `json:"skip_bands" default:"false"`
}

// CompareParams are a compare job's params: an A/B comparison, as
// `headroom compare`. By default B runs A's workload and SLA (the same
// requests, lengths and seed).
type CompareParams struct {
	A     json.RawMessage `json:"a" binding:"required" swaggertype:"object"`
	B     json.RawMessage `json:"b" binding:"required" swaggertype:"object"`
	NameA string          `json:"name_a" binding:"omitempty,max=64" default:"A"`
	NameB string          `json:"name_b" binding:"omitempty,max=64" default:"B"`
	// KeepWorkloads runs each side on its own workload (not a fair
	// comparison).
	KeepWorkloads bool `json:"keep_workloads"`
}

// CalibrateParams are a calibrate job's params: what POST
// /v1/calibrations?async=true submits (POST /v1/jobs takes them too, for
// files that fit its body limit). The fields after the file are the form
// fields of POST /v1/calibrations: they fill what the file does not record,
// as the flags of `headroom calibrate`.
type CalibrateParams struct {
	// File is the benchmark result file (base64 in JSON); or give Files.
	File []byte `json:"file,omitempty" swaggertype:"string" format:"base64"`
	// Files are the files of a run folder, each named by its path in the
	// folder (POST /v1/calibrations sends them for several file parts).
	Files []UploadedFile `json:"files,omitempty" binding:"omitempty,max=1024,dive"`
	// FileName is the file's name: it names the run and helps detection.
	FileName string `json:"file_name" binding:"omitempty,max=255" example:"requests.jsonl"`
	// Format is the file's result format (default: detected).
	Format string `json:"format" form:"format" binding:"omitempty,max=64" example:"llmservingsim"`
	// Model is a catalog id, alias or Hugging Face id.
	Model string `json:"model" form:"model" binding:"omitempty,max=256" example:"llama-3.1-8b"`
	// GPU is a catalog id or alias.
	GPU string `json:"gpu" form:"gpu" binding:"omitempty,max=256" example:"rtx-pro-6000"`
	// TP is the measured server's tensor-parallel degree.
	TP                  int `json:"tp" form:"tp" binding:"omitempty,min=1,max=1024" example:"1"`
	MaxNumSeqs          int `json:"max_num_seqs" form:"max_num_seqs" binding:"omitempty,min=1,max=1048576" example:"128"`
	MaxNumBatchedTokens int `json:"max_num_batched_tokens" form:"max_num_batched_tokens" binding:"omitempty,min=1,max=16777216" example:"2048"`
	MaxModelLen         int `json:"max_model_len" form:"max_model_len" binding:"omitempty,min=1,max=16777216"`
	// KVCacheDType is the server's --kv-cache-dtype, for a run that does
	// not record it.
	KVCacheDType string `json:"kv_cache_dtype" form:"kv_cache_dtype" binding:"omitempty,oneof=auto bf16 fp16 fp32 fp8 int8" example:"fp8"`
	// Stage fits on this benchmark of a multi-benchmark file.
	Stage *int `json:"stage" form:"stage" binding:"omitempty,min=0,max=1000000"`
	// MaxEvaluations bounds the fit's simulations (default 400).
	MaxEvaluations int `json:"max_evaluations" form:"max_evaluations" binding:"omitempty,min=1,max=5000" default:"400"`
}

// CalibrationSummary is a calibration's line in GET /v1/calibrations.
type CalibrationSummary struct {
	ID        string    `json:"id" example:"k3vj4cmbvw3xgz6y2m5z"`
	Model     string    `json:"model" example:"llama-3.1-8b"`
	GPU       string    `json:"gpu" example:"rtx-pro-6000"`
	TP        int       `json:"tp" example:"1"`
	CreatedAt time.Time `json:"created_at"`
	// SourceFile, Format and Requests describe the fitted run.
	SourceFile string `json:"source_file" example:"requests.jsonl"`
	Format     string `json:"format" example:"llmservingsim"`
	Requests   int    `json:"requests" example:"300"`
	// FitLoss is the fit's loss on its run (mean squared log-ratio).
	FitLoss *float64 `json:"fit_loss,omitempty" example:"0.004"`
	// MedianAPEPct is the fitted profile's median absolute percentage
	// error on its run, per metric and over the P99s.
	MedianAPEPct map[string]float64 `json:"median_ape_pct,omitempty"`
}

// CalibrationList is the answer of GET /v1/calibrations.
type CalibrationList struct {
	Calibrations []CalibrationSummary `json:"calibrations"`
	// Persistent is true when calibrations survive a restart
	// (calibration_store is set).
	Persistent bool `json:"persistent"`
}
