package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/headroom-sim/headroom/internal/adapter/measured"
	"github.com/headroom-sim/headroom/internal/study/replay"
	"github.com/headroom-sim/headroom/sim"
)

// POST /v1/inspect and POST /v1/validate: `headroom inspect` and
// `headroom validate` over an uploaded benchmark run, and the validate job
// kind for runs too large to replay synchronously.

// Inspection is the answer of POST /v1/inspect, as `headroom inspect
// --output json` prints it.
type Inspection = replay.Inspection

// ValidateParams are a validate job's params, and what the form of POST
// /v1/validate holds: the run's files and the fields that fill what it
// does not record, as the flags of `headroom validate`.
type ValidateParams struct {
	// Files are the result file, or the files of a run folder.
	Files []UploadedFile `json:"files" binding:"required,min=1,max=1024,dive"`
	// Format is the files' result format (default: detected).
	Format string `json:"format" binding:"omitempty,max=64" example:"inference-perf-report"`
	// Model is a catalog id, alias or Hugging Face id.
	Model string `json:"model" binding:"omitempty,max=256" example:"llama-3.1-8b"`
	// GPU is a catalog id or alias.
	GPU string `json:"gpu" binding:"omitempty,max=256" example:"h100-sxm"`
	// TP and the engine settings are the measured server's.
	TP                  int `json:"tp" binding:"omitempty,min=1,max=1024"`
	MaxNumSeqs          int `json:"max_num_seqs" binding:"omitempty,min=1,max=1048576" example:"128"`
	MaxNumBatchedTokens int `json:"max_num_batched_tokens" binding:"omitempty,min=1,max=16777216"`
	MaxModelLen         int `json:"max_model_len" binding:"omitempty,min=1,max=16777216" example:"512"`
	// KVCacheDType is the server's --kv-cache-dtype, for a run that does
	// not record it (default: what the run records, else the checkpoint's).
	KVCacheDType string `json:"kv_cache_dtype" binding:"omitempty,oneof=auto bf16 fp16 fp32 fp8 int8" example:"fp8"`
	// PromptPool says the benchmark drew its prompts from a pool of this
	// many (as validate --prompt-pool).
	PromptPool           int   `json:"prompt_pool" binding:"omitempty,min=1,max=1048576" example:"100"`
	EnableChunkedPrefill *bool `json:"enable_chunked_prefill"`
	EnablePrefixCaching  *bool `json:"enable_prefix_caching"`
	// LoggedBlocks sizes the KV cache with the run's logged block count
	// instead of the memory model's.
	LoggedBlocks bool `json:"logged_blocks"`
	// Calibration names a stored calibration whose step-time profile the
	// replay uses.
	Calibration string `json:"calibration" binding:"omitempty,max=64" example:"k3vj4cmbvw3xgz6y2m5z"`
}

// ValidationReport is the answer of POST /v1/validate and a validate
// job's result: each part of the run (the run, or each benchmark of a
// stepped run, or each row of a table of closed-loop runs) with its
// measured figures next to the simulator's, as `headroom validate --output
// json`.
type ValidationReport struct {
	// Run names the run (its file or folder).
	Run string `json:"run" example:"vllm+v0_engine"`
	// Format is the result format read.
	Format      string              `json:"format" example:"inference-perf-report"`
	Comparisons []replay.Comparison `json:"comparisons"`
	// Notes say what the replay skipped (table rows whose model or GPU
	// the catalog does not know).
	Notes []string `json:"notes,omitempty"`
}

// inspectFields are the form fields of POST /v1/inspect besides file.
var inspectFields = []string{"format"}

// validateFields are the form fields of POST /v1/validate besides file.
var validateFields = []string{"format", "model", "gpu", "tp", "max_num_seqs", "max_num_batched_tokens", "max_model_len",
	"enable_chunked_prefill", "enable_prefix_caching", "logged_blocks", "calibration"}

