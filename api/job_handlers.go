package api

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/gin-gonic/gin"

	"github.com/headroom-sim/headroom/internal/adapter/plot"
	"github.com/headroom-sim/headroom/internal/study/plan"
)

// submitJob godoc
//
//	@Summary		Submit a job
//	@Description	Queues a job of a registered kind; its params are checked at submission (400/404/422), so a job fails only for what a run reveals. Kinds and their params (JSON): `simulate` a scenario (as POST /v1/simulate), answering the report; `sweep` SweepParams (scenario, axes [{path, values}], list), answering a plan.SweepResult (a row per point; points that cannot run carry an error); `plan` PlanParams (scenario with an sla, and a workload.rate_profile for traffic that changes; gpus, tps, max_replicas, configs, price_per_gpu_hour_usd, headroom, skip_headroom, target_utilization, window_s, pareto_metric), answering a plan.PlanResult (the recommendation first; with a rate profile, its day); `curve` CurveParams (scenario, rates_rps or concurrencies, step_duration_s), answering a plan.CurveResult; `maxload` MaxLoadParams (scenario with an sla, max_load, tolerance, max_probes, min_duration_s, skip_bands), answering a plan.LoadResult (with max_load_interval, the answer's 80% and 95% band); `compare` CompareParams (a, b, name_a, name_b, keep_workloads), answering a plan.CompareResult; `calibrate` CalibrateParams (file as base64, or files of a run folder, and the fields of POST /v1/calibrations), answering the stored calibration; `validate` ValidateParams (files and the fields of POST /v1/validate), answering a ValidationReport. Scenarios are decoded strictly (unknown keys are errors naming their path, as params.scenario.engine.max_num_seq), may not reference files, and may name a stored calibration id. Every simulation of a job is bounded by `jobs.max_requests` and `jobs.max_tokens` and takes a slot of the server's CPU budget (`limits.simulations`) while it runs; the job is bounded by `jobs.timeout`, its result by `jobs.max_result_bytes`. A full queue answers 429 with Retry-After.
//	@Tags			jobs
//	@Accept			json
//	@Produce		json,application/problem+json
//	@Param			job	body		JobRequest	true	"kind and params"
//	@Success		202	{object}	JobView
//	@Header			202	{string}	Location	"/v1/jobs/{id}"
//	@Failure		400	{object}	Problem	"malformed, unknown kind, invalid params"
//	@Failure		404	{object}	Problem	"unknown model, GPU or calibration"
//	@Failure		413	{object}	Problem	"body too large"
//	@Failure		422	{object}	Problem	"infeasible (no plan candidate fits), too few requests to calibrate, or over the job limits"
//	@Failure		429	{object}	Problem	"queue full"
//	@Header			429	{integer}	Retry-After	"seconds"
//	@Failure		503	{object}	Problem	"shutting down"
//	@Security		BearerToken
//	@Router			/v1/jobs [post]
func (s *Server) submitJob(c *gin.Context) {
	var req JobRequest
	if err := s.bindJSON(c, &req); err != nil {
		s.fail(c, err)
		return
	}
	v, err := s.jobs.Submit(req.Kind, req.Params)
	if err != nil {
		s.fail(c, paramsFields(err))
		return
	}
	c.Header("Location", "/v1/jobs/"+v.ID)
	s.respond(c, http.StatusAccepted, v)
}

// paramsFields prefixes the fields of a params validation problem with
// "params.", so that they name paths in the request body.
func paramsFields(err error) error {
	p, _ := problemFor(err)
	if p.Status != http.StatusBadRequest || len(p.Errors) == 0 || p.Errors[0].Field == "kind" {
		return err
	}
	out := &ValidationError{}
	for _, f := range p.Errors {
		out.Fields = append(out.Fields, FieldProblem{Field: "params." + f.Field, Reason: f.Reason})
	}
	return out
}

// getJob godoc
//
//	@Summary		Show a job, or draw its result
//	@Description	State, progress (0–1), and the result once succeeded (with its size, result_bytes, and notes on what the server changed in it, such as a coarsened time series) or the error (a problem) once failed or cancelled. Finished jobs are kept for `jobs.result_ttl`, within `jobs.max_finished` and `jobs.max_results_bytes` (the oldest dropped first). With `Accept: image/svg+xml` a succeeded job's result is drawn as an SVG chart instead, as the CLI's --plot-dir does: a sweep's heat map, a plan's cost–latency Pareto front (with ?chart=day, the rate profile played through its recommendation: load, replicas and the binding latency over time), a curve's throughput–latency staircase, a maxload's search, a simulate report's timeline (with report.timeseries). A result with no chart (compare, calibrate, a simulate report without a time series, a plan with no candidate) answers 406; a job that has not succeeded answers 409.
//	@Tags			jobs
//	@Produce		json,application/problem+json,image/svg+xml
//	@Param			id		path		string	true	"job id"
//	@Param			Accept	header		string	false	"application/json (default) or image/svg+xml"
//	@Param			chart	query		string	false	"with image/svg+xml: pareto (default) or day, for a plan with a rate profile"	Enums(pareto, day)
//	@Success		200		{object}	JobView
//	@Failure		404		{object}	Problem	"unknown or expired job"
//	@Failure		406		{object}	Problem	"SVG asked of a result that has no chart"
//	@Failure		409		{object}	Problem	"SVG asked of a job that has not succeeded"
//	@Failure		429		{object}	Problem	"SVG: too many synchronous simulations and charts in flight"
//	@Security		BearerToken
//	@Router			/v1/jobs/{id} [get]
func (s *Server) getJob(c *gin.Context) {
	c.Header("Vary", "Accept")
	if c.NegotiateFormat(gin.MIMEJSON, plot.ContentType) == plot.ContentType {
		s.jobChart(c)
		return
	}
	id, err := pathID(c)
	if err != nil {
		s.fail(c, err)
		return
	}
	v, err := s.jobs.Get(id)
	if err != nil {
		s.fail(c, err)
		return
	}
	s.respondJob(c, v)
}

