package api

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"os"
	"path"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/headroom-sim/headroom/internal/adapter/measured"
	"github.com/headroom-sim/headroom/internal/study/calibrate"
	"github.com/headroom-sim/headroom/internal/study/replay"
	"github.com/headroom-sim/headroom/internal/study/scenario"
)

// createCalibration godoc
//
//	@Summary		Calibrate the step-time model on a benchmark run
//	@Description	Fits the simulator's step-time profile to a measured benchmark run, as `headroom calibrate`, and stores it under a new id that scenarios name in their `calibration` field. The body is multipart/form-data: `file` is a benchmark result file in any format the importer detects (vLLM bench, SGLang bench_serving, GenAI-Perf, AIPerf, guidellm, inference-perf, LLMServingSim, llmperf, Headroom's CSV), or, repeated, the files of a run folder (each part's file name its path in the folder, as for POST /v1/inspect); the other fields fill what the file does not record. A run of at most `calibrations.sync_max_requests` requests is fitted synchronously (201, the calibration file); a larger one answers 422 unless `async=true`, which runs the fit as a job of kind calibrate (202, the job; its result is the stored calibration). The body may be up to `calibrations.upload_limit_bytes`; uploads together, read, fitted or queued, hold at most `calibrations.upload_budget_bytes` (each its size, once: a queued job holds the imported run). Calibrations persist across restarts in `calibration_store`, at most `calibrations.max_stored` of them (422 beyond).
//	@Tags			calibrations
//	@Accept			multipart/form-data
//	@Produce		json,application/problem+json
//	@Param			file					formData	file	true	"benchmark result file, or (repeated) the files of a run folder"
//	@Param			format					formData	string	false	"result format (default: detected)"	example(llmservingsim)
//	@Param			model					formData	string	false	"model (catalog id, alias or Hugging Face id), when the file does not name it"	example(llama-3.1-8b)
//	@Param			gpu						formData	string	false	"GPU (catalog id or alias), when the file does not name it"	example(rtx-pro-6000)
//	@Param			tp						formData	integer	false	"tensor-parallel degree of the measured server"
//	@Param			max_num_seqs			formData	integer	false	"engine setting of the measured server"
//	@Param			max_num_batched_tokens	formData	integer	false	"engine setting of the measured server"
//	@Param			max_model_len			formData	integer	false	"engine setting of the measured server"
//	@Param			stage					formData	integer	false	"fit on this benchmark of a multi-benchmark file"
//	@Param			max_evaluations			formData	integer	false	"simulations the fit may run (default 400)"
//	@Param			async					query		bool	false	"run the fit as a job (202) whatever the run's size"
//	@Success		201						{object}	calibrate.File
//	@Header			201						{string}	Location	"/v1/calibrations/{id}"
//	@Success		202						{object}	JobView
//	@Header			202						{string}	Location	"/v1/jobs/{id}"
//	@Failure		400						{object}	Problem	"malformed form, invalid field, or a file that does not import (the detail names the format, record and field)"
//	@Failure		404						{object}	Problem	"unknown model or GPU"
//	@Failure		408						{object}	Problem	"the body was not sent within body_read_timeout"
//	@Failure		413						{object}	Problem	"body too large"
//	@Failure		415						{object}	Problem	"not multipart/form-data"
//	@Failure		422						{object}	Problem	"too few completed requests, infeasible, or over the synchronous limits (use async=true)"
//	@Failure		429						{object}	Problem	"the uploads held fill calibrations.upload_budget_bytes, the job queue is full (async), or too many synchronous simulations are in flight"
//	@Header			429						{integer}	Retry-After	"seconds"
//	@Security		BearerToken
//	@Router			/v1/calibrations [post]
func (s *Server) createCalibration(c *gin.Context) {
	async, err := boolQuery(c, "async")
	if err != nil {
		s.fail(c, err)
		return
	}
	// The upload's size is reserved before its body is read, and held
	// until its fit ends (here, or as the job it is handed to).
	form, up, err := s.readUploadForm(c, formFields)
	if err != nil {
		s.fail(c, err)
		return
	}
	handed := false
	defer func() {
		if !handed {
			up.release()
		}
	}()
	p, err := calibrateParams(form)
	if err != nil {
		s.fail(c, err)
		return
	}
	if !async {
		done, err := s.gate.admit() // once the body is in: a slow client holds no admission
		if err != nil {
			s.fail(c, err)
			return
		}
		defer done()
	}
	in, err := s.prepareCalibration(p)
	if err != nil {
		s.fail(c, err)
		return
	}
	if async {
		// The job holds the imported run, not the files again as base64:
		// the params record the form's other fields.
		p.File, p.Files = nil, nil
		handed = s.submitHeld(c, "calibrate", p, in, up)
		return
	}
	if n, limit := replayRequests(in.run), s.cfg.Calibrations.SyncMaxRequests; n > limit {
		s.fail(c, fmt.Errorf("%w: the run has %d requests, a synchronous fit replays at most %d (calibrations.sync_max_requests); add ?async=true to fit it as a job",
			ErrOverLimit, n, limit))
		return
	}
	if n, limit := runTokens(in.run), s.cfg.Simulate.SyncMaxTokens; n > float64(limit) {
		s.fail(c, &OverLimitError{Field: "file", Reason: fmt.Sprintf("replaying the run simulates about %.3g tokens, more than a synchronous fit may (simulate.sync_max_tokens %d); add ?async=true to fit it as a job", n, limit)})
		return
	}
	parent := c.Request.Context()
	ctx, cancel := context.WithTimeout(parent, s.cfg.Calibrations.SyncTimeout)
	defer cancel()
	release, err := s.syncSlot(ctx, parent)
	if err != nil {
		s.fail(c, err)
		return
	}
	f, err := runSync(ctx, release, func() (*calibrate.File, error) { return s.fitCalibration(ctx, in) })
	if err != nil && errors.Is(err, context.DeadlineExceeded) && parent.Err() == nil {
		err = fmt.Errorf("%w: the fit ran past the synchronous time limit of %s (calibrations.sync_timeout); add ?async=true to fit it as a job",
			ErrOverLimit, s.cfg.Calibrations.SyncTimeout)
	}
	if err != nil {
		s.fail(c, err)
		return
	}
	c.Header("Location", "/v1/calibrations/"+f.ID)
	s.respond(c, http.StatusCreated, f)
}