// inspect godoc
//
//	@Summary		Read a benchmark run
//	@Description	What Headroom reads from a benchmark result file or a run folder, as `headroom inspect`: the format, the run's model, GPU, parallelism and engine settings, each benchmark's load and measured figures, and which catalog model and GPU the recorded names resolve to (hints say which field to give when they do not). The body is multipart/form-data: `file` is one result file in any format the importer detects, or, repeated, the files of a run folder, each part's file name its path in the folder (`results/stage_0_lifecycle_metrics.json`); `format` names the format instead of detecting it. A table of closed-loop runs (one per row) is not one run: POST /v1/validate replays it. The body may be up to `calibrations.upload_limit_bytes`.
//	@Tags			validation
//	@Accept			multipart/form-data
//	@Produce		json,application/problem+json
//	@Param			file	formData	file	true	"benchmark result file, or (repeated) the files of a run folder"
//	@Param			format	formData	string	false	"result format (default: detected)"	example(inference-perf-report)
//	@Success		200		{object}	Inspection
//	@Failure		400		{object}	Problem	"malformed form, or files that do not import (the detail names the format, record and field)"
//	@Failure		413		{object}	Problem	"body too large"
//	@Failure		415		{object}	Problem	"not multipart/form-data"
//	@Security		BearerToken
//	@Router			/v1/inspect [post]
func (s *Server) inspect(c *gin.Context) {
	f, hold, err := s.readUploadForm(c, inspectFields)
	if err != nil {
		s.fail(c, err)
		return
	}
	defer hold.release()
	up, err := readUpload(f.files, f.fields["format"])
	if err != nil {
		s.fail(c, err)
		return
	}
	if up.table != nil {
		s.fail(c, invalid("file", "%s: a table of closed-loop runs, one per row (%d rows), not one benchmark's result: POST /v1/validate replays it", up.name, len(up.table)))
		return
	}
	s.respond(c, http.StatusOK, replay.Inspect(up.run, s.catalog(), up.name, func(name string) string { return "the " + name + " field" }))
}

