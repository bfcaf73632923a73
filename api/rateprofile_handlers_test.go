package api

import (
	"bytes"
	"encoding/json"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/headroom-sim/headroom/internal/study/plan"
	"github.com/headroom-sim/headroom/sim/workload"
)

const azureHead = "../examples/azure-conv-head.csv"

func TestRateProfile(t *testing.T) {
	h := newTestServer(t, nil).Handler()
	csv := []UploadedFile{{Name: "day.csv", Data: []byte("at_s,rate_rps\n0,2\n28800,9\n64800,4\n")}}
	for _, c := range []struct {
		name   string
		fields map[string]string
		files  []UploadedFile
		want   []workload.RatePoint
	}{
		{"a CSV profile", nil, csv, []workload.RatePoint{{AtS: 0, RateRPS: 2}, {AtS: 28800, RateRPS: 9}, {AtS: 64800, RateRPS: 4}}},
		{"a JSON list, stretched and scaled", map[string]string{"time_scale": "2", "rate_scale": "1.5"},
			[]UploadedFile{{Name: "day.json", Data: []byte(`[{"at_s": 0, "rate_rps": 2}, {"at_s": 100, "rate_rps": 4}]`)}},
			[]workload.RatePoint{{AtS: 0, RateRPS: 3}, {AtS: 200, RateRPS: 6}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := postRun(t, h, "/v1/rate-profile", c.fields, c.files)
			if r.status != 200 {
				t.Fatalf("HTTP %d: %s", r.status, r.body)
			}
			var res RateProfileResult
			r.json(t, &res)
			if !reflect.DeepEqual(res.RateProfile, c.want) || res.InputTokens != nil || res.Requests != 0 {
				t.Errorf("profile %+v, lengths %v, want %+v", res.RateProfile, res.InputTokens, c.want)
			}
		})
	}
}

// The README's day example (--rate-profile-trace examples/azure-conv-head.csv
// --time-scale 200 --window-s 1800) gives the profile the planner computes.
func TestRateProfileFromTrace(t *testing.T) {
	h := newTestServer(t, nil).Handler()
	data, err := os.ReadFile(azureHead)
	if err != nil {
		t.Fatal(err)
	}
	r := postRun(t, h, "/v1/rate-profile", map[string]string{"kind": "trace", "time_scale": "200", "window_s": "1800"},
		[]UploadedFile{{Name: "azure-conv-head.csv", Data: data}})
	if r.status != 200 {
		t.Fatalf("HTTP %d: %s", r.status, r.body)
	}
	var res RateProfileResult
	r.json(t, &res)
	recs, err := workload.ParseTrace(bytes.NewReader(data), workload.FormatAzure, "azure-conv-head.csv")
	if err != nil {
		t.Fatal(err)
	}
	tp, err := plan.ProfileFromTrace(recs, 1800, 200)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(res.RateProfile, tp.Points) || res.RateProfileEndS != tp.EndS || res.Requests != len(recs) || res.TraceWindowS != 9 {
		t.Errorf("%d points ending %g s, %d requests, window %g s; want %d points ending %g s", len(res.RateProfile), res.RateProfileEndS, res.Requests, res.TraceWindowS, len(tp.Points), tp.EndS)
	}
	if res.RateProfileEndS < 80000 || res.RateProfileEndS > 90000 {
		t.Errorf("seven minutes of trace × 200 should be about a day, got %g s", res.RateProfileEndS)
	}
	if res.InputTokens == nil || res.InputTokens.Type != workload.LengthBuckets || len(res.InputTokens.Buckets) != 32 || !reflect.DeepEqual(*res.OutputTokens, tp.OutputTokens) {
		t.Errorf("lengths %+v / %+v", res.InputTokens, res.OutputTokens)
	}
	// The answer is a workload a plan takes as it is.
	w, _ := json.Marshal(map[string]any{"rate_profile": res.RateProfile, "rate_profile_end_s": res.RateProfileEndS, "input_tokens": res.InputTokens, "output_tokens": res.OutputTokens})
	job := `{"kind":"plan","params":{"scenario":{"model":"llama-3.1-8b","gpu":"l40s","workload":` + string(w) + `,"sla":{"ttft_ms":{"p99":1500}}},"gpus":["l40s"],"tps":[1]}}`
	if r := do(t, h, "POST", "/v1/jobs", job); r.status != 202 {
		t.Errorf("the plan refused the profile: HTTP %d: %s", r.status, r.body)
	}
}

