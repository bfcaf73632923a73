//go:build race

package api

// raceEnabled: the race detector instruments allocations and keeps objects
// alive longer, so a test bounding the bytes a run allocates allows for it.
const raceEnabled = true
