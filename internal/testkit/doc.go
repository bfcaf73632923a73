// Package testkit groups helpers only tests use: golden (golden files with
// an -update flag), refdata (where the public reference data are) and
// kernels (the step-time model against measured kernel times).
package testkit
