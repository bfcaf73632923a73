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

// kind is what an error says about the request, and so its problem type
// and status. Every kind belongs to one family: input (400: the request
// is wrong, fields named), not found (404), infeasible (422: the
// configuration cannot serve the model), limit (413, 422, 429: beyond a
// bound of the server or of the simulator), internal (500: the server's
// fault, logged), or the protocol's own (401, 405, 406, 408, 409, 415,
// 503, 504).
type kind struct {
	status      int
	slug, title string
}

var (
	kindInput       = kind{http.StatusBadRequest, "invalid-request", "Invalid request"}
	kindMalformed   = kind{http.StatusBadRequest, "malformed-request", "Malformed request"}
	kindInvalidFile = kind{http.StatusBadRequest, "invalid-file", "Invalid benchmark result file"}

	kindNotFound = kind{http.StatusNotFound, "not-found", "Not found"}

	kindInfeasible  = kind{http.StatusUnprocessableEntity, "infeasible", "Infeasible configuration"}
	kindTooFew      = kind{http.StatusUnprocessableEntity, "too-few-requests", "Too few requests to calibrate"}
	kindCalibration = kind{http.StatusUnprocessableEntity, "calibration-failed", "Calibration failed"}

	kindTooLarge    = kind{http.StatusRequestEntityTooLarge, "body-too-large", "Request body too large"}
	kindBodyTimeout = kind{http.StatusRequestTimeout, "body-timeout", "Request body too slow"}
	kindLimit       = kind{http.StatusUnprocessableEntity, "over-limit", "Over the limit"}
	kindResultLimit = kind{http.StatusUnprocessableEntity, "result-too-large", "Result too large"}
	kindQueueFull   = kind{http.StatusTooManyRequests, "queue-full", "Job queue full"}
	kindBusy        = kind{http.StatusTooManyRequests, "busy", "Server busy"}

	kindInternal = kind{http.StatusInternalServerError, "internal", "Internal error"}

	kindUnauthorized  = kind{http.StatusUnauthorized, "unauthorized", "Unauthorized"}
	kindMethod        = kind{http.StatusMethodNotAllowed, "method-not-allowed", "Method not allowed"}
	kindNotAcceptable = kind{http.StatusNotAcceptable, "not-acceptable", "Not acceptable"}
	kindConflict      = kind{http.StatusConflict, "conflict", "Conflict"}
	kindMedia         = kind{http.StatusUnsupportedMediaType, "unsupported-media-type", "Unsupported media type"}
	kindCancelled     = kind{http.StatusServiceUnavailable, "cancelled", "Cancelled"}
	kindTimeout       = kind{http.StatusGatewayTimeout, "timed-out", "Timed out"}
)

