package scenario_test

import (
	"errors"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/headroom-sim/headroom/internal/study/scenario"
)

// TestTimesOffTheClock: values that are valid numbers but that the
// simulator's int64 nanosecond clock cannot hold are field errors (HTTP
// 400, CLI exit 2), found as the scenario is decoded (Validate) where it
// alone tells, and otherwise when it is resolved. Before, each of these ran
// and reported wrong numbers (a TTFT p50 of -9.2e12 ms for a think time of
// 1e13 ms; 39 req/s for --rate-rps 1e-15; a 0.06 s run for trace arrivals
// at 9.3e9 s) or failed as an internal error.
func TestTimesOffTheClock(t *testing.T) {
	files := fstest.MapFS{
		"late.csv": {Data: []byte("arrival_s,input_tokens,output_tokens\n0,100,10\n9.3e9,100,10\n")},
		"ok.csv":   {Data: []byte("arrival_s,input_tokens,output_tokens\n0,100,10\n5e6,100,10\n")},
	}
	for _, c := range []struct {
		name, workload string
		field          string // "" = valid
		needsFiles     bool   // only Resolve can tell (the trace is read there)
	}{
		{"closed-loop think time 1e13 ms", `{requests: 20, arrival: {type: closed_loop, concurrency: 1, think_time_ms: 1e13}}`, "workload.arrival.think_time_ms", false},
		{"multi-turn think time 1e13 ms", `{requests: 20, arrival: {rate_rps: 10}, multi_turn: {turns: 3, think_time_ms: 1e13}}`, "workload.multi_turn.think_time_ms", false},
		{"rate 1e-15", `{requests: 100, arrival: {rate_rps: 1e-15}}`, "workload.arrival.rate_rps", false},
		{"rate 1e-300", `{requests: 100, arrival: {rate_rps: 1e-300}}`, "workload.arrival.rate_rps", false},
		{"rate 1e-9", `{requests: 1000, arrival: {rate_rps: 1e-9}}`, "workload.arrival.rate_rps", false},
		{"gamma cv 1e-300", `{requests: 100, arrival: {type: gamma, rate_rps: 10, cv: 1e-300}}`, "workload.arrival.cv", false},
		{"a stage of 1e10 s", `{stages: [{duration_s: 1e10, rate_rps: 1}]}`, "workload.stages[0].duration_s", false},
		{"trace arrivals at 9.3e9 s", `{trace: {file: late.csv, format: csv}}`, "workload.trace", true},
		{"trace arrivals slowed past the clock", `{trace: {file: ok.csv, format: csv, speedup: 0.1}}`, "workload.trace", true},
		{"trace arrivals at 5e6 s", `{trace: {file: ok.csv, format: csv}}`, "", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			doc := "model: llama-3.1-8b\ngpu: h100-sxm\nworkload: " + c.workload + "\n"
			// Decode validates what needs no catalog or file.
			s, err := scenario.Decode(strings.NewReader(doc), "s.yaml")
			var fe *scenario.FieldError
			var de *scenario.DecodeError
			if c.field != "" && !c.needsFiles {
				if !errors.As(err, &de) || de.Field != c.field {
					t.Fatalf("Decode: %v, want a field error for %s", err, c.field)
				}
				return
			}
			if err != nil {
				t.Fatalf("Decode: %v", err)
			}
			_, err = s.Resolve(scenario.Env{Catalog: builtin(t), Open: opener(files)})
			switch {
			case c.field == "" && err != nil:
				t.Fatalf("Resolve: %v", err)
			case c.field == "":
			case !errors.As(err, &fe) || fe.Field != c.field:
				t.Fatalf("Resolve: %v, want a field error for %s", err, c.field)
			}
		})
	}
}
