package measured

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/headroom-sim/headroom/sim/stats"
)

// Request is one request of a measured run. Times are seconds; SendS is
// relative to the run's first request.
type Request struct {
	SendS        float64 `json:"send_s"`
	InputTokens  int     `json:"input_tokens"`
	OutputTokens int     `json:"output_tokens"`
	// TTFTS and E2ES are measured from SendS; NaN when unknown.
	TTFTS float64 `json:"ttft_s"`
	E2ES  float64 `json:"e2e_s"`
	// ChunkTimesS are the arrival times of streamed chunks after the first,
	// relative to SendS, when the tool records them (a chunk may hold
	// several tokens).
	ChunkTimesS []float64 `json:"chunk_times_s,omitempty"`
	// HashIDs identify the prompt's content in blocks of Run.HashTokens
	// tokens (equal leading ids = shared prefix); nil when unknown.
	HashIDs []int64 `json:"hash_ids,omitempty"`
	// Error is non-empty for failed requests.
	Error string `json:"error,omitempty"`
	// Stage is the index of the benchmark (Run.Stages) the request belongs
	// to, for files that hold several; 0 otherwise.
	Stage int `json:"stage"`
	// DelayS is how much later than its schedule the client sent the
	// request (a client-side cap, or the client's own lag), when the tool
	// records both; 0 otherwise. SendS − DelayS is when the workload meant
	// it to arrive.
	DelayS float64 `json:"delay_s,omitempty"`
}

// OK reports whether the request completed with timings.
func (r *Request) OK() bool {
	return r.Error == "" && !math.IsNaN(r.TTFTS) && !math.IsNaN(r.E2ES) && r.OutputTokens >= 1
}

// TPOTS is (e2e − ttft) / (output − 1): decode time per output token, the
// benchmark tools' definition; ok is false for single-token outputs.
func (r *Request) TPOTS() (float64, bool) {
	if r.OutputTokens < 2 || !r.OK() {
		return 0, false
	}
	return (r.E2ES - r.TTFTS) / float64(r.OutputTokens-1), true
}

// Engine is what a run records of the engine's settings; zero values are
// unknown (the simulator then uses vLLM's defaults).
type Engine struct {
	MaxNumSeqs           int     `json:"max_num_seqs,omitempty"`
	MaxNumBatchedTokens  int     `json:"max_num_batched_tokens,omitempty"`
	MaxModelLen          int     `json:"max_model_len,omitempty"`
	BlockSize            int     `json:"block_size,omitempty"`
	GPUMemoryUtilization float64 `json:"gpu_memory_utilization,omitempty"`
	EnablePrefixCaching  *bool   `json:"enable_prefix_caching,omitempty"`
	EnableChunkedPrefill *bool   `json:"enable_chunked_prefill,omitempty"`
	AsyncScheduling      *bool   `json:"async_scheduling,omitempty"`
	KVCacheDType         string  `json:"kv_cache_dtype,omitempty"`
	DType                string  `json:"dtype,omitempty"`
	// Scheduler is "v0" for vLLM's V0 engine (VLLM_USE_V1=0), "v1" when
	// the run says so, "" when it does not (the version decides).
	Scheduler string `json:"scheduler,omitempty"`
	// Speculative is the server's --speculative-config (nil: none recorded).
	Speculative *Speculative `json:"speculative,omitempty"`
	Extra       []string     `json:"notes,omitempty"`
}

// Speculative is vLLM's --speculative-config as a run records it: the
// method (eagle, eagle3, mtp, ngram, draft_model …), the tokens proposed
// per step and the draft model (an EAGLE head's repository, or a draft
// model's id; "" for the model's own MTP layers or n-grams).
type Speculative struct {
	Method               string `json:"method"`
	NumSpeculativeTokens int    `json:"num_speculative_tokens"`
	DraftModel           string `json:"draft_model,omitempty"`
}