// kindRules give every error the packages return its kind; the first that
// matches wins. Faults and outcomes come first: they keep their kind when
// a decode, file or field error wraps them (a body cut at the size limit
// inside a scenario's decode is still too large, a fault of the simulator
// is never the input's). Anything no rule knows is internal.
var kindRules = []struct {
	match func(error) bool
	kind  kind
}{
	{is(sim.ErrInternal), kindInternal},
	{as[*plan.PanicError], kindInternal},

	{as[*http.MaxBytesError], kindTooLarge},
	{as[*bodyTooLargeError], kindTooLarge},
	{is(measured.ErrTooLarge), kindTooLarge},
	{is(errBodyTimeout), kindBodyTimeout},
	{is(ErrShuttingDown), kindCancelled},
	{is(context.Canceled), kindCancelled},
	{is(context.DeadlineExceeded), kindTimeout},
	{is(memory.ErrDoesNotFit), kindInfeasible},
	{is(plan.ErrNoCandidates), kindInfeasible},
	{is(sim.ErrTooLong), kindLimit}, // a run past the simulated span, at run time
	{is(sim.ErrEventLimit), kindLimit},
	{is(scenario.ErrTooLarge), kindLimit},
	{is(ErrOverLimit), kindLimit},
	{is(ErrLimit), kindLimit},
	{as[*ResultTooLargeError], kindResultLimit},
	{is(ErrQueueFull), kindQueueFull},
	{is(ErrBusy), kindBusy},

	{as[*measured.ImportError], kindInvalidFile},
	{is(ErrUnsupportedMedia), kindMedia},
	{is(ErrMalformed), kindMalformed},
	{is(scenario.ErrSyntax), kindMalformed},
	{is(plan.ErrNoSLA), kindInput},
	{as[*ValidationError], kindInput},
	{as[*scenario.DecodeError], kindInput},
	{as[*hardware.FieldError], kindInput},
	{as[*catalogs.FileError], kindInput},

	{is(catalogs.ErrUnknownModel), kindNotFound},
	{is(catalogs.ErrUnknownGPU), kindNotFound},
	{is(ErrNotFound), kindNotFound},

	{is(calibrate.ErrTooFewRequests), kindTooFew},
	{is(ErrCalibration), kindCalibration},
	{is(calibrate.ErrInvalidProfile), kindCalibration},

	{is(ErrUnauthorized), kindUnauthorized},
	{is(errMethod), kindMethod},
	{is(ErrConflict), kindConflict},
	{is(ErrNotFinished), kindConflict},
	{is(ErrNotAcceptable), kindNotAcceptable},
}

func is(target error) func(error) bool { return func(err error) bool { return errors.Is(err, target) } }

func as[T error](err error) bool {
	var t T
	return errors.As(err, &t)
}

// kindOf is err's kind (kindInternal when no rule knows it).
func kindOf(err error) kind {
	for _, r := range kindRules {
		if r.match(err) {
			return r.kind
		}
	}
	return kindInternal
}

// problemFor maps an error to its problem: the one place that decides HTTP
// statuses, by kindOf. internal is true for 500s, which the caller logs.
func problemFor(err error) (p Problem, internal bool) {
	k := kindOf(err)
	if k == kindInternal {
		return problem(k.status, k.slug, k.title, "the server failed to answer; the error is logged"), true
	}
	p = problem(k.status, k.slug, k.title, err.Error())
	switch k.status {
	case http.StatusBadRequest, http.StatusUnprocessableEntity:
		p.Errors = fieldsOf(err, k)
	case http.StatusRequestEntityTooLarge:
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			p.Detail = fmt.Sprintf("the request body exceeds %d bytes", mbe.Limit)
		}
	}
	var ie *InfeasibleError
	if k == kindInfeasible && errors.As(err, &ie) {
		p.Report = &ie.Report
	}
	return p, false
}

// fieldsOf lists the fields an input or limit error names.
func fieldsOf(err error, k kind) []FieldProblem {
	var (
		ve  *ValidationError
		ol  *OverLimitError
		ie  *measured.ImportError
		de  *scenario.DecodeError
		fe  *hardware.FieldError
		cfe *catalogs.FileError
	)
	switch {
	case errors.As(err, &ve):
		return ve.Fields
	case errors.As(err, &ol):
		return []FieldProblem{{Field: ol.Field, Reason: ol.Reason}}
	case errors.As(err, &ie):
		return []FieldProblem{{Field: "file", Reason: ie.Error()}}
	case errors.Is(err, plan.ErrNoSLA):
		return []FieldProblem{{Field: "scenario.sla", Reason: "is required: " + err.Error()}}
	case errors.As(err, &de) && de.Field != "":
		return []FieldProblem{{Field: de.Field, Reason: de.Err.Error()}}
	case errors.As(err, &fe):
		return []FieldProblem{{Field: fe.Field, Reason: fe.Reason}}
	case errors.As(err, &cfe) && cfe.Field != "":
		return []FieldProblem{{Field: cfe.Field, Reason: cfe.Err.Error()}}
	case errors.Is(err, sim.ErrTooLong):
		// The workload's arrivals reach past the span a run may cover.
		return []FieldProblem{{Field: "workload", Reason: err.Error()}}
	}
	return nil
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
