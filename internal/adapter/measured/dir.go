package measured

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strings"
)

// ErrNotRunDir is returned by LoadDir for a folder it does not recognise.
var ErrNotRunDir = errors.New("not a run folder")

// runDirKind is one kind of run folder LoadDir reads.
type runDirKind struct {
	name string
	// what the folder holds, for errors.
	what string
	is   func(fsys fs.FS, dir string) bool
	load func(fsys fs.FS, dir string) (*Run, error)
}

var runDirKinds = []runDirKind{
	{"llmservingsim", "meta.json and requests.jsonl (LLMServingSim; or <GPU>/<model>/ with them in vllm/)", IsLLMServingSimDir, LoadLLMServingSim},
	{"inference-sim", "exp-config.yaml and otel_requests.csv (inference-sim ground truth)", isInferenceSimDir, LoadInferenceSim},
	{FormatBlisTrace, "trace.yaml and trace.csv (inference-sim blis observe trace v3)", isBlisTraceDir, LoadBlisTrace},
	{"inference-perf-report", "stage_N_lifecycle_metrics.json (inference-perf reports)", IsInferencePerfReports, LoadInferencePerfReports},
	{"inference-perf-run", "results/ with stage_N_lifecycle_metrics.json (an inference-perf run, manifests.yaml beside results/)", isInferencePerfRun, loadInferencePerfRun},
	{"llmperf", "one *_individual_responses.json with its *_summary.json (llmperf)", isLLMPerfDir, loadLLMPerfDir},
	{"vllm-bench", "summary.json beside run=N.json (vllm bench sweep serve)", isVLLMSweepDir, loadVLLMSweepDir},
}

func isInferenceSimDir(fsys fs.FS, dir string) bool {
	return fileExists(fsys, path.Join(dir, "exp-config.yaml")) && fileExists(fsys, path.Join(dir, "otel_requests.csv"))
}

// isInferencePerfRun is a folder as the inference-perf demos publish a run:
// the reports in results/, the server's manifests.yaml beside it.
func isInferencePerfRun(fsys fs.FS, dir string) bool {
	return IsInferencePerfReports(fsys, path.Join(dir, "results"))
}

func loadInferencePerfRun(fsys fs.FS, dir string) (*Run, error) {
	return LoadInferencePerfReports(fsys, path.Join(dir, "results"))
}

func isLLMPerfDir(fsys fs.FS, dir string) bool { return len(llmperfRuns(fsys, dir)) == 1 }

func loadLLMPerfDir(fsys fs.FS, dir string) (*Run, error) {
	return loadLLMPerf(fsys, llmperfRuns(fsys, dir)[0])
}

func isVLLMSweepDir(fsys fs.FS, dir string) bool {
	if !fileExists(fsys, path.Join(dir, "summary.json")) {
		return false
	}
	ents, _ := fs.ReadDir(fsys, dir)
	return slices.ContainsFunc(ents, func(e fs.DirEntry) bool {
		return strings.HasPrefix(e.Name(), "run=") && strings.HasSuffix(e.Name(), ".json")
	})
}

func loadVLLMSweepDir(fsys fs.FS, dir string) (*Run, error) {
	run, err := importFile(fsys, path.Join(dir, "summary.json"), "vllm-bench")
	if err != nil {
		return nil, err
	}
	if b := path.Base(dir); b != "." {
		run.Name = b
	}
	return run, nil
}

// IsRunDir reports whether LoadDir reads dir.
func IsRunDir(fsys fs.FS, dir string) bool {
	return slices.ContainsFunc(runDirKinds, func(k runDirKind) bool { return k.is(fsys, dir) })
}

// LoadDir reads a run folder of fsys, recognised by the files in it (the
// folder's files it does not read are listed in Run.Ignored): an
// LLMServingSim bench run, an inference-sim ground-truth run, an
// inference-perf results folder (its per-stage reports) or the run folder
// above it (with the server's manifests.yaml), an llmperf result
// folder (responses and summary of one run) or a `vllm bench sweep serve`
// combination folder (its summary.json). An unrecognised folder is an
// ErrNotRunDir error saying what each kind holds.
func LoadDir(fsys fs.FS, dir string) (*Run, error) {
	for _, k := range runDirKinds {
		if k.is(fsys, dir) {
			rec := &readFS{FS: fsys, opened: map[string]bool{}}
			run, err := k.load(rec, dir)
			if err != nil {
				return nil, err
			}
			ents, _ := fs.ReadDir(fsys, dir)
			for _, e := range ents {
				if e.Type().IsRegular() && !rec.opened[path.Join(dir, e.Name())] {
					run.ignore("file ", e.Name())
				}
			}
			run.tidyIgnored()
			return run, nil
		}
	}
	var want []string
	for _, k := range runDirKinds {
		want = append(want, k.what)
	}
	hint := ""
	if n := len(llmperfRuns(fsys, dir)); n > 1 {
		hint = fmt.Sprintf(" (%d llmperf runs here: give one *_individual_responses.json file)", n)
	}
	return nil, fmt.Errorf("%w%s: want %s", ErrNotRunDir, hint, strings.Join(want, ", or "))
}

// FindRunDirs lists the run folders at or below root in fsys, sorted;
// the folders inside a run folder are not searched.
func FindRunDirs(fsys fs.FS, root string) ([]string, error) {
	var out []string
	err := fs.WalkDir(fsys, root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			return nil
		}
		if IsRunDir(fsys, p) {
			out = append(out, p)
			return fs.SkipDir
		}
		return nil
	})
	slices.Sort(out)
	return out, err
}

// readFS records the files a loader opens, so that LoadDir can list the
// folder's files it did not read (Stat and ReadDir do not count).
type readFS struct {
	fs.FS
	opened map[string]bool
}

func (r *readFS) Open(name string) (fs.File, error) {
	r.opened[name] = true
	return r.FS.Open(name)
}

func (r *readFS) Stat(name string) (fs.FileInfo, error) { return fs.Stat(r.FS, name) }

func (r *readFS) ReadDir(name string) ([]fs.DirEntry, error) { return fs.ReadDir(r.FS, name) }
