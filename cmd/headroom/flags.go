package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/headroom-sim/headroom/catalogs"
)

// newFlagSet makes a flag set that reports errors through parseFlags
// instead of printing them.
func newFlagSet(name string) *flag.FlagSet {
	fs := flag.NewFlagSet("headroom "+name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	return fs
}

// parseFlags parses args; on -h it prints the flags to w and returns
// errHelp; a bad flag becomes a usage error naming it. Positional
// arguments are returned.
func parseFlags(fs *flag.FlagSet, args []string, w io.Writer) ([]string, error) {
	// Allow flags after positional arguments (headroom catalog show gpus h100 --output json).
	var pos []string
	rest := args
	for {
		if err := fs.Parse(rest); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				fs.SetOutput(w)
				fmt.Fprintf(w, "Usage of %s:\n", fs.Name())
				fs.PrintDefaults()
				return nil, errHelp
			}
			return nil, usagef("%s", cleanFlagError(err))
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

// loadCatalog returns the built-in catalog, extended with the user's
// directory when one is given (flag or HEADROOM_CATALOG_DIR).
func loadCatalog(e *env, dir string) (*catalogs.Catalog, error) {
	base, err := catalogs.Builtin()
	if err != nil {
		return nil, fmt.Errorf("built-in catalog: %w", err)
	}
	if dir == "" {
		dir = e.getenv("HEADROOM_CATALOG_DIR")
	}
	if dir == "" {
		return base, nil
	}
	st, err := os.Stat(dir)
	if err != nil || !st.IsDir() {
		return nil, usagef("--catalog-dir: %s is not a directory", dir)
	}
	c := base.Clone()
	if err := c.LoadFS(os.DirFS(dir)); err != nil {
		return nil, usagef("--catalog-dir: %s/%v", strings.TrimSuffix(dir, "/"), err)
	}
	return c, nil
}

// outputFormat validates --output.
func outputFormat(v string) error {
	switch v {
	case "table", "json":
		return nil
	}
	return usagef("--output: %q is not table or json", v)
}
