package workload

import (
	"errors"
	"strconv"

	"github.com/headroom-sim/headroom/hardware"
)

// FieldError names an invalid setting, with a dotted path such as
// "workload.input_tokens.stddev".
type FieldError = hardware.FieldError

// Sentinel errors, wrapped by *ParseError where they apply.
var (
	// ErrEmptyTrace: the input held a header at most, no records.
	ErrEmptyTrace = errors.New("no records")
	// ErrLineTooLong: a line is longer than MaxLineBytes.
	ErrLineTooLong = errors.New("line longer than 1 MiB")
	// ErrUnknownFormat: the trace format is not one of TraceFormats().
	ErrUnknownFormat = errors.New("unknown trace format")
)

// ParseError is an error in a trace or length file. Its message starts with
// Name and, when known, the 1-based Line and the Field:
//
//	trace.csv:17: field input_tokens: "abc" is not an integer
type ParseError struct {
	Name  string // the name the caller gave the input, usually its file name
	Line  int    // 1-based; 0 when the error is about the whole input
	Field string // column or key; empty when the error is about the line
	Err   error
}

func (e *ParseError) Error() string {
	s := e.Name
	if e.Line > 0 {
		s += ":" + strconv.Itoa(e.Line)
	}
	s += ": "
	if e.Field != "" {
		s += "field " + e.Field + ": "
	}
	return s + e.Err.Error()
}

func (e *ParseError) Unwrap() error { return e.Err }

// parseErr builds a *ParseError with a plain reason.
func parseErr(name string, line int, field, reason string) *ParseError {
	return &ParseError{Name: name, Line: line, Field: field, Err: errors.New(reason)}
}