// Run is one measured benchmark run.
type Run struct {
	Name   string `json:"name"`
	Format string `json:"format"`
	// Model is a catalog id, alias or Hugging Face id; GPU a catalog id or
	// alias ("" when the run does not say).
	Model string `json:"model"`
	GPU   string `json:"gpu"`
	// ModelNote and GPUNote say where the model and the GPU came from
	// (a file and its field, or a flag); "" when from the result's own
	// model field.
	ModelNote string `json:"model_note,omitempty"`
	GPUNote   string `json:"gpu_note,omitempty"`
	TP        int    `json:"tp"`
	// DP is the number of data-parallel engines (replicas).
	DP int `json:"dp"`
	// ExpertParallel: the MoE experts were sharded over TP × DP GPUs.
	ExpertParallel bool `json:"expert_parallel,omitempty"`
	// MoETP and MoEEP split the experts over the TP × DP GPUs when the run
	// says how (moe_tp × moe_ep = TP × DP): slices of every expert, or
	// whole experts per GPU (0: unstated).
	MoETP int `json:"moe_tp,omitempty"`
	MoEEP int `json:"moe_ep,omitempty"`
	// Disagg is the layout of a disaggregated run (prefill and decode
	// engines apart), nil for one that is not; TP, DP, MoETP and MoEEP are
	// then its decode engines'.
	Disagg *Disagg `json:"disagg,omitempty"`
	// Quantization is the precision the run served at when it names one
	// (fp8, fp4 …); "" = the checkpoint's own.
	Quantization string `json:"quantization,omitempty"`
	// Warmup is how many requests the benchmark ran before measuring and
	// left out of its statistics (they are not in Requests).
	Warmup        int    `json:"warmup,omitempty"`
	EngineVersion string `json:"engine_version,omitempty"`
	Engine        Engine `json:"engine"`
	// LoggedBlocks is the num_gpu_blocks the engine logged (0 unknown).
	LoggedBlocks int `json:"logged_blocks,omitempty"`
	// GPUMemoryBytes is the device memory the run recorded (0 unknown).
	GPUMemoryBytes int64 `json:"gpu_memory_bytes,omitempty"`
	// HashTokens is the tokens per HashIDs entry.
	HashTokens int `json:"hash_tokens,omitempty"`
	// PrefixGroups prompts of PrefixTokens tokens start every request's
	// prompt, when the run's load config says so and HashIDs are unknown
	// (0: unknown).
	PrefixGroups int `json:"prefix_groups,omitempty"`
	PrefixTokens int `json:"prefix_tokens,omitempty"`
	// PromptShape is the load config's shared-prefix prompts, as it states
	// them (PrefixGroups and PrefixTokens are what the replay makes of it).
	PromptShape *PromptShape `json:"prompt_shape,omitempty"`
	// ServerSide says the times were taken at the server (no network).
	ServerSide bool      `json:"server_side"`
	Requests   []Request `json:"requests"`
	// Stages describe the benchmarks of a file that holds several (a
	// guidellm sweep) or the load of one, when the file states it.
	Stages []StageInfo `json:"stages,omitempty"`
	// Aggregate is the file's own summary of a single-benchmark run, the
	// target for quantiles when per-request data is absent.
	Aggregate *Aggregate `json:"aggregate,omitempty"`
	// Ignored lists, sorted, the keys of the files (JSON paths, with
	// "[]" for a list's elements; "column NAME" for CSV; "file NAME"
	// for a folder's other files) that the reader did not use. A known
	// metric that is present but cannot be used (its unit, its shape) is
	// also said in a note.
	Ignored []string `json:"ignored,omitempty"`
}

// Disagg is a disaggregated run's two pools of engines.
type Disagg struct {
	Prefill Pool `json:"prefill"`
	Decode  Pool `json:"decode"`
}

// Pool is one pool of a disaggregated run: Workers engines, each of TP ×
// DP GPUs with the experts split MoETP × MoEEP, BatchSize requests in
// flight per attention-DP rank as the tool configured it.
type Pool struct {
	Workers   int `json:"workers"`
	TP        int `json:"tp"`
	DP        int `json:"dp"`
	MoETP     int `json:"moe_tp"`
	MoEEP     int `json:"moe_ep"`
	BatchSize int `json:"batch_size"`
}