// respondJob writes a job's view with its kept result spliced in as it is
// stored: the result is neither decoded nor copied, however large.
func (s *Server) respondJob(c *gin.Context, v JobView) {
	raw := v.Result
	v.Result = nil
	head, err := marshalJSON(v)
	if err != nil {
		s.fail(c, fmt.Errorf("encode response: %w", err))
		return
	}
	if len(raw) == 0 {
		c.Data(http.StatusOK, "application/json; charset=utf-8", head)
		return
	}
	// head is an indented object, {…\n  "last": value\n}\n: open it
	// after its last member and add the result.
	head, ok := bytes.CutSuffix(head, []byte("\n}\n"))
	if !ok {
		s.fail(c, fmt.Errorf("encode response: unexpected view encoding"))
		return
	}
	head = append(head, ",\n  \"result\": "...)
	tail := []byte("\n}\n")
	c.Header("Content-Type", "application/json; charset=utf-8")
	c.Header("Content-Length", strconv.Itoa(len(head)+len(raw)+len(tail)))
	c.Status(http.StatusOK)
	for _, b := range [][]byte{head, raw, tail} {
		if _, err := c.Writer.Write(b); err != nil {
			return // the client left
		}
	}
}

// jobChart answers a job's result as its default chart.
func (s *Server) jobChart(c *gin.Context) {
	id, err := pathID(c)
	if err != nil {
		s.fail(c, err)
		return
	}
	v, err := s.jobs.Get(id)
	if err != nil {
		s.fail(c, err)
		return
	}
	if v.State != JobSucceeded {
		s.fail(c, fmt.Errorf("%w: job %s is %s; its chart can be drawn once it has succeeded", ErrNotFinished, id, v.State))
		return
	}
	// Drawing decodes the kept result: it is admitted and takes a slot of
	// the CPU budget as a synchronous simulation does.
	done, err := s.gate.admit()
	if err != nil {
		s.fail(c, err)
		return
	}
	defer done()
	parent := c.Request.Context()
	ctx, cancel := context.WithTimeout(parent, s.cfg.Simulate.SyncTimeout)
	defer cancel()
	release, err := s.syncSlot(ctx, parent)
	if err != nil {
		s.fail(c, err)
		return
	}
	defer release()
	v, res, err := s.jobs.Result(id)
	if err != nil {
		s.fail(c, err)
		return
	}
	var b bytes.Buffer
	switch chart := c.Query("chart"); chart {
	case "", "pareto":
		err = plot.Render(&b, res)
	case "day":
		pr, ok := res.(*plan.PlanResult)
		if !ok || pr.Day == nil {
			err = fmt.Errorf("%w: chart=day draws a plan of a rate profile; job %s has none", ErrNotAcceptable, id)
			break
		}
		err = plot.Day(&b, pr.Day)
	default:
		err = invalid("chart", "%q is not pareto or day", chart)
	}
	switch {
	case errors.Is(err, plot.ErrNoChart):
		err = fmt.Errorf("%w: a %s job's result has no chart (charts: sweep, plan, curve, maxload, and simulate with report.timeseries); ask for application/json", ErrNotAcceptable, v.Kind)
	case errors.Is(err, plot.ErrNoData), errors.Is(err, plot.ErrNoTimeseries):
		err = fmt.Errorf("%w: no chart for this %s job: %v; ask for application/json", ErrNotAcceptable, v.Kind, err)
	}
	if err != nil {
		s.fail(c, err)
		return
	}
	c.Data(http.StatusOK, plot.ContentType, b.Bytes())
}

// cancelJob godoc
//
//	@Summary		Cancel or delete a job
//	@Description	A queued job is cancelled at once; a running one stops promptly and ends cancelled (both stay listed, cancelled, until jobs.result_ttl). A finished job (succeeded, failed or cancelled) is deleted and its result freed: later GETs answer 404. Answers the job as it was.
//	@Tags			jobs
//	@Produce		json,application/problem+json
//	@Param			id	path		string	true	"job id"
//	@Success		200	{object}	JobView
//	@Failure		404	{object}	Problem	"unknown or expired job"
//	@Security		BearerToken
//	@Router			/v1/jobs/{id} [delete]
func (s *Server) cancelJob(c *gin.Context) {
	id, err := pathID(c)
	if err != nil {
		s.fail(c, err)
		return
	}
	v, _, err := s.jobs.Cancel(id)
	if err != nil {
		s.fail(c, err)
		return
	}
	s.respond(c, http.StatusOK, v)
}

// listJobs godoc
//
//	@Summary		List jobs
//	@Description	Every job held, oldest first, without results.
//	@Tags			jobs
//	@Produce		json,application/problem+json
//	@Success		200	{object}	JobList
//	@Security		BearerToken
//	@Router			/v1/jobs [get]
func (s *Server) listJobs(c *gin.Context) {
	s.respond(c, http.StatusOK, JobList{Jobs: nonNil(s.jobs.List())})
}
