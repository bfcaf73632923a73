package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"slices"
	"strings"
	"testing/fstest"

	"github.com/gin-gonic/gin"

	"github.com/headroom-sim/headroom/catalogs"
	"github.com/headroom-sim/headroom/internal/adapter/measured"
	"github.com/headroom-sim/headroom/internal/study/replay"
)

// Benchmark runs as uploaded to POST /v1/inspect, /v1/validate and
// /v1/calibrations (and traces to /v1/rate-profile): one result file, or
// the files of a run folder (an LLMServingSim run, an inference-perf
// results folder …), each multipart file part named by its path relative
// to the folder chosen (a browser's webkitRelativePath). They are read in
// memory, never written to disk, within the upload budget (uploads.go).

// UploadedFile is one file of an upload.
type UploadedFile struct {
	// Name is the file's path relative to the folder uploaded (or its
	// name), with / between folders.
	Name string `json:"name" binding:"required,max=1024" example:"results/stage_0_lifecycle_metrics.json"`
	// Data is the file's bytes (base64 in JSON).
	Data []byte `json:"data" binding:"required" swaggertype:"string" format:"base64"`
}

// maxUploadFiles bounds the files of a folder upload.
const maxUploadFiles = 1024

// runForm is a multipart upload read: its files and its other fields.
type runForm struct {
	files  []UploadedFile
	fields map[string]string
}

// readRunForm reads a multipart body part by part: every part named file
// is a file (repeatable: a folder), the others must be among known (each
// once, at most maxFormField bytes).
func readRunForm(c *gin.Context, known []string) (*runForm, error) {
	mr, err := c.Request.MultipartReader()
	if err != nil {
		return nil, fmt.Errorf("%w: want a multipart/form-data body with the benchmark result in a field named file (one part per file of a folder) (%v)", ErrUnsupportedMedia, err)
	}
	f := &runForm{fields: map[string]string{}}
	for {
		part, err := mr.NextPart()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, formError(err)
		}
		name := part.FormName()
		if name == "file" {
			if len(f.files) == maxUploadFiles {
				return nil, invalid("file", "more than %d files: upload the run's folder, not the folders above it", maxUploadFiles)
			}
			b, err := io.ReadAll(part)
			if err != nil {
				return nil, formError(err)
			}
			f.files = append(f.files, UploadedFile{Name: partFileName(part.Header.Get("Content-Disposition")), Data: b})
			continue
		}
		if !slices.Contains(known, name) {
			return nil, invalid(name, "unknown form field (known: file, %s)", strings.Join(known, ", "))
		}
		if _, seen := f.fields[name]; seen {
			return nil, invalid(name, "is given twice")
		}
		b, err := io.ReadAll(io.LimitReader(part, maxFormField+1))
		if err != nil {
			return nil, formError(err)
		}
		if len(b) > maxFormField {
			return nil, invalid(name, "must be at most %d bytes", maxFormField)
		}
		f.fields[name] = strings.TrimSpace(string(b))
	}
	if len(f.files) == 0 {
		return nil, invalid("file", "is required: the benchmark result file (or the files of a run folder), as multipart file fields")
	}
	return f, nil
}

