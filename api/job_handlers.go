package api

import (
	"net/http"

	"github.com/gin-gonic/gin"
)

// submitJob godoc
//
//	@Summary		Submit a job
//	@Description	Queues a job of a registered kind (simulate; sweep, plan and calibrate later). For simulate, params is a scenario, checked at submission (400/404/422 as POST /v1/simulate) and bounded by `jobs.max_requests` and `jobs.timeout`. A full queue answers 429 with Retry-After.
//	@Tags			jobs
//	@Accept			json
//	@Produce		json,application/problem+json
//	@Param			job	body		JobRequest	true	"kind and params"
//	@Success		202	{object}	JobView
//	@Header			202	{string}	Location	"/v1/jobs/{id}"
//	@Failure		400	{object}	Problem	"malformed, unknown kind, invalid params"
//	@Failure		404	{object}	Problem	"unknown model or GPU"
//	@Failure		413	{object}	Problem	"body too large"
//	@Failure		422	{object}	Problem	"infeasible or over the job limits"
//	@Failure		429	{object}	Problem	"queue full"
//	@Header			429	{integer}	Retry-After	"seconds"
//	@Failure		503	{object}	Problem	"shutting down"
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
//	@Summary		Show a job
//	@Description	State, progress (0–1), and the result once succeeded or the error (a problem) once failed or cancelled. Finished jobs are kept for `jobs.result_ttl`.
//	@Tags			jobs
//	@Produce		json,application/problem+json
//	@Param			id	path		string	true	"job id"
//	@Success		200	{object}	JobView
//	@Failure		404	{object}	Problem	"unknown or expired job"
//	@Router			/v1/jobs/{id} [get]
func (s *Server) getJob(c *gin.Context) {
	v, err := s.jobs.Get(c.Param("id"))
	if err != nil {
		s.fail(c, err)
		return
	}
	s.respond(c, http.StatusOK, v)
}

// cancelJob godoc
//
//	@Summary		Cancel a job
//	@Description	A queued job is cancelled at once; a running one stops promptly and ends cancelled. A finished job is left as it is. Answers the job.
//	@Tags			jobs
//	@Produce		json,application/problem+json
//	@Param			id	path		string	true	"job id"
//	@Success		200	{object}	JobView
//	@Failure		404	{object}	Problem	"unknown or expired job"
//	@Router			/v1/jobs/{id} [delete]
func (s *Server) cancelJob(c *gin.Context) {
	v, err := s.jobs.Cancel(c.Param("id"))
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
//	@Router			/v1/jobs [get]
func (s *Server) listJobs(c *gin.Context) {
	s.respond(c, http.StatusOK, JobList{Jobs: nonNil(s.jobs.List())})
}
