package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/headroom-sim/headroom/internal/study/scenario"
	"github.com/headroom-sim/headroom/sim"
)

// capacity godoc
//
//	@Summary		Memory split, KV-cache blocks and max concurrency
//	@Description	The answer of `headroom capacity`: vLLM's start-up memory profile per GPU, the KV-cache block count, and how many requests fit at once. A model that does not fit answers 422 with the report (fits false, reason, min_tp_that_fits) in the problem's `report`. `calibration` names a stored calibration whose memory calibration applies (as --calibration).
//	@Tags			capacity
//	@Accept			json
//	@Produce		json,application/problem+json
//	@Param			request	body		CapacityRequest	true	"the capacity question"
//	@Success		200		{object}	memory.Report
//	@Failure		400		{object}	Problem	"malformed or invalid (errors lists the fields)"
//	@Failure		404		{object}	Problem	"unknown model, GPU or calibration"
//	@Failure		413		{object}	Problem	"body too large"
//	@Failure		422		{object}	Problem	"the model does not fit (report holds the capacity report)"
//	@Security		BearerToken
//	@Router			/v1/capacity [post]
func (s *Server) capacity(c *gin.Context) {
	var req CapacityRequest
	if err := s.bindJSON(c, &req); err != nil {
		s.fail(c, err)
		return
	}
	spec := req.spec()
	if req.Calibration != "" {
		p, err := s.cals.profile(req.Calibration)
		if err != nil {
			s.fail(c, fmt.Errorf("calibration: %w", err))
			return
		}
		spec.NonTorchAdjustGiB = p.NonTorchAdjustGiB
	}
	rep, err := s.engine.Capacity(c.Request.Context(), spec)
	if err != nil {
		s.fail(c, err)
		return
	}
	s.respond(c, http.StatusOK, rep)
}

// simulate godoc
//
//	@Summary		Simulate a scenario (synchronously)
//	@Description	Runs a scenario (the schema of the scenario file, as JSON; model and gpu are required, every other field has vLLM's default) and returns the simulation report. For small scenarios only: one of more than `simulate.sync_max_requests` requests or `simulate.sync_max_tokens` simulated tokens (prompts and outputs, estimated before it runs), or one that runs longer than `simulate.sync_timeout`, answers 422: submit it as a job (POST /v1/jobs, kind simulate). At most `simulate.max_concurrent` synchronous simulations are in flight: one more answers 429 with Retry-After at once (the body is read first, within `body_read_timeout`, so a slow client holds no admission). A time series longer than `limits.timeseries_points` is coarsened to one point per k seconds, k in the Headroom-Timeseries-Step-S header. Unknown keys are errors naming their path; scenarios may not reference files, and their `calibration` field names a calibration id of POST /v1/calibrations (404 when unknown).
//	@Tags			simulate
//	@Accept			json
//	@Produce		json,application/problem+json
//	@Param			scenario	body		scenario.Scenario	true	"the scenario"
//	@Success		200			{object}	sim.Report
//	@Failure		400			{object}	Problem	"malformed or invalid scenario"
//	@Failure		404			{object}	Problem	"unknown model, GPU or calibration"
//	@Failure		408			{object}	Problem	"the body was not sent within body_read_timeout"
//	@Failure		413			{object}	Problem	"body too large"
//	@Failure		422			{object}	Problem	"infeasible, a workload the simulator cannot run, or over the synchronous limits: use a job"
//	@Failure		429			{object}	Problem	"too many synchronous simulations in flight, or no CPU slot freed in time"
//	@Header			429			{integer}	Retry-After	"seconds"
//	@Header			200			{integer}	Headroom-Timeseries-Step-S	"seconds between time-series points, when coarsened"
//	@Failure		503			{object}	Problem	"cancelled (server shutting down)"
//	@Security		BearerToken
//	@Router			/v1/simulate [post]
func (s *Server) simulate(c *gin.Context) {
	// The body first: a client slow to send it holds no admission.
	body, err := s.readBody(c)
	if err != nil {
		s.fail(c, err)
		return
	}
	done, err := s.gate.admit()
	if err != nil {
		s.fail(c, err)
		return
	}
	defer done()
	parent := c.Request.Context()
	ctx, cancel := context.WithTimeout(parent, s.cfg.Simulate.SyncTimeout)
	defer cancel()
	sc, err := decodeScenario(body, "request body")
	if err != nil {
		s.fail(c, err)
		return
	}
	res, err := s.engine.Prepare(sc, s.runEnv(s.cfg.Simulate.SyncMaxRequests))
	if errors.Is(err, scenario.ErrTooLarge) {
		err = fmt.Errorf("%w%s", err, runAsJobHint)
	}
	if err == nil {
		err = checkTokens(&sc, res, s.cfg.Simulate.SyncMaxTokens, "simulate.sync_max_tokens", runAsJobHint)
	}
	if err != nil {
		s.fail(c, err)
		return
	}
	release, err := s.syncSlot(ctx, parent)
	if err != nil {
		s.fail(c, err)
		return
	}
	start := time.Now()
	rep, err := runSync(ctx, release, func() (*sim.Report, error) { return s.engine.Simulate(ctx, res, nil) })
	if err != nil && errors.Is(err, context.DeadlineExceeded) && parent.Err() == nil {
		err = fmt.Errorf("%w: the simulation ran past the synchronous time limit of %s%s",
			ErrOverLimit, s.cfg.Simulate.SyncTimeout, runAsJobHint)
	}
	if err != nil {
		s.fail(c, err)
		return
	}
	s.metrics.simulated("sync", rep.Requests.Total, time.Since(start))
	if k := coarsen(rep, s.cfg.Limits.TimeseriesPoints); k > 1 {
		c.Header(TimeseriesStepHeader, strconv.Itoa(k))
	}
	s.respond(c, http.StatusOK, rep)
}

