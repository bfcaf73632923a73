// Package testkit groups helpers only tests use: golden (golden files with
// an -update flag), refdata (where the public reference data are, and
// skipping cleanly without them) and doccmd (the commands and outputs the
// Markdown documents show, which cmd/headroom's and cmd/headroom-server's
// tests run).
package testkit
