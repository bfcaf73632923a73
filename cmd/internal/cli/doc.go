// Package cli holds what the two commands, headroom and headroom-server,
// share at the command line: flag sets whose errors name the flag with two
// dashes (flags.go), usage and infeasibility errors and the exit codes they
// map to (errors.go), and the built-in catalog extended with the user's
// directory (catalog.go). It does no I/O of its own beyond reading that
// directory.
package cli
