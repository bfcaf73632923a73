package main

import (
	"flag"
	"io"

	"github.com/headroom-sim/headroom/catalogs"
	"github.com/headroom-sim/headroom/cmd/internal/cli"
)

// newFlagSet makes a flag set that reports errors through parseFlags
// instead of printing them.
func newFlagSet(name string) *flag.FlagSet { return cli.NewFlagSet("headroom " + name) }

// parseFlags parses args; on -h it prints the flags to w and returns
// cli.ErrHelp; a bad flag becomes a usage error naming it. Positional
// arguments are returned.
func parseFlags(fs *flag.FlagSet, args []string, w io.Writer) ([]string, error) {
	return cli.ParseFlags(fs, args, w)
}

// loadCatalog returns the built-in catalog, extended with the user's
// directory when one is given (flag or HEADROOM_CATALOG_DIR).
func loadCatalog(e *env, dir string) (*catalogs.Catalog, error) {
	return cli.LoadCatalog(e.getenv, dir)
}

// outputFormat validates --output.
func outputFormat(v string) error {
	switch v {
	case "table", "json":
		return nil
	}
	return usagef("--output: %q is not table or json", v)
}