// PromptShape is a load generator's shared-prefix prompts
// (inference-perf's data.shared_prefix): SystemPrompts system prompts of
// SystemTokens tokens, each followed by UsersPerPrompt questions of
// QuestionTokens tokens, asking for OutputTokens tokens.
type PromptShape struct {
	SystemPrompts  int `json:"system_prompts"`
	UsersPerPrompt int `json:"users_per_prompt"`
	SystemTokens   int `json:"system_tokens"`
	QuestionTokens int `json:"question_tokens"`
	OutputTokens   int `json:"output_tokens"`
}

// Summary is a run's measured distributions, in milliseconds, and its
// throughput.
type Summary struct {
	TTFTMS stats.Summary `json:"ttft_ms"`
	TPOTMS stats.Summary `json:"tpot_ms"`
	E2EMS  stats.Summary `json:"e2e_ms"`
	// ITLMS is every gap between consecutive streamed chunks of the
	// requests that record their chunk times (empty when none does).
	ITLMS             stats.Summary `json:"itl_ms"`
	RequestsPerS      float64       `json:"requests_per_s"`
	OutputTokensPerS  float64       `json:"output_tokens_per_s"`
	Completed, Failed int
}

// Summarize computes the run's measured metrics over its completed
// requests. Throughput is completions over the time from the first send to
// the last finish.
func (r *Run) Summarize() Summary {
	var ttft, tpot, e2e, itl []float64
	var s Summary
	first, last := math.Inf(1), math.Inf(-1)
	var out int
	for i := range r.Requests {
		q := &r.Requests[i]
		if !q.OK() {
			s.Failed++
			continue
		}
		s.Completed++
		ttft = append(ttft, q.TTFTS*1e3)
		e2e = append(e2e, q.E2ES*1e3)
		if t, ok := q.TPOTS(); ok {
			tpot = append(tpot, t*1e3)
		}
		prev := q.TTFTS
		for _, c := range q.ChunkTimesS {
			itl = append(itl, (c-prev)*1e3)
			prev = c
		}
		first = math.Min(first, q.SendS)
		last = math.Max(last, q.SendS+q.E2ES)
		out += q.OutputTokens
	}
	s.TTFTMS, s.TPOTMS, s.E2EMS, s.ITLMS = stats.Summarize(ttft), stats.Summarize(tpot), stats.Summarize(e2e), stats.Summarize(itl)
	if d := last - first; d > 0 {
		s.RequestsPerS = float64(s.Completed) / d
		s.OutputTokensPerS = float64(out) / d
	}
	return s
}

// normalise sorts nothing but shifts send times so the first is 0.
func (r *Run) normalise() {
	t0 := math.Inf(1)
	for i := range r.Requests {
		t0 = math.Min(t0, r.Requests[i].SendS)
	}
	if math.IsInf(t0, 1) {
		return
	}
	for i := range r.Requests {
		r.Requests[i].SendS -= t0
	}
}

func boolp(b bool) *bool { return &b }

// SplitByTime labels the requests, in send order, into n consecutive parts
// of equal size (stages 0..n-1), replacing any stages: "fit on the first
// part, predict the rest" on a run that is one benchmark.
func (r *Run) SplitByTime(n int) {
	if n < 1 || len(r.Requests) == 0 {
		return
	}
	order := make([]int, len(r.Requests))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return r.Requests[order[a]].SendS < r.Requests[order[b]].SendS })
	r.Stages = nil
	for k := range n {
		r.Stages = append(r.Stages, StageInfo{Index: k, Strategy: fmt.Sprintf("part %d of %d by send time", k+1, n)})
	}
	for rank, i := range order {
		r.Requests[i].Stage = rank * n / len(order)
	}
}

// Overrides supply what a benchmark result does not record (or correct
// it): the served model, the GPU, the tensor-parallel degree and engine
// settings. Zero values leave the run's own.
type Overrides struct {
	Model, GPU          string
	TP                  int
	MaxNumSeqs          int
	MaxNumBatchedTokens int
	MaxModelLen         int
	// KVCacheDType is the server's --kv-cache-dtype (auto, bf16, fp16,
	// fp8, int8; "": what the run records, else the checkpoint's).
	KVCacheDType string
	// PromptPool, when > 0, says the benchmark drew its prompts from a pool
	// of that many (AIPerf's and GenAI-Perf's --num-dataset-entries,
	// 100 by default): a run replayed from its summary then sends each of
	// PromptPool prompts of the mean length again and again, so that the
	// prefix cache holds all of a prompt but its last token when it comes
	// back. Runs that list their own requests keep their prompts.
	PromptPool int
	// EnableChunkedPrefill and EnablePrefixCaching, when set, replace what
	// the run recorded (nil: keep it).
	EnableChunkedPrefill *bool
	EnablePrefixCaching  *bool
}