// partFileName is a file part's name as sent, folders included
// (mime/multipart's FileName keeps only the last element).
func partFileName(disposition string) string {
	_, params, err := mime.ParseMediaType(disposition)
	if err != nil {
		return ""
	}
	return strings.ReplaceAll(params["filename"], `\`, "/")
}

// uploadedRun is an upload read as one run, or as a table of closed-loop
// runs (one per row).
type uploadedRun struct {
	// name is what the inspection calls it: the file or the folder.
	name  string
	run   *measured.Run
	table []*measured.Run
	// skipped says which rows of a table could not be read or served.
	skipped []string
}

// readUpload reads the files: one through the importer (format "" =
// detected; a table of closed-loop runs as its rows), several as a run
// folder.
func readUpload(files []UploadedFile, format string) (*uploadedRun, error) {
	if format != "" && !slices.Contains(measured.Formats(), format) {
		return nil, invalid("format", "%q is not a result format (known: %s)", format, strings.Join(measured.Formats(), ", "))
	}
	if len(files) == 1 {
		name := path.Base(files[0].Name)
		if name == "." || name == "/" || name == "" {
			name = "upload"
		}
		data := files[0].Data
		if measured.IsSiliconFile(fstest.MapFS{name: {Data: data}}, name) {
			t, err := measured.ReadSilicon(bytes.NewReader(data), name)
			if err != nil {
				return nil, fileError(err)
			}
			return &uploadedRun{name: name, table: t.Runs, skipped: t.Skipped}, nil
		}
		run, err := measured.Import(bytes.NewReader(data), name, format)
		if err != nil {
			return nil, fileError(err)
		}
		return &uploadedRun{name: name, run: run}, nil
	}
	fsys, err := folderFS(files)
	if err != nil {
		return nil, err
	}
	dir, err := runDir(fsys)
	if err != nil {
		return nil, err
	}
	name := dir
	if dir == "." {
		name = topFolder(files)
	}
	run, err := measured.LoadDir(fsys, dir)
	if err != nil {
		return nil, fileError(fmt.Errorf("%s: %w", name, err))
	}
	return &uploadedRun{name: name, run: run}, nil
}

// topFolder names an upload whose files are the run folder itself: the
// folder they all sit in ("results" of results/stage_0_….json), else
// "upload".
func topFolder(files []UploadedFile) string {
	top, _, ok := strings.Cut(path.Clean(files[0].Name), "/")
	for _, f := range files[1:] {
		t, _, in := strings.Cut(path.Clean(f.Name), "/")
		ok = ok && in && t == top
	}
	if !ok {
		return "upload"
	}
	return top
}

// folderFS holds a folder's files in memory, their names checked.
func folderFS(files []UploadedFile) (fstest.MapFS, error) {
	fsys := fstest.MapFS{}
	for i, f := range files {
		name := path.Clean(strings.TrimPrefix(f.Name, "./"))
		if f.Name == "" || !fs.ValidPath(name) || name == "." {
			return nil, invalid("file", "file %d of the folder is named %q: each part's file name must be its path in the folder (a/b.json, no .. nor leading /)", i+1, f.Name)
		}
		if _, dup := fsys[name]; dup {
			return nil, invalid("file", "%s is uploaded twice", name)
		}
		fsys[name] = &fstest.MapFile{Data: f.Data}
	}
	return fsys, nil
}

// runDir finds the one run folder among the uploaded files.
func runDir(fsys fstest.MapFS) (string, error) {
	dirs, err := measured.FindRunDirs(fsys, ".")
	if err != nil {
		return "", err
	}
	switch len(dirs) {
	case 1:
		return dirs[0], nil
	case 0:
		_, err := measured.LoadDir(fsys, ".")
		return "", invalid("file", "the %d files hold no run folder: %v", len(fsys), err)
	}
	shown := dirs[:min(len(dirs), 4)]
	return "", invalid("file", "the files hold %d run folders (%s): upload one of them", len(dirs), strings.Join(shown, ", "))
}

// fileError names the file field of an import failure that the importer
// did not word as one (a folder that is no run folder, say).
func fileError(err error) error {
	var ie *measured.ImportError
	if errors.As(err, &ie) || errors.Is(err, measured.ErrTooLarge) {
		return err
	}
	return invalid("file", "%v", err)
}

// resolveUploadNames looks the run's model and GPU up in the catalog and
// writes their catalog ids; the error names the form field that supplies
// a missing or unknown one.
func resolveUploadNames(run *measured.Run, cat *catalogs.Catalog) error {
	switch {
	case run.Model == "":
		return invalid("model", "the run does not name its model: give a catalog id (GET /v1/models)")
	case run.GPU == "":
		return invalid("gpu", "the run does not name its GPU: give a catalog id (GET /v1/gpus)")
	}
	id, err := replay.ResolveModel(cat, run.Model)
	if err != nil {
		return invalid("model", "%q, as the run records it, names no catalog model (%v): give a catalog id", run.Model, err)
	}
	g, err := cat.GPU(run.GPU)
	if err != nil {
		return invalid("gpu", "%q, as the run records it, is not in the catalog (%v): give a catalog id", run.GPU, err)
	}
	run.Model, run.GPU = id, g.ID
	return nil
}

// readUploadForm reserves an upload's size in the upload budget
// (calibrations.upload_budget_bytes) before its body is read, reads the
// multipart form within body_read_timeout, and lowers the hold to what the
// form holds. The caller releases the hold once done with the files, or
// hands it to the job that keeps what they became.
func (s *Server) readUploadForm(c *gin.Context, known []string) (*runForm, *uploadHold, error) {
	need := s.cfg.Calibrations.UploadLimitBytes
	if n := c.Request.ContentLength; n > 0 {
		need = min(n, need)
	}
	up, err := s.uploads.reserve(need)
	if err != nil {
		return nil, nil, err
	}
	clear := s.readDeadline(c)
	f, err := readRunForm(c, known)
	if err != nil {
		up.release()
		return nil, nil, s.bodyError(err)
	}
	clear()
	n := maxFormField * int64(len(known))
	for _, file := range f.files {
		n += int64(len(file.Name) + len(file.Data))
	}
	up.shrink(n)
	return f, up, nil
}

// submitHeld hands an upload's prepared input (held) and its hold in the
// upload budget to a job of kind, params recording the form's fields, and
// answers 202 with the job. It reports whether the job took them (else the
// caller still owns the hold and the problem is answered).
func (s *Server) submitHeld(c *gin.Context, kind string, params any, held any, hold *uploadHold) bool {
	raw, err := json.Marshal(params)
	if err != nil {
		s.fail(c, err)
		return false
	}
	v, err := s.jobs.SubmitHeld(kind, raw, held, hold.release)
	if err != nil {
		s.fail(c, err)
		return false
	}
	c.Header("Location", "/v1/jobs/"+v.ID)
	s.respond(c, http.StatusAccepted, v)
	return true
}
