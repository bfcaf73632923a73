package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
)

// Exit codes of both commands.
const (
	ExitOK         = 0
	ExitFailure    = 1 // the command could not do its job
	ExitUsage      = 2 // bad input: a flag, a file, a field
	ExitInfeasible = 3 // the configuration cannot be served
)

// UsageError is bad input: exit code 2 and one line naming the flag, file
// or field and the reason.
type UsageError struct{ Msg string }

func (e *UsageError) Error() string { return e.Msg }

// Usagef makes a UsageError.
func Usagef(format string, a ...any) error { return &UsageError{fmt.Sprintf(format, a...)} }

// InfeasibleError means the configuration cannot be served: exit code 3.
type InfeasibleError struct{ Msg string }

func (e *InfeasibleError) Error() string { return e.Msg }

// ErrHelp is returned when -h was given; the usage has been printed.
var ErrHelp = flag.ErrHelp

// Report prints err to w as one line after prefix and maps it to an exit
// code.
func Report(w io.Writer, prefix string, err error) int {
	if err == nil || errors.Is(err, ErrHelp) {
		return ExitOK
	}
	msg := strings.ReplaceAll(err.Error(), "\n", "; ")
	fmt.Fprintf(w, "%s: %s\n", prefix, msg)
	var ue *UsageError
	var ie *InfeasibleError
	switch {
	case errors.As(err, &ue):
		return ExitUsage
	case errors.As(err, &ie):
		return ExitInfeasible
	}
	return ExitFailure
}
