package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/gin-gonic/gin"

	"github.com/headroom-sim/headroom/catalogs"
	"github.com/headroom-sim/headroom/hardware"
	"github.com/headroom-sim/headroom/internal/adapter/measured"
	"github.com/headroom-sim/headroom/internal/study/calibrate"
	"github.com/headroom-sim/headroom/internal/study/plan"
	"github.com/headroom-sim/headroom/internal/study/scenario"
	"github.com/headroom-sim/headroom/sim"
	"github.com/headroom-sim/headroom/sim/memory"
)

// Problem is an RFC 9457 problem details object, served as
// application/problem+json for every error.
type Problem struct {
	// Type identifies the kind of problem (a URN, stable).
	Type string `json:"type" example:"urn:headroom:problem:invalid-request"`
	// Title is the kind of problem in words.
	Title string `json:"title" example:"Invalid request"`
	// Status is the HTTP status code.
	Status int `json:"status" example:"400"`
	// Detail explains this occurrence.
	Detail string `json:"detail,omitempty" example:"tp: 3 does not divide llama-3.1-8b's 32 attention heads"`
	// Errors lists the invalid fields of a validation problem.
	Errors []FieldProblem `json:"errors,omitempty"`
	// Report is the capacity report of an infeasible capacity question.
	Report *memory.Report `json:"report,omitempty"`
}

// FieldProblem is one invalid field: its dotted JSON path and the reason.
type FieldProblem struct {
	Field  string `json:"field" example:"engine.max_num_seqs"`
	Reason string `json:"reason" example:"must be >= 1"`
}

// ProblemContentType is the media type of error responses.
const ProblemContentType = "application/problem+json"

// Errors of the API itself; problemFor maps them, with the domain's, to
// statuses.
var (
	// ErrMalformed marks a body that is not a JSON document of the right shape.
	ErrMalformed = errors.New("malformed request")
	// ErrNotFound marks an unknown job or route.
	ErrNotFound = errors.New("not found")
	// ErrConflict marks an id that is already taken.
	ErrConflict = errors.New("already exists")
	// ErrNotFinished marks a request for what a job has only once it has
	// succeeded.
	ErrNotFinished = errors.New("job not finished")
	// ErrNotAcceptable marks a result with no representation the request
	// accepts (a chart asked of a result that has none).
	ErrNotAcceptable = errors.New("not acceptable")
	// ErrUnsupportedMedia marks a body of a media type the route does not
	// take.
	ErrUnsupportedMedia = errors.New("unsupported media type")
	// ErrCalibration marks a fit that could not be made from the run.
	ErrCalibration = errors.New("calibration failed")
	// ErrOverLimit marks work beyond a synchronous call's limits.
	ErrOverLimit = errors.New("over the limit")
	// ErrSimulation marks a scenario the simulator refused to run although
	// it resolved (422): what sim.Run returns is the input's doing, since
	// the simulator's own faults are panics.
	ErrSimulation = errors.New("the scenario cannot be simulated")
	// ErrQueueFull marks a job queue with no room; see QueueFullError.
	ErrQueueFull = errors.New("job queue full")
	// ErrBusy marks a synchronous simulation refused because as many as
	// the server admits are in flight; see BusyError.
	ErrBusy = errors.New("server busy")
	// ErrShuttingDown marks work refused or stopped because the server is
	// stopping.
	ErrShuttingDown = errors.New("server shutting down")
	// errMethod marks a known route asked with another method.
	errMethod = errors.New("method not allowed")
)

// ValidationError lists invalid fields (400).
type ValidationError struct{ Fields []FieldProblem }

func (e *ValidationError) Error() string {
	if len(e.Fields) == 0 {
		return "invalid request"
	}
	msg := e.Fields[0].Field + ": " + e.Fields[0].Reason
	if n := len(e.Fields) - 1; n > 0 {
		msg += fmt.Sprintf(" (and %d more)", n)
	}
	return msg
}

// QueueFullError is ErrQueueFull with a hint of when to retry (429).
type QueueFullError struct{ RetryAfterS int }

func (e *QueueFullError) Error() string {
	return fmt.Sprintf("%v: retry in about %d s", ErrQueueFull, e.RetryAfterS)
}
func (e *QueueFullError) Unwrap() error   { return ErrQueueFull }
func (e *QueueFullError) retryAfter() int { return e.RetryAfterS }

// ResultTooLargeError is a job result over jobs.max_result_bytes (422).
type ResultTooLargeError struct{ Bytes, Limit int64 }