// runAsJobHint ends the problems of a scenario too large to simulate
// synchronously: how to submit it as a job.
const runAsJobHint = "; run it as a job: POST /v1/jobs with {\"kind\": \"simulate\", \"params\": <scenario>}"

// TimeseriesStepHeader carries, on a synchronous report whose time series
// was coarsened, the seconds between its points.
const TimeseriesStepHeader = "Headroom-Timeseries-Step-S"

// checkSimulateJob decodes and resolves a simulate job's scenario, so that
// bad input is refused at submission.
func (s *Server) checkSimulateJob(params json.RawMessage) error {
	sc, err := decodeScenario(params, "params")
	if err != nil {
		return err
	}
	res, err := s.engine.Prepare(sc, s.runEnv(s.cfg.Jobs.MaxRequests))
	if err != nil {
		return err
	}
	return s.checkJobTokens(&sc, res)
}

// checkJobTokens bounds one simulation of a job by jobs.max_tokens.
func (s *Server) checkJobTokens(sc *scenario.Scenario, res *scenario.Resolved) error {
	return checkTokens(sc, res, s.cfg.Jobs.MaxTokens, "jobs.max_tokens", "")
}

// runSimulateJob is the simulate job kind.
func (s *Server) runSimulateJob(ctx context.Context, params json.RawMessage, progress func(float64)) (any, error) {
	sc, err := decodeScenario(params, "params")
	if err != nil {
		return nil, err
	}
	res, err := s.engine.Prepare(sc, s.runEnv(s.cfg.Jobs.MaxRequests))
	if err != nil {
		return nil, err
	}
	if err := s.checkJobTokens(&sc, res); err != nil {
		return nil, err
	}
	release, err := s.jobSlot(ctx)
	if err != nil {
		return nil, err
	}
	start := time.Now()
	rep, err := s.engine.Simulate(ctx, res, progress)
	release()
	if err != nil {
		return nil, err
	}
	s.metrics.simulated("job", rep.Requests.Total, time.Since(start))
	k := coarsen(rep, s.cfg.Limits.TimeseriesPoints)
	return Noted{Value: rep, Notes: coarsenNote("timeseries", k, s.cfg.Limits.TimeseriesPoints)}, nil
}
