package main

import (
	"errors"
	"io"
	"strings"

	"github.com/headroom-sim/headroom/cmd/internal/cli"
	"github.com/headroom-sim/headroom/hardware"
)

// usagef is bad input: exit code 2 and one line naming the flag, file or
// field and the reason.
func usagef(format string, a ...any) error { return cli.Usagef(format, a...) }

// infeasibleError means the configuration cannot be served: exit code 3.
type infeasibleError = cli.InfeasibleError

// report prints err as one line and maps it to an exit code.
func report(w io.Writer, prefix string, err error) int { return cli.Report(w, prefix, err) }

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