// validate godoc
//
//	@Summary		Replay a benchmark run and compare
//	@Description	Replays a measured run through the simulator, as `headroom validate`, and answers each part's measured figures next to the predicted ones: a run with per-request records is replayed with its own arrivals and lengths; a stepped run known by the tool's summaries, one simulation per benchmark from the load it states; a table of closed-loop runs, one simulation per row (rows naming no catalog model or GPU are skipped, and said so). The form is that of POST /v1/inspect plus the fields that fill what the run does not record (`model`, `gpu`, `tp`, `max_num_seqs`, `max_num_batched_tokens`, `max_model_len`, `enable_chunked_prefill`, `enable_prefix_caching`), `logged_blocks` (size the KV cache with the run's logged block count) and `calibration` (a stored calibration id). Each simulation is bounded by `simulate.sync_max_requests` and `simulate.sync_max_tokens` and the call by `simulate.sync_timeout` (422 beyond); `async=true` runs it as a job of kind validate (202, the job; its result is the report) within the jobs' limits.
//	@Tags			validation
//	@Accept			multipart/form-data
//	@Produce		json,application/problem+json
//	@Param			file					formData	file	true	"benchmark result file, or (repeated) the files of a run folder"
//	@Param			format					formData	string	false	"result format (default: detected)"
//	@Param			model					formData	string	false	"model (catalog id, alias or Hugging Face id), when the run does not name it"	example(llama-3.1-8b)
//	@Param			gpu						formData	string	false	"GPU (catalog id or alias), when the run does not name it"	example(h100-sxm)
//	@Param			tp						formData	integer	false	"tensor-parallel degree of the measured server"
//	@Param			max_num_seqs			formData	integer	false	"engine setting of the measured server"
//	@Param			max_num_batched_tokens	formData	integer	false	"engine setting of the measured server"
//	@Param			max_model_len			formData	integer	false	"engine setting of the measured server"
//	@Param			enable_chunked_prefill	formData	bool	false	"engine setting of the measured server"
//	@Param			enable_prefix_caching	formData	bool	false	"engine setting of the measured server"
//	@Param			logged_blocks			formData	bool	false	"size the KV cache with the run's logged block count"
//	@Param			calibration				formData	string	false	"stored calibration id whose step-time profile to use"
//	@Param			async					query		bool	false	"replay as a job (202) within the jobs' limits"
//	@Success		200						{object}	ValidationReport
//	@Success		202						{object}	JobView
//	@Header			202						{string}	Location	"/v1/jobs/{id}"
//	@Failure		400						{object}	Problem	"malformed form, invalid field, or files that do not import"
//	@Failure		404						{object}	Problem	"unknown calibration"
//	@Failure		413						{object}	Problem	"body too large"
//	@Failure		415						{object}	Problem	"not multipart/form-data"
//	@Failure		422						{object}	Problem	"infeasible (the measured configuration does not fit), or over the synchronous limits (use async=true)"
//	@Failure		429						{object}	Problem	"job queue full (async), or too many synchronous simulations in flight"
//	@Header			429						{integer}	Retry-After	"seconds"
//	@Security		BearerToken
//	@Router			/v1/validate [post]
func (s *Server) validateRun(c *gin.Context) {
	async, err := boolQuery(c, "async")
	if err != nil {
		s.fail(c, err)
		return
	}
	f, hold, err := s.readUploadForm(c, validateFields)
	if err != nil {
		s.fail(c, err)
		return
	}
	handed := false
	defer func() {
		if !handed {
			hold.release()
		}
	}()
	p, err := validateParams(f)
	if err != nil {
		s.fail(c, err)
		return
	}
	if async {
		in, err := s.prepareValidation(p, s.cfg.Jobs.MaxRequests, s.cfg.Jobs.MaxTokens, "jobs.max_", "")
		if err != nil {
			s.fail(c, err)
			return
		}
		// The job holds the read run; its params record the form's other fields.
		p.Files = nil
		handed = s.submitHeld(c, "validate", p, in, hold)
		return
	}
	done, err := s.gate.admit() // once the body is in: a slow client holds no admission
	if err != nil {
		s.fail(c, err)
		return
	}
	defer done()
	in, err := s.prepareValidation(p, s.cfg.Simulate.SyncMaxRequests, s.cfg.Simulate.SyncMaxTokens, "simulate.sync_max_", runAsyncHint)
	if err != nil {
		s.fail(c, err)
		return
	}
	parent := c.Request.Context()
	ctx, cancel := context.WithTimeout(parent, s.cfg.Simulate.SyncTimeout)
	defer cancel()
	release, err := s.syncSlot(ctx, parent)
	if err != nil {
		s.fail(c, err)
		return
	}
	rep, err := runSync(ctx, release, func() (*ValidationReport, error) { return s.replay(ctx, in, nil) })
	if err != nil && errors.Is(err, context.DeadlineExceeded) && parent.Err() == nil {
		err = fmt.Errorf("%w: the replay ran past the synchronous time limit of %s (simulate.sync_timeout)%s", ErrOverLimit, s.cfg.Simulate.SyncTimeout, runAsyncHint)
	}
	if err != nil {
		s.fail(c, err)
		return
	}
	s.respond(c, http.StatusOK, rep)
}

// runAsyncHint ends the problems of a run too large to replay
// synchronously.
const runAsyncHint = "; add ?async=true to replay it as a job"

