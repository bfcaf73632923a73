package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/headroom-sim/headroom/hardware"
)

// usageError is bad input: exit code 2 and one line naming the flag, file
// or field and the reason.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, a ...any) error { return &usageError{fmt.Sprintf(format, a...)} }

// infeasibleError means the configuration cannot be served: exit code 3.
type infeasibleError struct{ msg string }

func (e *infeasibleError) Error() string { return e.msg }

// errHelp is returned when -h was given; usage has been printed.
var errHelp = flag.ErrHelp

// report prints err as one line and maps it to an exit code.
func report(w io.Writer, prefix string, err error) int {
	if err == nil || errors.Is(err, errHelp) {
		return exitOK
	}
	msg := strings.ReplaceAll(err.Error(), "\n", "; ")
	fmt.Fprintf(w, "%s: %s\n", prefix, msg)
	var ue *usageError
	var ie *infeasibleError
	switch {
	case errors.As(err, &ue):
		return exitUsage
	case errors.As(err, &ie):
		return exitInfeasible
	}
	return exitFailure
}

// flagName turns a snake_case field name into its --kebab-case flag.
func flagName(field string) string {
	return "--" + strings.ReplaceAll(field, "_", "-")
}

// fieldAsFlag turns a *hardware.FieldError into a usage error naming the
// flag that sets the field; other errors pass through.
func fieldAsFlag(err error) error {
	var fe *hardware.FieldError
	if errors.As(err, &fe) {
		return usagef("%s: %s", flagName(fe.Field), fe.Reason)
	}
	return err
}