// getCalibration godoc
//
//	@Summary		Show a calibration
//	@Description	The calibration file, as `headroom calibrate --out` writes it (so it also serves `--calibration FILE`), with its id: the fitted profile, the run it was fitted on, and how the fit went.
//	@Tags			calibrations
//	@Produce		json,application/problem+json
//	@Param			id	path		string	true	"calibration id"
//	@Success		200	{object}	calibrate.File
//	@Failure		404	{object}	Problem	"unknown calibration"
//	@Security		BearerToken
//	@Router			/v1/calibrations/{id} [get]
func (s *Server) getCalibration(c *gin.Context) {
	id, err := pathID(c)
	if err != nil {
		s.fail(c, err)
		return
	}
	f, _, err := s.cals.get(id)
	if err != nil {
		s.fail(c, err)
		return
	}
	s.respond(c, http.StatusOK, f)
}

// listCalibrations godoc
//
//	@Summary		List calibrations
//	@Description	Every stored calibration, oldest first: its id, model, GPU, TP, the run it was fitted on, and the fit's error on that run.
//	@Tags			calibrations
//	@Produce		json,application/problem+json
//	@Success		200	{object}	CalibrationList
//	@Security		BearerToken
//	@Router			/v1/calibrations [get]
func (s *Server) listCalibrations(c *gin.Context) {
	l, err := s.cals.list()
	if err != nil {
		s.fail(c, err)
		return
	}
	s.respond(c, http.StatusOK, CalibrationList{Calibrations: l, Persistent: s.cals.persistent()})
}

// deleteCalibration godoc
//
//	@Summary		Delete a calibration
//	@Description	Removes it from the store; scenarios that name it then answer 404.
//	@Tags			calibrations
//	@Produce		application/problem+json
//	@Param			id	path	string	true	"calibration id"
//	@Success		204
//	@Failure		404	{object}	Problem	"unknown calibration"
//	@Security		BearerToken
//	@Router			/v1/calibrations/{id} [delete]
func (s *Server) deleteCalibration(c *gin.Context) {
	id, err := pathID(c)
	if err != nil {
		s.fail(c, err)
		return
	}
	if err := s.cals.remove(id); err != nil {
		s.fail(c, err)
		return
	}
	c.Status(http.StatusNoContent)
}

// boolQuery reads a true/false query parameter ("" is false).
func boolQuery(c *gin.Context, name string) (bool, error) {
	switch v := c.Query(name); v {
	case "", "false", "0":
		return false, nil
	case "true", "1":
		return true, nil
	}
	return false, invalid(name, "must be true or false")
}

