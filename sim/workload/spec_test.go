package workload

import (
	"bytes"
	"encoding/json"
	"math"
	"reflect"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

func TestSpecValidate(t *testing.T) {
	fixed := LengthSpec{Type: LengthFixed, Value: 100}
	poisson := ArrivalSpec{Type: ArrivalPoisson, RateRPS: 5}
	trace := &TraceSpec{File: "t.csv", Format: FormatAzure}
	tests := []struct {
		name      string
		spec      Spec
		wantField string
	}{
		{"arrival", Spec{Requests: 10, Arrival: poisson, InputTokens: fixed, OutputTokens: fixed}, ""},
		{"closed loop", Spec{Requests: 10, Arrival: ArrivalSpec{Type: ArrivalClosedLoop, Concurrency: 4}, InputTokens: fixed, OutputTokens: fixed}, ""},
		{"stages without arrival", Spec{Stages: []StageSpec{{DurationS: 60, RateRPS: 5}, {DurationS: 60, Concurrency: 8}}, InputTokens: fixed, OutputTokens: fixed}, ""},
		{"stages with gamma shape", Spec{Stages: []StageSpec{{DurationS: 1, RateRPS: 5}}, Arrival: ArrivalSpec{Type: ArrivalGamma, CV: 2}, InputTokens: fixed, OutputTokens: fixed}, ""},
		{"stages with think time", Spec{Stages: []StageSpec{{DurationS: 1, Concurrency: 5}}, Arrival: ArrivalSpec{ThinkTimeMS: 100}, InputTokens: fixed, OutputTokens: fixed}, ""},
		{"trace", Spec{Trace: trace}, ""},
		{"trace with requests cap", Spec{Requests: 50, Trace: trace}, ""},
		{"everything", Spec{Requests: 10, Seed: 3, MaxConcurrency: 4, Arrival: poisson, InputTokens: fixed, OutputTokens: fixed,
			SharedPrefix: &SharedPrefixSpec{Groups: 2, PrefixTokens: 64}, MultiTurn: &MultiTurnSpec{Turns: 3, ThinkTimeMS: 10}}, ""},
		{"requests < 0", Spec{Requests: -1, Trace: trace}, "workload.requests"},
		{"no requests", Spec{Arrival: poisson, InputTokens: fixed, OutputTokens: fixed}, "workload.requests"},
		{"max concurrency < 0", Spec{Requests: 1, MaxConcurrency: -1, Arrival: poisson, InputTokens: fixed, OutputTokens: fixed}, "workload.max_concurrency"},
		{"no arrival", Spec{Requests: 1, InputTokens: fixed, OutputTokens: fixed}, "workload.arrival.type"},
		{"bad arrival", Spec{Requests: 1, Arrival: ArrivalSpec{Type: ArrivalGamma, RateRPS: 1}, InputTokens: fixed, OutputTokens: fixed}, "workload.arrival.cv"},
		{"no input", Spec{Requests: 1, Arrival: poisson, OutputTokens: fixed}, "workload.input_tokens.type"},
		{"bad output", Spec{Requests: 1, Arrival: poisson, InputTokens: fixed, OutputTokens: LengthSpec{Type: LengthNormal, Mean: 5, Stddev: -2}}, "workload.output_tokens.stddev"},
		{"stage rate and concurrency", Spec{Stages: []StageSpec{{DurationS: 1, RateRPS: 1}, {DurationS: 1, RateRPS: 1, Concurrency: 1}}, InputTokens: fixed, OutputTokens: fixed}, "workload.stages[1]"},
		{"too many stages", Spec{Stages: make([]StageSpec, MaxStages+1), InputTokens: fixed, OutputTokens: fixed}, "workload.stages"},
		{"stage neither", Spec{Stages: []StageSpec{{DurationS: 1}}, InputTokens: fixed, OutputTokens: fixed}, "workload.stages[0]"},
		{"stage duration 0", Spec{Stages: []StageSpec{{RateRPS: 1}}, InputTokens: fixed, OutputTokens: fixed}, "workload.stages[0].duration_s"},
		{"stage negative concurrency", Spec{Stages: []StageSpec{{DurationS: 1, RateRPS: 1, Concurrency: -1}}, InputTokens: fixed, OutputTokens: fixed}, "workload.stages[0].concurrency"},
		{"stages and arrival rate", Spec{Stages: []StageSpec{{DurationS: 1, RateRPS: 1}}, Arrival: poisson, InputTokens: fixed, OutputTokens: fixed}, "workload.arrival.rate_rps"},
		{"stages and arrival concurrency", Spec{Stages: []StageSpec{{DurationS: 1, RateRPS: 1}}, Arrival: ArrivalSpec{Type: ArrivalClosedLoop, Concurrency: 3}, InputTokens: fixed, OutputTokens: fixed}, "workload.arrival.concurrency"},
		{"stages gamma without cv", Spec{Stages: []StageSpec{{DurationS: 1, RateRPS: 1}}, Arrival: ArrivalSpec{Type: ArrivalGamma}, InputTokens: fixed, OutputTokens: fixed}, "workload.arrival.cv"},
		{"trace and arrival", Spec{Trace: trace, Arrival: poisson}, "workload.arrival"},
		{"trace and stages", Spec{Trace: trace, Stages: []StageSpec{{DurationS: 1, RateRPS: 1}}}, "workload.stages"},
		{"trace and input", Spec{Trace: trace, InputTokens: fixed}, "workload.input_tokens"},
		{"trace and multi-turn", Spec{Trace: trace, MultiTurn: &MultiTurnSpec{Turns: 2}}, "workload.multi_turn"},
		{"trace without file", Spec{Trace: &TraceSpec{Format: FormatAzure}}, "workload.trace.file"},
		{"trace unknown format", Spec{Trace: &TraceSpec{File: "a", Format: "sharegpt"}}, "workload.trace.format"},
		{"trace speedup < 0", Spec{Trace: &TraceSpec{File: "a", Format: FormatCSV, Speedup: -1}}, "workload.trace.speedup"},
		{"trace limit < 0", Spec{Trace: &TraceSpec{File: "a", Format: FormatCSV, Limit: -1}}, "workload.trace.limit"},
		{"prefix groups 0", Spec{Requests: 1, Arrival: poisson, InputTokens: fixed, OutputTokens: fixed, SharedPrefix: &SharedPrefixSpec{PrefixTokens: 5}}, "workload.shared_prefix.groups"},
		{"prefix tokens 0", Spec{Requests: 1, Arrival: poisson, InputTokens: fixed, OutputTokens: fixed, SharedPrefix: &SharedPrefixSpec{Groups: 5}}, "workload.shared_prefix.prefix_tokens"},
		{"turns 0", Spec{Requests: 1, Arrival: poisson, InputTokens: fixed, OutputTokens: fixed, MultiTurn: &MultiTurnSpec{}}, "workload.multi_turn.turns"},
		{"think time NaN", Spec{Requests: 1, Arrival: poisson, InputTokens: fixed, OutputTokens: fixed, MultiTurn: &MultiTurnSpec{Turns: 2, ThinkTimeMS: math.NaN()}}, "workload.multi_turn.think_time_ms"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkFieldError(t, tt.spec.Validate("workload"), tt.wantField)
		})
	}
}