// validateParams reads the form's fields into the params.
func validateParams(f *runForm) (*ValidateParams, error) {
	p := &ValidateParams{Files: f.files, Format: f.fields["format"], Model: f.fields["model"], GPU: f.fields["gpu"],
		Calibration: f.fields["calibration"]}
	for _, n := range []struct {
		name string
		dst  *int
	}{{"tp", &p.TP}, {"max_num_seqs", &p.MaxNumSeqs}, {"max_num_batched_tokens", &p.MaxNumBatchedTokens}, {"max_model_len", &p.MaxModelLen}} {
		if v := f.fields[n.name]; v != "" {
			x, err := strconv.Atoi(v)
			if err != nil {
				return nil, invalid(n.name, "must be an integer, not %q", v)
			}
			*n.dst = x
		}
	}
	for _, b := range []struct {
		name string
		dst  **bool
	}{{"enable_chunked_prefill", &p.EnableChunkedPrefill}, {"enable_prefix_caching", &p.EnablePrefixCaching}} {
		if v := f.fields[b.name]; v != "" {
			x, err := strconv.ParseBool(v)
			if err != nil {
				return nil, invalid(b.name, "must be true or false, not %q", v)
			}
			*b.dst = &x
		}
	}
	if v := f.fields["logged_blocks"]; v != "" {
		x, err := strconv.ParseBool(v)
		if err != nil {
			return nil, invalid("logged_blocks", "must be true or false, not %q", v)
		}
		p.LoggedBlocks = x
	}
	return p, nil
}

// validation is a replay ready to run.
type validation struct {
	up   *uploadedRun
	opt  replay.Options
	rows []*measured.Run // a table's rows that resolve
	// parts of a run, each with its measured figures.
	parts []replay.Part
	notes []string
}

// prepareValidation reads the upload, applies the fields and resolves
// every simulation of the replay, each bounded by maxRequests and
// maxTokens (the limits' keys start with limitKey).
func (s *Server) prepareValidation(p *ValidateParams, maxRequests int, maxTokens int64, limitKey, hint string) (*validation, error) {
	if err := s.check(p); err != nil {
		return nil, err
	}
	up, err := readUpload(p.Files, p.Format)
	if err != nil {
		return nil, err
	}
	in := &validation{up: up, opt: replay.Options{UseLoggedBlocks: p.LoggedBlocks, KernelDB: s.engine.Env(RunEnv{}).KernelDB}}
	if p.Calibration != "" {
		prof, err := s.cals.profile(p.Calibration)
		if err != nil {
			return nil, fmt.Errorf("calibration: %w", err)
		}
		in.opt.Profile = prof
	}
	ov := measured.Overrides{Model: p.Model, GPU: p.GPU, TP: p.TP, MaxNumSeqs: p.MaxNumSeqs, MaxNumBatchedTokens: p.MaxNumBatchedTokens,
		MaxModelLen: p.MaxModelLen, KVCacheDType: p.KVCacheDType, PromptPool: p.PromptPool, EnableChunkedPrefill: p.EnableChunkedPrefill, EnablePrefixCaching: p.EnablePrefixCaching}
	cat := s.catalog()
	bound := func(name string, run *measured.Run) error {
		if n := replayRequests(run); n > maxRequests {
			return &OverLimitError{Field: "file", Reason: fmt.Sprintf("%s: replaying it simulates %d requests, more than %srequests allows (%d)%s", name, n, limitKey, maxRequests, hint)}
		}
		if n := runTokens(run); n > float64(maxTokens) {
			return &OverLimitError{Field: "file", Reason: fmt.Sprintf("%s: replaying it simulates about %.3g tokens, more than %stokens allows (%d)%s", name, n, limitKey, maxTokens, hint)}
		}
		if span := sendSpan(run); span > maxReplaySpanS {
			return invalid("file", "%s: the requests' send times span %.0f s, more than a replay allows (%d s): is a time stamp missing, or in other units?", name, span, maxReplaySpanS)
		}
		return nil
	}
	if up.table != nil {
		// Each row names its own model, GPU and layout; the engine fields apply to every row.
		ov.Model, ov.GPU, ov.TP = "", "", 0
		skipped := map[string]int{}
		for _, run := range up.table {
			ov.Apply(run)
			if err := resolveUploadNames(run, cat); err != nil {
				var ve *ValidationError
				errors.As(err, &ve)
				skipped[ve.Fields[0].Reason]++
				continue
			}
			if err := bound(run.Name, run); err != nil {
				return nil, err
			}
			in.rows = append(in.rows, run)
		}
		in.notes = append(in.notes, up.skipped...)
		for reason, n := range skipped {
			in.notes = append(in.notes, fmt.Sprintf("skipped %d of %d rows: %s", n, len(up.table), reason))
		}
		slices.Sort(in.notes[len(up.skipped):])
		if len(in.rows) == 0 {
			return nil, invalid("file", "%s: no row names a catalog model and GPU (%s)", up.name, strings.Join(in.notes, "; "))
		}
		return in, nil
	}
	ov.Apply(up.run)
	if err := resolveUploadNames(up.run, cat); err != nil {
		return nil, err
	}
	parts, err := replay.Parts(up.run, cat, in.opt, -1)
	if err != nil {
		return nil, replayError(err)
	}
	for _, pt := range parts {
		sub := up.run
		if pt.Stage >= 0 && up.run.Stage(pt.Stage) != nil {
			sub = up.run.Stage(pt.Stage)
		}
		if err := bound(pt.Name, sub); err != nil {
			return nil, err
		}
	}
	in.parts = parts
	return in, nil
}