// maxFormField bounds a form field other than the file.
const maxFormField = 4096

// formFields are the fields of POST /v1/calibrations besides file.
var formFields = []string{"format", "model", "gpu", "tp", "max_num_seqs", "max_num_batched_tokens", "max_model_len", "stage", "max_evaluations"}

// calibrateParams are the params an upload's form gives: one file part is
// the result file, several the files of a run folder.
func calibrateParams(f *runForm) (*CalibrateParams, error) {
	p := &CalibrateParams{}
	if len(f.files) == 1 {
		p.File = f.files[0].Data
		if p.File == nil {
			p.File = []byte{}
		}
		p.FileName = path.Base(f.files[0].Name)
		if p.FileName == "." || p.FileName == "/" {
			p.FileName = ""
		}
	} else {
		p.Files = f.files
	}
	for _, name := range formFields {
		if err := p.setField(name, f.fields[name]); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// formError words a multipart read failure (413 past the upload limit,
// 408 past the read deadline).
func formError(err error) error {
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) || errors.Is(err, os.ErrDeadlineExceeded) {
		return err
	}
	return fmt.Errorf("%w: multipart body: %v", ErrMalformed, err)
}

// setField sets a form field from its text.
func (p *CalibrateParams) setField(name, v string) error {
	if v == "" {
		return nil
	}
	num := func() (int, error) {
		n, err := strconv.Atoi(v)
		if err != nil {
			return 0, invalid(name, "must be an integer, not %q", v)
		}
		return n, nil
	}
	var err error
	switch name {
	case "format":
		p.Format = v
	case "model":
		p.Model = v
	case "gpu":
		p.GPU = v
	case "tp":
		p.TP, err = num()
	case "max_num_seqs":
		p.MaxNumSeqs, err = num()
	case "max_num_batched_tokens":
		p.MaxNumBatchedTokens, err = num()
	case "max_model_len":
		p.MaxModelLen, err = num()
	case "max_evaluations":
		p.MaxEvaluations, err = num()
	case "stage":
		var n int
		if n, err = num(); err == nil {
			p.Stage = &n
		}
	}
	return err
}

// importRun reads the params' file (or the files of a run folder) and
// answers the run with the SHA-256 the calibration records (of the file,
// or of the folder's names and files in order).
func (p *CalibrateParams) importRun() (*measured.Run, string, error) {
	h := sha256.New()
	var files []UploadedFile
	switch {
	case p.File != nil && len(p.Files) > 0:
		return nil, "", invalid("files", "give file or files, not both")
	case p.File != nil:
		name := p.FileName
		if name == "" {
			name = "upload"
		}
		files = []UploadedFile{{Name: name, Data: p.File}}
		h.Write(p.File)
	case len(p.Files) > 0:
		files = p.Files
		for _, f := range files {
			h.Write([]byte(f.Name + "\x00"))
			h.Write(f.Data)
		}
	default:
		return nil, "", invalid("file", "is required: the benchmark result file, or the files of a run folder")
	}
	up, err := readUpload(files, p.Format)
	if err != nil {
		return nil, "", err
	}
	if up.table != nil {
		return nil, "", invalid("file", "%s: a table of closed-loop runs, one per row: calibrate on one benchmark's result file", up.name)
	}
	return up.run, hex.EncodeToString(h.Sum(nil)), nil
}

// calibrationInput is a fit ready to run: the imported run with the
// fields applied, the fit's options, and the source it records.
type calibrationInput struct {
	run  *measured.Run
	src  calibrate.Source
	opts calibrate.Options
}

// prepareCalibration imports the file and checks everything a fit needs
// short of fitting: the model and GPU, the stage, enough completed
// requests, a replay that resolves within jobs.max_requests.
func (s *Server) prepareCalibration(p *CalibrateParams) (*calibrationInput, error) {
	if err := s.check(p); err != nil {
		return nil, err
	}
	run, sum, err := p.importRun()
	if err != nil {
		return nil, err
	}
	measured.Overrides{Model: p.Model, GPU: p.GPU, TP: p.TP, MaxNumSeqs: p.MaxNumSeqs,
		MaxNumBatchedTokens: p.MaxNumBatchedTokens, MaxModelLen: p.MaxModelLen, KVCacheDType: p.KVCacheDType}.Apply(run)
	opts := calibrate.Options{MaxEvaluations: p.MaxEvaluations, KernelDB: s.engine.Env(RunEnv{}).KernelDB}
	if opts.MaxEvaluations == 0 {
		opts.MaxEvaluations = 400
	}
	if p.Stage != nil {
		st := *p.Stage
		opts.Stage = &st
	}
	cat := s.catalog()
	if err := calibrate.Check(run, cat, opts); err != nil {
		return nil, err
	}
	if span := sendSpan(run); span > maxReplaySpanS {
		return nil, invalid("file", "%s: the requests' send times span %.0f s, more than a replay allows (%d s): is a time stamp missing, or in other units?",
			run.Name, span, maxReplaySpanS)
	}
	if n, limit := replayRequests(run), s.cfg.Jobs.MaxRequests; n > limit {
		return nil, fmt.Errorf("%w: the run has %d requests, the limit is %d (jobs.max_requests)", scenario.ErrTooLarge, n, limit)
	}
	if n, limit := runTokens(run), s.cfg.Jobs.MaxTokens; n > float64(limit) {
		return nil, &OverLimitError{Field: "file", Reason: fmt.Sprintf("%s: replaying the run simulates about %.3g tokens (prompts and outputs), more than jobs.max_tokens allows (%d)", run.Name, n, limit)}
	}
	// The replay must resolve (a configuration that cannot start is a 4xx
	// now, not a failed fit later).
	if _, err := replay.Config(run, cat, replay.Options{KernelDB: opts.KernelDB}); err != nil {
		return nil, err
	}
	in := &calibrationInput{run: run, opts: opts}
	in.src = calibrate.Source{File: run.Name, Format: run.Format, SHA256: sum, Run: run.Name, Requests: len(run.Requests)}
	return in, nil
}

// maxReplaySpanS bounds the send times of a run to replay (a week): the
// simulator's per-second series grow with the simulated time, so a run
// whose time stamps mix clocks (one record without its arrival time, say)
// would exhaust the memory.
const maxReplaySpanS = 7 * 24 * 3600

// sendSpan is the time from the run's first send to its last (for a
// summary replayed at its rate, the time its requests take to arrive).
func sendSpan(run *measured.Run) float64 {
	if len(run.Requests) == 0 {
		if a := run.Aggregate; a != nil && a.RateRPS > 0 {
			return float64(replayRequests(run)) / a.RateRPS
		}
		return 0
	}
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, q := range run.Requests {
		lo, hi = min(lo, q.SendS), max(hi, q.SendS)
	}
	return hi - lo
}

// replayRequests is how many requests replaying run simulates.
func replayRequests(run *measured.Run) int {
	if n := len(run.Requests); n > 0 || run.Aggregate == nil {
		return n
	}
	if n := run.Aggregate.Completed; n > 0 {
		return n
	}
	return 200 // what replay assumes of a summary without a count
}

// fitCalibration fits (calibrate.Calibrate, as `headroom calibrate`),
// stores the calibration and returns it.
func (s *Server) fitCalibration(ctx context.Context, in *calibrationInput) (*calibrate.File, error) {
	f, err := calibrate.Calibrate(ctx, in.run, s.catalog(), in.src, in.opts)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if _, internal := problemFor(err); internal {
			err = fmt.Errorf("%w: %w", ErrCalibration, err)
		}
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err // the caller has given up: store nothing it will not hear of
	}
	if err := s.cals.create(f, time.Now()); err != nil {
		return nil, err
	}
	return f, nil
}

// calibrateInput decodes a calibrate job's params and prepares the fit.
func (s *Server) calibrateInput(params json.RawMessage) (*calibrationInput, error) {
	var p CalibrateParams
	if err := decodeStrict(params, &p); err != nil {
		return nil, err
	}
	return s.prepareCalibration(&p)
}

// checkCalibrateJob imports the file at submission: a file that does not
// import, or a run that cannot be fitted, is a 4xx of the submission.
func (s *Server) checkCalibrateJob(params json.RawMessage) error {
	_, err := s.calibrateInput(params)
	return err
}

// runCalibrateJob is the calibrate job kind: its result is the stored
// calibration file.
func (s *Server) runCalibrateJob(ctx context.Context, params json.RawMessage, progress func(float64)) (any, error) {
	in, held := heldValue(ctx).(*calibrationInput) // an upload, imported at submission
	if !held {
		var err error
		if in, err = s.calibrateInput(params); err != nil {
			return nil, err
		}
	}
	progress(0)
	release, err := s.jobSlot(ctx) // a fit is one simulation after another
	if err != nil {
		return nil, err
	}
	f, err := s.fitCalibration(ctx, in)
	release()
	if err != nil {
		return nil, err
	}
	return f, nil
}