// The yaml and json key names are the public scenario schema
// (docs/scenario.md): decoding the documented example with unknown keys
// refused gives the expected values.
func TestSpecKeyNames(t *testing.T) {
	const doc = `
requests: 1000
seed: 1
arrival: {type: gamma, rate_rps: 10, cv: 2}
max_concurrency: 64
input_tokens:  {type: normal, mean: 512, stddev: 128, min: 16, max: 2048}
output_tokens: {type: buckets, buckets: [{weight: 3, min: 1, max: 64}, {weight: 1, min: 256, max: 512}]}
shared_prefix: {groups: 10, prefix_tokens: 128}
multi_turn: {turns: 3, think_time_ms: 5000}
`
	want := Spec{
		Requests: 1000, Seed: 1, MaxConcurrency: 64,
		Arrival:      ArrivalSpec{Type: "gamma", RateRPS: 10, CV: 2},
		InputTokens:  LengthSpec{Type: "normal", Mean: 512, Stddev: 128, Min: 16, Max: 2048},
		OutputTokens: LengthSpec{Type: "buckets", Buckets: []Bucket{{3, 1, 64}, {1, 256, 512}}},
		SharedPrefix: &SharedPrefixSpec{Groups: 10, PrefixTokens: 128},
		MultiTurn:    &MultiTurnSpec{Turns: 3, ThinkTimeMS: 5000},
	}
	dec := yaml.NewDecoder(strings.NewReader(doc))
	dec.KnownFields(true)
	var got Spec
	if err := dec.Decode(&got); err != nil {
		t.Fatalf("yaml: %v", err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("yaml decoded\n%+v\nwant\n%+v", got, want)
	}
	if err := got.Validate("workload"); err != nil {
		t.Fatal(err)
	}
	// JSON round trip with unknown keys refused.
	b, err := json.Marshal(want)
	if err != nil {
		t.Fatal(err)
	}
	jd := json.NewDecoder(bytes.NewReader(b))
	jd.DisallowUnknownFields()
	var back Spec
	if err := jd.Decode(&back); err != nil {
		t.Fatalf("json: %v (%s)", err, b)
	}
	if !reflect.DeepEqual(back, want) {
		t.Fatalf("json round trip\n%+v\nwant\n%+v", back, want)
	}
	for _, key := range []string{`"rate_rps"`, `"max_concurrency"`, `"prefix_tokens"`, `"think_time_ms"`, `"input_tokens"`} {
		if !bytes.Contains(b, []byte(key)) {
			t.Errorf("json %s lacks %s", b, key)
		}
	}

	var stages Spec
	const staged = "stages:\n  - {duration_s: 60, rate_rps: 5}\n  - {duration_s: 30, concurrency: 8}\ntrace: {file: t.csv, format: azure, speedup: 2, limit: 10}\n"
	dec = yaml.NewDecoder(strings.NewReader(staged))
	dec.KnownFields(true)
	if err := dec.Decode(&stages); err != nil {
		t.Fatal(err)
	}
	wantStages := []StageSpec{{DurationS: 60, RateRPS: 5}, {DurationS: 30, Concurrency: 8}}
	if !reflect.DeepEqual(stages.Stages, wantStages) || *stages.Trace != (TraceSpec{File: "t.csv", Format: "azure", Speedup: 2, Limit: 10}) {
		t.Fatalf("decoded %+v %+v", stages.Stages, stages.Trace)
	}
}

func TestTraceSpecApply(t *testing.T) {
	recs := []TraceRecord{{ArrivalS: 0, InputTokens: 1, OutputTokens: 1}, {ArrivalS: 1, InputTokens: 2, OutputTokens: 2}, {ArrivalS: 3, InputTokens: 3, OutputTokens: 3}}
	tests := []struct {
		name string
		spec TraceSpec
		want []TraceRecord
	}{
		{"defaults", TraceSpec{}, recs},
		{"limit", TraceSpec{Limit: 2}, recs[:2]},
		{"limit above length", TraceSpec{Limit: 9}, recs},
		{"speedup", TraceSpec{Speedup: 2}, []TraceRecord{{ArrivalS: 0, InputTokens: 1, OutputTokens: 1}, {ArrivalS: 0.5, InputTokens: 2, OutputTokens: 2}, {ArrivalS: 1.5, InputTokens: 3, OutputTokens: 3}}},
		{"slowdown and limit", TraceSpec{Speedup: 0.5, Limit: 2}, []TraceRecord{{ArrivalS: 0, InputTokens: 1, OutputTokens: 1}, {ArrivalS: 2, InputTokens: 2, OutputTokens: 2}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.spec.Apply(recs)
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("Apply = %v, want %v", got, tt.want)
			}
			if recs[1].ArrivalS != 1 {
				t.Fatal("Apply changed its input")
			}
		})
	}
}