// MaxPromptPool bounds Overrides.PromptPool (the API's bound too).
const MaxPromptPool = 1 << 20

// Apply writes the set overrides into r; the model and GPU notes then say
// they came from --model and --gpu.
func (o Overrides) Apply(r *Run) {
	given := func(flag, v, recorded string) string {
		if recorded == "" || strings.EqualFold(recorded, v) {
			return "given with " + flag
		}
		return fmt.Sprintf("given with %s; the run records %q", flag, recorded)
	}
	if o.Model != "" {
		r.ModelNote = given("--model", o.Model, r.Model)
		r.Model = o.Model
	}
	if o.GPU != "" {
		r.GPUNote = given("--gpu", o.GPU, r.GPU)
		r.GPU = o.GPU
	}
	if o.TP > 0 {
		r.TP = o.TP
	}
	if o.MaxNumSeqs > 0 {
		r.Engine.MaxNumSeqs = o.MaxNumSeqs
	}
	if o.MaxNumBatchedTokens > 0 {
		r.Engine.MaxNumBatchedTokens = o.MaxNumBatchedTokens
	}
	if o.MaxModelLen > 0 {
		r.Engine.MaxModelLen = o.MaxModelLen
	}
	if o.KVCacheDType != "" {
		r.Engine.KVCacheDType = o.KVCacheDType
	}
	if o.PromptPool > 0 {
		switch a := r.Aggregate; {
		case o.PromptPool > MaxPromptPool:
			r.note("--prompt-pool %d not applied: more than %d prompts", o.PromptPool, MaxPromptPool)
		case len(r.Requests) > 0 || a == nil || a.MeanInputTokens < 2:
			r.note("--prompt-pool %d not applied: the run lists its own requests, or has no summary mean prompt of 2 tokens or more to pool", o.PromptPool)
		default:
			r.PrefixGroups, r.PrefixTokens = o.PromptPool, int(a.MeanInputTokens+0.5)-1
			r.note("prompts drawn from a pool of %d (given with --prompt-pool): each prompt's first %d tokens are shared by every request that draws it", o.PromptPool, r.PrefixTokens)
		}
	}
	if o.EnableChunkedPrefill != nil {
		r.Engine.EnableChunkedPrefill = boolp(*o.EnableChunkedPrefill)
	}
	if o.EnablePrefixCaching != nil {
		r.Engine.EnablePrefixCaching = boolp(*o.EnablePrefixCaching)
	}
	for i := range r.Stages {
		// An override holds for every benchmark, whatever its own settings.
		if e := r.Stages[i].Engine; e != nil {
			c := *e
			c.MaxNumSeqs, c.MaxNumBatchedTokens, c.MaxModelLen = pick(o.MaxNumSeqs, c.MaxNumSeqs), pick(o.MaxNumBatchedTokens, c.MaxNumBatchedTokens), pick(o.MaxModelLen, c.MaxModelLen)
			if o.KVCacheDType != "" {
				c.KVCacheDType = o.KVCacheDType
			}
			if o.EnableChunkedPrefill != nil {
				c.EnableChunkedPrefill = r.Engine.EnableChunkedPrefill
			}
			if o.EnablePrefixCaching != nil {
				c.EnablePrefixCaching = r.Engine.EnablePrefixCaching
			}
			r.Stages[i].Engine = &c
		}
		if o.TP > 0 && r.Stages[i].TP > 0 {
			r.Stages[i].TP = o.TP
		}
	}
}

// pick is o when set (> 0), else v.
func pick(o, v int) int {
	if o > 0 {
		return o
	}
	return v
}