func TestRateProfileRefuses(t *testing.T) {
	h := newTestServer(t, nil).Handler()
	csv := []UploadedFile{{Name: "day.csv", Data: []byte("at_s,rate_rps\n0,2\n60,3\n")}}
	trace := []UploadedFile{{Name: "trace.txt", Data: []byte("x")}}
	for _, c := range []struct {
		name   string
		fields map[string]string
		files  []UploadedFile
		field  string
		detail string
	}{
		{"one point", nil, []UploadedFile{{Name: "p.csv", Data: []byte("at_s,rate_rps\n0,2\n")}}, "file", "a single point needs rate_profile_end_s"},
		{"no header", nil, []UploadedFile{{Name: "p.csv", Data: []byte("0,2\n60,3\n")}}, "file", "at_s and rate_rps"},
		{"a negative rate", nil, []UploadedFile{{Name: "p.csv", Data: []byte("at_s,rate_rps\n0,-2\n60,3\n")}}, "file", "rate_rps"},
		{"two files", nil, append(csv, csv[0]), "file", "give one file"},
		{"unknown kind", map[string]string{"kind": "day"}, csv, "kind", `"day" is not profile or trace`},
		{"a trace's field for a profile", map[string]string{"window_s": "60"}, csv, "kind", "give kind trace"},
		{"a trace of no known format", map[string]string{"kind": "trace"}, trace, "trace_format", "say the format of trace.txt"},
		{"an unknown trace format", map[string]string{"kind": "trace", "trace_format": "nope"}, trace, "trace_format", `"nope" is not a trace format`},
		{"a zero time scale", map[string]string{"time_scale": "0"}, csv, "time_scale", "must be a number in"},
		{"a window too long", map[string]string{"kind": "trace", "window_s": "1e9"}, trace, "window_s", "must be a number in"},
		{"a bad trace", map[string]string{"kind": "trace", "trace_format": "azure"}, []UploadedFile{{Name: "t.csv", Data: []byte("nope\n1\n")}}, "file", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := postRun(t, h, "/v1/rate-profile", c.fields, c.files)
			p := r.wantProblem(t, "invalid-request", c.field)
			if !strings.Contains(p.Detail, c.detail) {
				t.Errorf("detail %q lacks %q", p.Detail, c.detail)
			}
		})
	}
}

// FuzzRateProfileUpload fuzzes the file of POST /v1/rate-profile, as a
// profile and as a trace.
func FuzzRateProfileUpload(f *testing.F) {
	f.Add([]byte("at_s,rate_rps\n0,2\n60,3\n"), false)
	f.Add([]byte(`[{"at_s": 0, "rate_rps": 2}, {"at_s": 1e300, "rate_rps": 1e300}]`), false)
	head, _ := os.ReadFile(azureHead)
	f.Add(head[:min(len(head), 4000)], true)
	f.Add([]byte("TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46,1,1\n"), true)
	h := newTestServer(f, nil).Handler()
	f.Fuzz(func(t *testing.T, data []byte, trace bool) {
		fields := map[string]string{}
		if trace {
			fields["kind"] = "trace"
		}
		r := postRun(t, h, "/v1/rate-profile", fields, []UploadedFile{{Name: "f.csv", Data: data}})
		if !allowed[r.status] || !json.Valid(r.body) {
			t.Fatalf("HTTP %d for %q: %s", r.status, data, r.body)
		}
		if r.status >= 400 {
			r.problem(t)
		}
	})
}