func (e *ResultTooLargeError) Error() string {
	return fmt.Sprintf("the result is %d bytes, more than jobs.max_result_bytes (%d): ask for less (fewer sweep points, report.timeseries off, a shorter run)", e.Bytes, e.Limit)
}

// BusyError is ErrBusy with a hint of when to retry (429).
type BusyError struct {
	RetryAfterS int
	Reason      string
}

func (e *BusyError) Error() string {
	return fmt.Sprintf("%v: %s; retry in about %d s, or submit a job (POST /v1/jobs)", ErrBusy, e.Reason, e.RetryAfterS)
}
func (e *BusyError) Unwrap() error   { return ErrBusy }
func (e *BusyError) retryAfter() int { return e.RetryAfterS }

// bodyTooLargeError is a body over the limit (413).
type bodyTooLargeError struct{ limit int64 }

func (e *bodyTooLargeError) Error() string {
	return fmt.Sprintf("the request body exceeds %d bytes", e.limit)
}

func problem(status int, slug, title, detail string) Problem {
	return Problem{Type: "urn:headroom:problem:" + slug, Title: title, Status: status, Detail: detail}
}

// problemFor maps an error to its problem: the one place that decides HTTP
// statuses. internal is true for 500s, which the caller logs.
func problemFor(err error) (p Problem, internal bool) {
	var (
		ve  *ValidationError
		de  *scenario.DecodeError
		fe  *hardware.FieldError
		cfe *catalogs.FileError
		mbe *http.MaxBytesError
		tle *bodyTooLargeError
		ie  *measured.ImportError
	)
	switch {
	case errors.As(err, &mbe):
		return problem(http.StatusRequestEntityTooLarge, "body-too-large", "Request body too large",
			fmt.Sprintf("the request body exceeds %d bytes", mbe.Limit)), false
	case errors.As(err, &tle):
		return problem(http.StatusRequestEntityTooLarge, "body-too-large", "Request body too large", tle.Error()), false
	case errors.Is(err, measured.ErrTooLarge):
		return problem(http.StatusRequestEntityTooLarge, "body-too-large", "Request body too large", err.Error()), false
	case errors.As(err, &ie):
		p := problem(http.StatusBadRequest, "invalid-file", "Invalid benchmark result file", ie.Error())
		p.Errors = []FieldProblem{{Field: "file", Reason: ie.Error()}}
		return p, false
	case errors.Is(err, plan.ErrNoSLA):
		p := problem(http.StatusBadRequest, "invalid-request", "Invalid request", err.Error())
		p.Errors = []FieldProblem{{Field: "scenario.sla", Reason: "is required: " + err.Error()}}
		return p, false
	case errors.Is(err, ErrUnsupportedMedia):
		return problem(http.StatusUnsupportedMediaType, "unsupported-media-type", "Unsupported media type", err.Error()), false
	case errors.Is(err, ErrMalformed), errors.Is(err, scenario.ErrSyntax):
		return problem(http.StatusBadRequest, "malformed-request", "Malformed request", err.Error()), false
	case errors.As(err, &ve):
		p := problem(http.StatusBadRequest, "invalid-request", "Invalid request", ve.Error())
		p.Errors = ve.Fields
		return p, false
	case errors.As(err, &de) && de.Field != "" && !isDomainSentinel(err):
		p := problem(http.StatusBadRequest, "invalid-request", "Invalid request", err.Error())
		p.Errors = []FieldProblem{{Field: de.Field, Reason: de.Err.Error()}}
		return p, false
	case errors.As(err, &fe):
		p := problem(http.StatusBadRequest, "invalid-request", "Invalid request", err.Error())
		p.Errors = []FieldProblem{{Field: fe.Field, Reason: fe.Reason}}
		return p, false
	case errors.As(err, &cfe) && !isDomainSentinel(err):
		p := problem(http.StatusBadRequest, "invalid-request", "Invalid request", err.Error())
		if cfe.Field != "" {
			p.Errors = []FieldProblem{{Field: cfe.Field, Reason: cfe.Err.Error()}}
		}
		return p, false
	case errors.As(err, &de):
		return problem(http.StatusBadRequest, "invalid-request", "Invalid request", err.Error()), false
	case errors.Is(err, catalogs.ErrUnknownModel), errors.Is(err, catalogs.ErrUnknownGPU), errors.Is(err, ErrNotFound):
		return problem(http.StatusNotFound, "not-found", "Not found", err.Error()), false
	case errors.Is(err, ErrUnauthorized):
		return problem(http.StatusUnauthorized, "unauthorized", "Unauthorized", err.Error()), false
	case errors.Is(err, errMethod):
		return problem(http.StatusMethodNotAllowed, "method-not-allowed", "Method not allowed", err.Error()), false
	case errors.Is(err, ErrConflict), errors.Is(err, ErrNotFinished):
		return problem(http.StatusConflict, "conflict", "Conflict", err.Error()), false
	case errors.Is(err, ErrNotAcceptable):
		return problem(http.StatusNotAcceptable, "not-acceptable", "Not acceptable", err.Error()), false
	case errors.Is(err, plan.ErrNoCandidates):
		return problem(http.StatusUnprocessableEntity, "infeasible", "Infeasible configuration", err.Error()), false
	case errors.Is(err, calibrate.ErrTooFewRequests):
		return problem(http.StatusUnprocessableEntity, "too-few-requests", "Too few requests to calibrate", err.Error()), false
	case errors.Is(err, ErrCalibration), errors.Is(err, calibrate.ErrInvalidProfile):
		return problem(http.StatusUnprocessableEntity, "calibration-failed", "Calibration failed", err.Error()), false
	case errors.Is(err, memory.ErrDoesNotFit):
		p := problem(http.StatusUnprocessableEntity, "infeasible", "Infeasible configuration", err.Error())
		var ie *InfeasibleError
		if errors.As(err, &ie) {
			p.Report = &ie.Report
		}
		return p, false
	case errors.Is(err, sim.ErrTooLong):
		// The workload's arrivals (rates, stages, think times, trace time
		// stamps) reach past the simulated time a run may cover.
		p := problem(http.StatusUnprocessableEntity, "over-limit", "Over the limit", err.Error())
		p.Errors = []FieldProblem{{Field: "workload", Reason: err.Error()}}
		return p, false
	case errors.As(err, new(*OverLimitError)):
		var ol *OverLimitError
		errors.As(err, &ol)
		p := problem(http.StatusUnprocessableEntity, "over-limit", "Over the limit", err.Error())
		p.Errors = []FieldProblem{{Field: ol.Field, Reason: ol.Reason}}
		return p, false
	case errors.Is(err, scenario.ErrTooLarge), errors.Is(err, ErrOverLimit), errors.Is(err, sim.ErrEventLimit), errors.Is(err, ErrLimit):
		return problem(http.StatusUnprocessableEntity, "over-limit", "Over the limit", err.Error()), false
	case errors.As(err, new(*ResultTooLargeError)):
		return problem(http.StatusUnprocessableEntity, "result-too-large", "Result too large", err.Error()), false
	case errors.Is(err, ErrSimulation):
		return problem(http.StatusUnprocessableEntity, "unsimulatable", "Cannot simulate", err.Error()), false
	case errors.Is(err, ErrQueueFull):
		return problem(http.StatusTooManyRequests, "queue-full", "Job queue full", err.Error()), false
	case errors.Is(err, ErrBusy):
		return problem(http.StatusTooManyRequests, "busy", "Server busy", err.Error()), false
	case errors.Is(err, ErrShuttingDown), errors.Is(err, context.Canceled):
		return problem(http.StatusServiceUnavailable, "cancelled", "Cancelled", err.Error()), false
	case errors.Is(err, context.DeadlineExceeded):
		return problem(http.StatusGatewayTimeout, "timed-out", "Timed out", err.Error()), false
	}
	return problem(http.StatusInternalServerError, "internal", "Internal error",
		"the server failed to answer; the error is logged"), true
}

// isDomainSentinel reports errors whose status is not "bad input" even when
// they arrive wrapped in a decode or file error.
func isDomainSentinel(err error) bool {
	var mbe *http.MaxBytesError
	return errors.As(err, &mbe) || errors.Is(err, memory.ErrDoesNotFit) ||
		errors.Is(err, scenario.ErrTooLarge) || errors.Is(err, context.Canceled) ||
		errors.Is(err, context.DeadlineExceeded)
}

// fail writes err as a problem; 500s are logged here, once.
func (s *Server) fail(c *gin.Context, err error) {
	p, internal := problemFor(err)
	if internal {
		s.log.Error("request failed", "method", c.Request.Method, "path", c.Request.URL.Path, "err", err)
	}
	var ra interface{ retryAfter() int }
	if errors.As(err, &ra) {
		c.Header("Retry-After", strconv.Itoa(ra.retryAfter()))
	}
	writeProblem(c, p)
}

func writeProblem(c *gin.Context, p Problem) {
	c.Header("Content-Type", ProblemContentType)
	c.Header("Cache-Control", "no-store")
	c.Status(p.Status)
	c.Render(p.Status, problemJSON{p})
	c.Abort()
}
