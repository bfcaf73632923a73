package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/headroom-sim/headroom/catalogs"
	"github.com/headroom-sim/headroom/internal/adapter/measured"
	"github.com/headroom-sim/headroom/internal/study/calibrate"
	"github.com/headroom-sim/headroom/internal/study/replay"
)

// runOverrides are the flags that fill what an imported run does not
// record, shared by validate, calibrate and inspect.
type runOverrides struct {
	measured.Overrides
	format                 string
	chunkedPrefill, prefix optBool
}

// register adds the run flags; inspect takes only --format.
func (o *runOverrides) register(fs *flag.FlagSet, all bool) {
	fs.StringVar(&o.format, "format", "", "result format of the files (default: detect; one of "+strings.Join(measured.Formats(), ", ")+")")
	if !all {
		return
	}
	fs.StringVar(&o.Model, "model", "", "model, when the run does not name it (or names it as no catalog entry does)")
	fs.StringVar(&o.GPU, "gpu", "", "GPU, when the run does not name it")
	fs.IntVar(&o.TP, "tp", 0, "tensor-parallel degree of the measured server")
	fs.IntVar(&o.MaxNumSeqs, "max-num-seqs", 0, "engine setting of the measured server")
	fs.IntVar(&o.MaxNumBatchedTokens, "max-num-batched-tokens", 0, "engine setting of the measured server")
	fs.IntVar(&o.MaxModelLen, "max-model-len", 0, "engine setting of the measured server")
	fs.IntVar(&o.PromptPool, "prompt-pool", 0, "the benchmark drew its prompts from a pool of this many (AIPerf's --num-dataset-entries): a run replayed from its summary reuses that many prompts, cached when they come again (0: every prompt fresh)")
	fs.StringVar(&o.KVCacheDType, "kv-cache-dtype", "", "engine setting of the measured server: auto|bf16|fp16|fp8|int8 (default: what the run records, else the checkpoint's)")
	fs.Var(&o.chunkedPrefill, "enable-chunked-prefill", "engine setting of the measured server (true|false; default: what the run records, else vLLM's)")
	fs.Var(&o.prefix, "enable-prefix-caching", "engine setting of the measured server (true|false; default: what the run records, else vLLM's)")
}

// overrides is the measured.Overrides the flags give.
func (o *runOverrides) overrides() measured.Overrides {
	m := o.Overrides
	m.EnableChunkedPrefill, m.EnablePrefixCaching = o.chunkedPrefill.ptr(), o.prefix.ptr()
	return m
}

// optBool is a boolean flag that knows whether it was given.
type optBool struct{ set, v bool }

func (b *optBool) String() string {
	if !b.set {
		return ""
	}
	return strconv.FormatBool(b.v)
}

func (b *optBool) Set(s string) error {
	v, err := strconv.ParseBool(s)
	if err != nil {
		return errors.New("want true or false")
	}
	b.set, b.v = true, v
	return nil
}

func (b *optBool) IsBoolFlag() bool { return true }

func (b *optBool) ptr() *bool {
	if !b.set {
		return nil
	}
	v := b.v
	return &v
}

// needsFlagError is a run that does not say what a replay needs (its
// model or GPU) or says it in a way the catalog does not know: the message
// names the flag to give. --runs-from skips such runs.
type needsFlagError struct{ msg string }

func (e *needsFlagError) Error() string { return e.msg }

func needsFlag(format string, a ...any) error { return &needsFlagError{fmt.Sprintf(format, a...)} }

// loadMeasured reads a run folder or a benchmark result file, applies the
// flags, and resolves its model and GPU in the catalog (when cat is not
// nil), so that an unknown name fails here with the flag that fixes it.
func loadMeasured(path string, o *runOverrides, cat *catalogs.Catalog) (*measured.Run, calibrate.Source, error) {
	src := calibrate.Source{File: filepath.Base(path)}
	st, err := os.Stat(path)
	if err != nil {
		return nil, src, err
	}
	var run *measured.Run
	if st.IsDir() {
		run, err = loadRunDir(path)
		if err != nil {
			return nil, src, err
		}
	} else {
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, src, err
		}
		sum := sha256.Sum256(b)
		src.SHA256 = hex.EncodeToString(sum[:])
		run, err = measured.Import(bytes.NewReader(b), filepath.Base(path), o.format)
		if err != nil {
			return nil, src, err
		}
	}
	src.Format = run.Format
	o.overrides().Apply(run)
	src.Run = run.Name
	src.Requests = len(run.Requests)
	if src.Requests == 0 {
		src.Requests = calibrate.Completed(run, -1)
	}
	if cat == nil {
		return run, src, nil
	}
	if err := resolveRunNames(run, cat); err != nil {
		return nil, src, err
	}
	return run, src, nil
}

// resolveRunNames looks the run's model and GPU up in the catalog and
// writes their catalog ids; the error names the flag that supplies them.
func resolveRunNames(run *measured.Run, cat *catalogs.Catalog) error {
	switch {
	case run.Model == "":
		return needsFlag("the run does not name its model: give --model (a catalog id, see headroom catalog list models)")
	case run.GPU == "":
		return needsFlag("the run does not name its GPU: give --gpu (a catalog id, see headroom catalog list gpus)")
	}
	id, err := replay.ResolveModel(cat, run.Model)
	if err != nil {
		return needsFlag("model %q (%s) names no catalog model (%v): give --model with a catalog id", run.Model, source(run.ModelNote, "as the run records it"), err)
	}
	g, err := cat.GPU(run.GPU)
	if err != nil {
		return needsFlag("GPU %q (%s) is not in the catalog (%v): give --gpu with a catalog id", run.GPU, source(run.GPUNote, "as the run records it"), err)
	}
	run.Model, run.GPU = id, g.ID
	return nil
}

// source is where a value came from: the note, else def.
func source(note, def string) string {
	if note != "" {
		return note
	}
	return def
}

// loadRunDir reads a run folder (see measured.LoadDir).
func loadRunDir(dir string) (*measured.Run, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	// Open the file system a few levels up: an LLMServingSim run finds its
	// workload and names itself <GPU>/<model> from the folders above it, an
	// inference-perf run its config.yaml.
	root, rel := abs, "."
	for range 3 {
		parent := filepath.Dir(root)
		if parent == root {
			break
		}
		rel = filepath.ToSlash(filepath.Join(filepath.Base(root), rel))
		root = parent
	}
	return measured.LoadDir(os.DirFS(root), strings.TrimSuffix(rel, "/."))
}

// findRunsAndTables lists the run folders and the tables of closed-loop
// runs below root, each sorted.
func findRunsAndTables(root string) (dirs, tables []string, err error) {
	fsys := os.DirFS(root)
	found, err := measured.FindRunDirs(fsys, ".")
	if err != nil {
		return nil, nil, err
	}
	tabs, err := measured.FindSiliconFiles(fsys, ".")
	if err != nil {
		return nil, nil, err
	}
	if len(found) == 0 && len(tabs) == 0 {
		return nil, nil, fmt.Errorf("no run folders or tables of closed-loop runs below %s", root)
	}
	for _, f := range found {
		dirs = append(dirs, filepath.Join(root, filepath.FromSlash(f)))
	}
	for _, f := range tabs {
		tables = append(tables, filepath.Join(root, filepath.FromSlash(f)))
	}
	return dirs, tables, nil
}
