package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
)

// NewFlagSet makes a flag set named name whose errors ParseFlags reports
// instead of printing them.
func NewFlagSet(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	return fs
}

// ParseFlags parses args; on -h it prints the flags to w and returns
// ErrHelp; a bad flag becomes a UsageError naming it. Flags may follow
// positional arguments (headroom catalog show gpus h100 --output json);
// the positional arguments are returned.
func ParseFlags(fs *flag.FlagSet, args []string, w io.Writer) ([]string, error) {
	var pos []string
	rest := args
	for {
		if err := fs.Parse(rest); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				fs.SetOutput(w)
				fmt.Fprintf(w, "Usage of %s:\n", fs.Name())
				fs.PrintDefaults()
				return nil, ErrHelp
			}
			return nil, Usagef("%s", cleanFlagError(err))
		}
		rest = fs.Args()
		if len(rest) == 0 {
			break
		}
		pos = append(pos, rest[0])
		rest = rest[1:]
	}
	return pos, nil
}

// cleanFlagError rewrites the flag package's messages to name the flag
// with two dashes.
func cleanFlagError(err error) string {
	msg := err.Error()
	msg = strings.Replace(msg, "flag provided but not defined: -", "unknown flag --", 1)
	if strings.HasPrefix(msg, "invalid value ") {
		// invalid value "x" for flag -tp: parse error
		if i := strings.Index(msg, " for flag -"); i > 0 {
			rest := msg[i+len(" for flag -"):]
			name, reason, _ := strings.Cut(rest, ": ")
			return fmt.Sprintf("--%s: invalid value %s: %s", name, msg[len("invalid value "):i], reason)
		}
	}
	if strings.HasPrefix(msg, "flag needs an argument: -") {
		return "--" + strings.TrimPrefix(msg, "flag needs an argument: -") + ": needs a value"
	}
	return msg
}