// replayError words a replay that cannot be built: a configuration that
// does not fit keeps its status (422), a simulator fault its 500, and a
// run the replay cannot read (no completed request, no benchmark) is a bad
// file.
func replayError(err error) error {
	if _, internal := problemFor(err); !internal || errors.Is(err, sim.ErrInternal) {
		return err
	}
	return invalid("file", "%v", err)
}

// replay simulates each part (or table row) and lines it up with the
// measurement; progress, when not nil, hears the fraction done.
func (s *Server) replay(ctx context.Context, in *validation, progress func(float64)) (*ValidationReport, error) {
	rep := &ValidationReport{Run: in.up.name, Notes: in.notes, Comparisons: []replay.Comparison{}}
	if in.up.run != nil {
		rep.Format = in.up.run.Format
	} else {
		rep.Format = "aiconfigurator-silicon"
	}
	if in.rows != nil {
		res := replay.ReplayMeans(ctx, in.rows, s.catalog(), replay.MeanOptions{Options: in.opt, Workers: 1,
			Progress: func(done, total int) {
				if progress != nil {
					progress(float64(done) / float64(total))
				}
			}})
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		for i := range res {
			rep.Comparisons = append(rep.Comparisons, res[i].Comparison())
		}
		return rep, nil
	}
	for i := range in.parts {
		r, err := sim.Run(ctx, in.parts[i].Resolved.Config)
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, fmt.Errorf("%s: %w", in.parts[i].Name, err)
		}
		rep.Comparisons = append(rep.Comparisons, replay.ComparePart(in.up.run, &in.parts[i], r))
		if progress != nil {
			progress(float64(i+1) / float64(len(in.parts)))
		}
	}
	return rep, nil
}

// validateInput decodes a validate job's params and prepares the replay
// within the jobs' limits.
func (s *Server) validateInput(params json.RawMessage) (*validation, error) {
	var p ValidateParams
	if err := decodeStrict(params, &p); err != nil {
		return nil, err
	}
	return s.prepareValidation(&p, s.cfg.Jobs.MaxRequests, s.cfg.Jobs.MaxTokens, "jobs.max_", "")
}

// checkValidateJob reads the files and resolves the replay at submission.
func (s *Server) checkValidateJob(params json.RawMessage) error {
	_, err := s.validateInput(params)
	return err
}

// runValidateJob is the validate job kind: its result is the report.
func (s *Server) runValidateJob(ctx context.Context, params json.RawMessage, progress func(float64)) (any, error) {
	in, held := heldValue(ctx).(*validation) // an upload, read at submission
	if !held {
		var err error
		if in, err = s.validateInput(params); err != nil {
			return nil, err
		}
	}
	progress(0)
	release, err := s.jobSlot(ctx) // the parts run one after another
	if err != nil {
		return nil, err
	}
	defer release()
	return s.replay(ctx, in, progress)
}
