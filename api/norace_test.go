//go:build !race

package api

// raceEnabled is false without the race detector (race_test.go).
const raceEnabled = false
