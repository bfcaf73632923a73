package api

import (
	"bytes"
	"encoding/json"
	"fmt"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/headroom-sim/headroom/internal/study/calibrate"
	"github.com/headroom-sim/headroom/internal/study/replay"
)

// The benchmark runs shipped in ../testdata: a stepped inference-perf
// results folder (7 constant-rate stages known by their summaries) and an
// LLMServingSim run folder (300 requests with their timestamps).
const (
	inferencePerfDir = "../testdata/inference-perf/vllm+v0_engine"
	llmServingSimDir = "../testdata/llmservingsim/RTX4090/Llama-3.1-8B"
	siliconTable     = "../testdata/aiconfigurator-silicon/silicon_sample.csv"
)

// inferencePerfFields are what the inference-perf reports do not record
// (its manifests.yaml does), as the README's validate example gives them.
var inferencePerfFields = map[string]string{"model": "llama-3.1-8b", "gpu": "h100-sxm", "max_num_seqs": "128", "max_model_len": "512",
	"enable_chunked_prefill": "false", "enable_prefix_caching": "false"}

// folderFiles reads the files below root as an upload names them: their
// paths from the folder above root (root's own name first, as a browser's
// webkitRelativePath has it).
func folderFiles(t testing.TB, root string) []UploadedFile {
	t.Helper()
	var out []UploadedFile
	base := filepath.Dir(root)
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(base, p)
		out = append(out, UploadedFile{Name: filepath.ToSlash(rel), Data: b})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// runForm is a multipart body of fields and files, each file part's
// filename its path (kept whole, as browsers send webkitRelativePath).
func runFormBody(t testing.TB, fields map[string]string, files []UploadedFile) ([]byte, string) {
	t.Helper()
	var b bytes.Buffer
	w := multipart.NewWriter(&b)
	for k, v := range fields {
		if err := w.WriteField(k, v); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range files {
		h := textproto.MIMEHeader{}
		h.Set("Content-Disposition", fmt.Sprintf(`form-data; name="file"; filename=%q`, f.Name))
		h.Set("Content-Type", "application/octet-stream")
		pw, err := w.CreatePart(h)
		if err != nil {
			t.Fatal(err)
		}
		pw.Write(f.Data)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes(), w.FormDataContentType()
}

// under puts files in folder dir.
func under(dir string, files []UploadedFile) []UploadedFile {
	out := make([]UploadedFile, len(files))
	for i, f := range files {
		out[i] = UploadedFile{Name: dir + "/" + f.Name, Data: f.Data}
	}
	return out
}

func postRun(t testing.TB, h http.Handler, path string, fields map[string]string, files []UploadedFile) response {
	t.Helper()
	body, ct := runFormBody(t, fields, files)
	return upload(t, h, path, body, ct)
}

func oneFile(t testing.TB, path string) []UploadedFile {
	t.Helper()
	return []UploadedFile{{Name: filepath.Base(path), Data: []byte(readFile(t, path))}}
}

func TestInspect(t *testing.T) {
	h := newTestServer(t, nil).Handler()

	// The README's inspect example, uploaded as its results folder.
	r := postRun(t, h, "/v1/inspect", nil, folderFiles(t, inferencePerfDir+"/results"))
	if r.status != 200 {
		t.Fatalf("HTTP %d: %s", r.status, r.body)
	}
	var in Inspection
	r.json(t, &in)
	if in.File != "results" || in.Format != "inference-perf-report" || len(in.Stages) != 7 || in.Requests.Total != 49792 || in.CatalogGPU != "" {
		t.Errorf("inspection %s %s: %d stages, %d requests, gpu %q", in.File, in.Format, len(in.Stages), in.Requests.Total, in.CatalogGPU)
	}
	if strings.Join(in.Hints, "; ") != "the run does not name its model: give the model field to validate or calibrate; the run does not name its GPU: give the gpu field to validate or calibrate" {
		t.Errorf("hints %q", in.Hints)
	}

	// The run folder as the demos publish it, one level below the folder
	// chosen: found, with its manifests.yaml (the server's flags, the
	// model) and the load's config.yaml above it read too.
	r = postRun(t, h, "/v1/inspect", nil, folderFiles(t, filepath.Dir(inferencePerfDir)))
	r.json(t, &in)
	notes := strings.Join(in.Notes, " ")
	if r.status != 200 || in.File != "inference-perf/vllm+v0_engine" || !strings.Contains(notes, "config.yaml") || !strings.Contains(notes, "manifests.yaml") || in.CatalogModel != "llama-3.1-8b" {
		t.Errorf("HTTP %d, file %q, model %q, notes %q", r.status, in.File, in.CatalogModel, in.Notes)
	}

	// An LLMServingSim run folder names its model and GPU.
	r = postRun(t, h, "/v1/inspect", nil, folderFiles(t, llmServingSimDir))
	r.json(t, &in)
	if r.status != 200 || in.Format != "llmservingsim" || in.CatalogModel != "llama-3.1-8b" || in.CatalogGPU != "rtx-4090" || in.Requests.Total != 300 {
		t.Errorf("HTTP %d: %s %s %s %d", r.status, in.Format, in.CatalogModel, in.CatalogGPU, in.Requests.Total)
	}

	// Its requests file alone names neither.
	r = postRun(t, h, "/v1/inspect", nil, oneFile(t, llmServingSimDir+"/vllm/requests.jsonl"))
	r.json(t, &in)
	if r.status != 200 || in.File != "requests.jsonl" || len(in.Hints) != 2 {
		t.Errorf("HTTP %d: file %q hints %q", r.status, in.File, in.Hints)
	}
}

func TestInspectRefuses(t *testing.T) {
	h := newTestServer(t, nil).Handler()
	ipFiles := folderFiles(t, inferencePerfDir+"/results")
	for _, c := range []struct {
		name   string
		fields map[string]string
		files  []UploadedFile
		status int
		typ    string
		field  string
		detail string
	}{
		{"no file", map[string]string{"format": "llmservingsim"}, nil, 400, "invalid-request", "file", "is required"},
		{"garbage", nil, []UploadedFile{{Name: "results.json", Data: []byte("not a benchmark")}}, 400, "invalid-file", "file", "results.json"},
		{"unknown format", map[string]string{"format": "nope"}, oneFile(t, llmServingSimDir+"/vllm/requests.jsonl"), 400, "invalid-request", "format", `"nope" is not a result format`},
		{"unknown field", map[string]string{"gpu": "h100-sxm"}, oneFile(t, llmServingSimDir+"/vllm/requests.jsonl"), 400, "invalid-request", "gpu", "unknown form field"},
		{"a table of runs", nil, oneFile(t, siliconTable), 400, "invalid-request", "file", "POST /v1/validate replays it"},
		{"a path out of the folder", nil, append([]UploadedFile{{Name: "../etc/passwd", Data: []byte("x")}}, ipFiles...), 400, "invalid-request", "file", "no .. nor leading /"},
		{"an absolute path", nil, append([]UploadedFile{{Name: "/etc/passwd", Data: []byte("x")}}, ipFiles...), 400, "invalid-request", "file", "no .. nor leading /"},
		{"a file twice", nil, append(ipFiles, ipFiles[0]), 400, "invalid-request", "file", "uploaded twice"},
		{"no run folder", nil, []UploadedFile{{Name: "a/x.txt", Data: []byte("x")}, {Name: "a/y.txt", Data: []byte("y")}}, 400, "invalid-request", "file", "hold no run folder"},
		{"two run folders", nil, append(under("a", folderFiles(t, llmServingSimDir)), under("b", folderFiles(t, llmServingSimDir))...), 400, "invalid-request", "file", "upload one of them"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := postRun(t, h, "/v1/inspect", c.fields, c.files)
			if r.status != c.status {
				t.Fatalf("HTTP %d, want %d: %s", r.status, c.status, r.body)
			}
			p := r.wantProblem(t, c.typ, c.field)
			if !strings.Contains(p.Detail, c.detail) {
				t.Errorf("detail %q lacks %q", p.Detail, c.detail)
			}
		})
	}
	if r := do(t, h, "POST", "/v1/inspect", "{}"); r.status != http.StatusUnsupportedMediaType {
		t.Errorf("JSON body: HTTP %d, want 415", r.status)
	}
}

func TestValidate(t *testing.T) {
	h := newTestServer(t, nil).Handler()
	r := postRun(t, h, "/v1/validate", inferencePerfFields, folderFiles(t, inferencePerfDir+"/results"))
	if r.status != 200 {
		t.Fatalf("HTTP %d: %s", r.status, r.body)
	}
	var rep ValidationReport
	r.json(t, &rep)
	if rep.Run != "results" || rep.Format != "inference-perf-report" || len(rep.Comparisons) != 7 {
		t.Fatalf("run %q format %q, %d comparisons", rep.Run, rep.Format, len(rep.Comparisons))
	}
	for i, c := range rep.Comparisons {
		if c.Stage == nil || *c.Stage != i || c.Model != "llama-3.1-8b" || c.GPU != "h100-sxm" || c.Basis != replay.BasisAggregate {
			t.Errorf("comparison %d: stage %v, %s on %s, basis %s", i, c.Stage, c.Model, c.GPU, c.Basis)
		}
		if m, ok := c.Get("ttft_ms.p50"); !ok || m.Measured <= 0 || m.Predicted <= 0 {
			t.Errorf("stage %d: ttft_ms.p50 %+v", i, m)
		}
	}
	golden(t, "validate-inference-perf.json", r.body)

	// A run with its requests: the whole run is one part.
	r = postRun(t, h, "/v1/validate", nil, folderFiles(t, llmServingSimDir))
	r.json(t, &rep)
	if r.status != 200 || len(rep.Comparisons) != 1 || rep.Comparisons[0].Basis != replay.BasisRequests || rep.Comparisons[0].Requests != 300 {
		t.Fatalf("HTTP %d: %s", r.status, r.body)
	}
}

// The form's fields become the params with their types.
func TestValidateParams(t *testing.T) {
	yes, no := true, false
	p, err := validateParams(&runForm{fields: map[string]string{"format": "llmservingsim", "model": "m", "gpu": "g", "tp": "2", "max_num_seqs": "128",
		"max_num_batched_tokens": "2048", "max_model_len": "512", "enable_chunked_prefill": "false", "enable_prefix_caching": "1",
		"logged_blocks": "true", "calibration": "c"}})
	want := &ValidateParams{Format: "llmservingsim", Model: "m", GPU: "g", TP: 2, MaxNumSeqs: 128, MaxNumBatchedTokens: 2048, MaxModelLen: 512,
		EnableChunkedPrefill: &no, EnablePrefixCaching: &yes, LoggedBlocks: true, Calibration: "c"}
	if err != nil || !reflect.DeepEqual(p, want) {
		t.Errorf("params %+v, %v; want %+v", p, err, want)
	}
	p, err = validateParams(&runForm{fields: map[string]string{}})
	if err != nil || !reflect.DeepEqual(p, &ValidateParams{}) {
		t.Errorf("empty form: %+v, %v", p, err)
	}
}

func TestValidateTable(t *testing.T) {
	if testing.Short() {
		t.Skip("replays seven closed-loop runs (about 3 s)")
	}
	h := newTestServer(t, nil).Handler()
	r := postRun(t, h, "/v1/validate", nil, oneFile(t, siliconTable))
	if r.status != 200 {
		t.Fatalf("HTTP %d: %s", r.status, r.body)
	}
	var rep ValidationReport
	r.json(t, &rep)
	if rep.Format != "aiconfigurator-silicon" || len(rep.Comparisons) != 7 {
		t.Fatalf("format %q, %d comparisons: %s", rep.Format, len(rep.Comparisons), r.body)
	}
	for _, c := range rep.Comparisons {
		if c.ClosedLoop == nil || c.Layout == nil {
			t.Errorf("%s: no closed loop or layout", c.Run)
		}
		if _, ok := c.Get("ttft_ms.mean"); !ok && c.Error == "" {
			t.Errorf("%s: no mean TTFT and no error", c.Run)
		}
	}
}

func TestValidateRefuses(t *testing.T) {
	h := newTestServer(t, func(c *Config) { c.Simulate.SyncMaxRequests = 5000 }).Handler()
	ip := folderFiles(t, inferencePerfDir+"/results")
	for _, c := range []struct {
		name   string
		fields map[string]string
		files  []UploadedFile
		status int
		field  string
		detail string
	}{
		{"no model", with(inferencePerfFields, "model", ""), ip, 400, "model", "does not name its model"},
		{"no GPU", with(inferencePerfFields, "gpu", ""), ip, 400, "gpu", "does not name its GPU"},
		{"unknown GPU", with(inferencePerfFields, "gpu", "h1000"), ip, 400, "gpu", `"h1000"`},
		{"bad integer", with(inferencePerfFields, "tp", "two"), ip, 400, "tp", `must be an integer, not "two"`},
		{"bad boolean", with(inferencePerfFields, "enable_prefix_caching", "maybe"), ip, 400, "enable_prefix_caching", "must be true or false"},
		{"out of range", with(inferencePerfFields, "max_num_seqs", "-1"), ip, 400, "max_num_seqs", ""},
		{"unknown calibration", with(inferencePerfFields, "calibration", "nope"), ip, 404, "", "calibration"},
		{"a stage over the synchronous limit", inferencePerfFields, ip, 422, "file", "add ?async=true"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := postRun(t, h, "/v1/validate", c.fields, c.files)
			if r.status != c.status {
				t.Fatalf("HTTP %d, want %d: %s", r.status, c.status, r.body)
			}
			p := r.problem(t)
			if c.field != "" && (len(p.Errors) == 0 || p.Errors[0].Field != c.field) {
				t.Errorf("errors %+v, want field %q", p.Errors, c.field)
			}
			if !strings.Contains(p.Detail, c.detail) {
				t.Errorf("detail %q lacks %q", p.Detail, c.detail)
			}
		})
	}
}

// A run over the synchronous limits replays as a job, to the same report.
func TestValidateAsync(t *testing.T) {
	s := newTestServer(t, func(c *Config) { c.Simulate.SyncMaxRequests = 5000 })
	s.jobs.Start()
	t.Cleanup(func() { s.jobs.Shutdown(t.Context()) })
	h := s.Handler()
	r := postRun(t, h, "/v1/validate?async=true", inferencePerfFields, folderFiles(t, inferencePerfDir+"/results"))
	if r.status != http.StatusAccepted {
		t.Fatalf("HTTP %d: %s", r.status, r.body)
	}
	var v JobView
	r.json(t, &v)
	if v.Kind != "validate" || r.header.Get("Location") != "/v1/jobs/"+v.ID {
		t.Fatalf("job %+v, Location %q", v, r.header.Get("Location"))
	}
	deadline := time.Now().Add(60 * time.Second)
	for v.State != JobSucceeded {
		if v.State == JobFailed || v.State == JobCancelled || time.Now().After(deadline) {
			t.Fatalf("job %s: %+v", v.State, v.Error)
		}
		time.Sleep(50 * time.Millisecond)
		do(t, h, "GET", "/v1/jobs/"+v.ID, "").json(t, &v)
	}
	var rep ValidationReport
	if err := json.Unmarshal(v.Result, &rep); err != nil || len(rep.Comparisons) != 7 || v.Progress != 1 {
		t.Fatalf("result %v: %d comparisons, progress %g", err, len(rep.Comparisons), v.Progress)
	}
	// The job's params are checked at submission, as the form is, the problem naming the form's field.
	r = postRun(t, h, "/v1/validate?async=true", with(inferencePerfFields, "gpu", ""), folderFiles(t, inferencePerfDir+"/results"))
	r.wantProblem(t, "invalid-request", "gpu")
}

// A run folder calibrates as its one file would, its meta.json's settings
// read.
func TestCalibrateFolder(t *testing.T) {
	if testing.Short() {
		t.Skip("fits a calibration")
	}
	h := newTestServer(t, nil).Handler()
	r := postRun(t, h, "/v1/calibrations", map[string]string{"max_evaluations": "20"}, folderFiles(t, llmServingSimDir))
	if r.status != http.StatusCreated {
		t.Fatalf("HTTP %d: %s", r.status, r.body)
	}
	var f calibrate.File
	r.json(t, &f)
	if f.Model != "llama-3.1-8b" || f.GPU != "rtx-4090" || f.Source.Format != "llmservingsim" || len(f.Source.SHA256) != 64 {
		t.Errorf("calibration of %s on %s from %+v", f.Model, f.GPU, f.Source)
	}
	// A table of runs is not one run to fit.
	postRun(t, h, "/v1/calibrations", nil, oneFile(t, siliconTable)).wantProblem(t, "invalid-request", "file")
}

// FuzzRunUpload fuzzes the names and bytes of a folder upload: whatever
// arrives, POST /v1/inspect answers a problem or an inspection, never a
// 500 or a panic.
func FuzzRunUpload(f *testing.F) {
	meta := readFile(f, llmServingSimDir+"/vllm/meta.json")
	f.Add("Llama-3.1-8B/vllm/meta.json", []byte(meta), "Llama-3.1-8B/vllm/requests.jsonl", []byte(`{"request_id": "a"}`))
	f.Add("../x", []byte("x"), "x", []byte("y"))
	f.Add("a/stage_0_lifecycle_metrics.json", []byte("{}"), "a/summary_lifecycle_metrics.json", []byte("{}"))
	f.Add("", []byte(""), "/", []byte(""))
	h := newTestServer(f, nil).Handler()
	f.Fuzz(func(t *testing.T, n1 string, d1 []byte, n2 string, d2 []byte) {
		files := []UploadedFile{{Name: n1, Data: d1}}
		if n2 != "" {
			files = append(files, UploadedFile{Name: n2, Data: d2})
		}
		r := postRun(t, h, "/v1/inspect", nil, files)
		if !allowed[r.status] || !json.Valid(r.body) {
			t.Fatalf("HTTP %d for %q, %q: %s", r.status, n1, n2, r.body)
		}
		if r.status >= 400 {
			r.problem(t)
		}
	})
}

// Every run upload reserves its size in the upload budget before its body
// is read, as calibrations do: with the budget full, 429 with Retry-After;
// once it frees, the upload runs and gives its reservation back.
func TestRunUploadsTakeTheBudget(t *testing.T) {
	s := newTestServer(t, nil)
	h := s.Handler()
	full, err := s.uploads.reserve(s.cfg.Calibrations.UploadBudgetBytes)
	if err != nil {
		t.Fatal(err)
	}
	csv := []UploadedFile{{Name: "p.csv", Data: []byte("at_s,rate_rps\n0,1\n60,2\n")}}
	for _, path := range []string{"/v1/inspect", "/v1/validate", "/v1/rate-profile", "/v1/calibrations"} {
		r := postRun(t, h, path, nil, csv)
		r.wantProblem(t, "busy", "")
		if r.status != http.StatusTooManyRequests || r.header.Get("Retry-After") == "" {
			t.Errorf("%s: HTTP %d, Retry-After %q", path, r.status, r.header.Get("Retry-After"))
		}
	}
	full.release()
	if r := postRun(t, h, "/v1/rate-profile", nil, csv); r.status != 200 {
		t.Fatalf("HTTP %d: %s", r.status, r.body)
	}
	if n := s.uploads.held(); n != 0 {
		t.Errorf("%d bytes still held after the answers", n)
	}
}
