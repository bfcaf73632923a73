package api

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"path/filepath"
	"strings"

	"github.com/headroom-sim/headroom/catalogs"
	"github.com/headroom-sim/headroom/hardware"
	"github.com/headroom-sim/headroom/internal/adapter/kerneldb"
	"github.com/headroom-sim/headroom/internal/study/scenario"
	"github.com/headroom-sim/headroom/internal/study/stepreport"
	"github.com/headroom-sim/headroom/internal/study/uncertainty"
	"github.com/headroom-sim/headroom/models"
	"github.com/headroom-sim/headroom/sim"
	"github.com/headroom-sim/headroom/sim/memory"
	"github.com/headroom-sim/headroom/sim/steptime"
)

// Engine is what the handlers need from the domain. Domain implements it
// over catalogs, scenario and sim; tests may use fakes.
type Engine interface {
	GPUs() []*hardware.GPU
	GPU(id string) (*hardware.GPU, error)
	Models() []*models.Model
	Model(id string) (*models.Model, error)
	// ImportModel adds a model from a Hugging Face config.json, unless
	// maxAdded models are added already (ErrLimit; 0 refuses them all).
	ImportModel(q ImportModelQuery, configJSON io.Reader, maxAdded int) (ImportedModel, error)
	// DeleteModel removes a model ImportModel added (ErrConflict for the
	// others) and answers its id.
	DeleteModel(name string) (string, error)
	// Capacity answers `headroom capacity`.
	Capacity(ctx context.Context, spec scenario.CapacitySpec) (memory.Report, error)
	// Env is the environment runs resolve in: the current catalog, no file
	// access, and run's request bound and calibration lookup.
	Env(run RunEnv) scenario.Env
	// Prepare resolves a scenario in Env(run); errors are the scenario's
	// (scenario.ErrTooLarge past run.MaxRequests).
	Prepare(sc scenario.Scenario, run RunEnv) (*scenario.Resolved, error)
	// Simulate runs a prepared scenario; it stops with ctx's error when ctx
	// ends.
	Simulate(ctx context.Context, res *scenario.Resolved, progress func(float64)) (*sim.Report, error)
	// StepTime explains one engine step of a scenario in Env(run).
	StepTime(req stepreport.Request, run RunEnv) (*stepreport.Report, error)
}

// RunEnv is what the server adds to the catalog for a run.
type RunEnv struct {
	// MaxRequests bounds the requests of one simulation (0 = no bound).
	MaxRequests int
	// Calibration looks a scenario's calibration id up (nil refuses
	// calibration references).
	Calibration func(id string) (*steptime.Profile, error)
	// KernelDBDir is the directory under which a scenario's
	// steptime.kernel_db names a kernel database ("" refuses them; the
	// built-in measurements need none).
	KernelDBDir string
}

// Domain is the real Engine.
type Domain struct {
	store *catalogStore
	// kernels holds the kernel databases every run shares: the built-in
	// measurements and the directories of kernel_db_dir, each read once.
	kernels *kerneldb.Provider
}

// NewDomain serves base, extended with the models of storeDir (when not
// ""), where POST /v1/models also writes; log receives what loading the
// store skipped (nil: discarded).
func NewDomain(base *catalogs.Catalog, storeDir string, log *slog.Logger) (*Domain, error) {
	st, err := newCatalogStore(base, storeDir, log)
	if err != nil {
		return nil, err
	}
	d := &Domain{store: st}
	d.kernels = kerneldb.ForCatalog(func(id string) (*hardware.GPU, error) { return d.store.catalog().GPU(id) })
	return d, nil
}

// PreloadKernels reads the built-in kernel databases of every measured
// GPU, so that the first request naming one does not wait for them.
func (d *Domain) PreloadKernels() error {
	for id := range steptime.MeasuredSystems {
		g, err := d.GPU(id)
		if err != nil {
			continue
		}
		if _, err := d.kernels.Load(g, ""); err != nil {
			return err
		}
	}
	return nil
}

func (d *Domain) GPUs() []*hardware.GPU                  { return d.store.catalog().GPUs() }
func (d *Domain) GPU(id string) (*hardware.GPU, error)   { return d.store.catalog().GPU(id) }
func (d *Domain) Models() []*models.Model                { return d.store.catalog().Models() }
func (d *Domain) Model(id string) (*models.Model, error) { return d.store.catalog().Model(id) }

// ImportModel imports, checks the id is free, and adds (and persists) it.
func (d *Domain) ImportModel(q ImportModelQuery, r io.Reader, maxAdded int) (ImportedModel, error) {
	importer := catalogs.ImportHF
	if q.IgnoreUnknown {
		importer = catalogs.ImportHFLenient
	}
	m, ignored, err := importer("config.json", r, q.ID)
	if err != nil {
		return ImportedModel{}, err
	}
	m.Source = "POST /v1/models"
	if q.HFID != "" {
		m.HFID = q.HFID
	}
	persisted, err := d.store.addModel(m, ignored, maxAdded)
	if err != nil {
		return ImportedModel{}, err
	}
	if ignored == nil {
		ignored = []string{}
	}
	return ImportedModel{Model: m, Params: m.Params(), IgnoredKeys: ignored, Persisted: persisted}, nil
}

// DeleteModel removes an added model, and its file from the store.
func (d *Domain) DeleteModel(name string) (string, error) { return d.store.deleteModel(name) }

// Capacity runs scenario.Capacity; an answer that does not fit is an
// error wrapping memory.ErrDoesNotFit, carrying the report.
func (d *Domain) Capacity(ctx context.Context, spec scenario.CapacitySpec) (memory.Report, error) {
	if err := ctx.Err(); err != nil {
		return memory.Report{}, err
	}
	rep, err := scenario.Capacity(d.store.catalog(), spec)
	if err == nil && !rep.Fits {
		return rep, &InfeasibleError{Report: rep}
	}
	return rep, err
}

// InfeasibleError is a capacity question whose answer is "does not fit"
// (422, with the report).
type InfeasibleError struct{ Report memory.Report }

func (e *InfeasibleError) Error() string {
	r := &e.Report
	hint := "no tensor-parallel degree up to the GPU's node size fits"
	if r.MinTPThatFits > 0 {
		hint = fmt.Sprintf("smallest tp that fits: %d", r.MinTPThatFits)
	}
	return fmt.Sprintf("%s on %d× %s: %s (%s)", r.Model, r.TP, r.GPU, r.Reason, hint)
}

func (e *InfeasibleError) Unwrap() error { return memory.ErrDoesNotFit }

// Env is the current catalog with run's bound, calibration lookup and
// kernel databases; file references are refused (the API reads no server
// files but the kernel databases under run.KernelDBDir).
func (d *Domain) Env(run RunEnv) scenario.Env {
	return scenario.Env{Catalog: d.store.catalog(), Calibration: run.Calibration, MaxRequests: run.MaxRequests,
		KernelDB: func(g *hardware.GPU, name string) (*steptime.KernelDB, error) {
			if name == "" {
				return d.kernels.Load(g, "")
			}
			dir, err := kernelDBPath(run.KernelDBDir, name)
			if err != nil {
				return nil, err
			}
			db, err := d.kernels.Load(g, dir)
			if err != nil {
				return nil, kernelDBError(name, dir, run.KernelDBDir, g, err)
			}
			return db, nil
		}}
}

// kernelDBError words a kernel database that could not be read by the
// name the request gave: the server's paths and what else its
// kernel_db_dir holds are not the client's to see.
func kernelDBError(name, dir, root string, g *hardware.GPU, err error) error {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("%q: no such kernel database under the server's kernel_db_dir", name)
	case errors.Is(err, kerneldb.ErrNoSystem):
		return fmt.Errorf("%q: %w for %s", name, kerneldb.ErrNoSystem, g.ID)
	}
	msg := strings.ReplaceAll(err.Error(), dir, name)
	return errors.New(strings.ReplaceAll(msg, root, "kernel_db_dir"))
}

// ErrKernelDBNotAllowed refuses a kernel_db over the API when the server
// names no kernel_db_dir.
var ErrKernelDBNotAllowed = errors.New("kernel databases are not read over the API unless the server sets kernel_db_dir; leave kernel_db out for the built-in measurements")

// kernelDBPath is the directory a kernel_db name stands for under root.
func kernelDBPath(root, name string) (string, error) {
	if root == "" {
		return "", ErrKernelDBNotAllowed
	}
	if !fs.ValidPath(name) || name == "." || strings.Contains(name, `\`) {
		return "", fmt.Errorf("%q is not a directory name under the server's kernel_db_dir (relative, slash-separated, no . or .. elements)", name)
	}
	return filepath.Join(root, filepath.FromSlash(name)), nil
}

// StepTime explains one step (stepreport.Explain) in Env(run).
func (d *Domain) StepTime(req stepreport.Request, run RunEnv) (*stepreport.Report, error) {
	return stepreport.Explain(req, d.Env(run))
}

// Prepare resolves sc in Env(run).
func (d *Domain) Prepare(sc scenario.Scenario, run RunEnv) (*scenario.Resolved, error) {
	return sc.Resolve(d.Env(run))
}

// Simulate runs sim.Run and sets the report's error bands from the
// built-in error model (uncertainty.Model.Judge). Its errors keep their
// kind (problemFor): a field or a limit is the input's, a
// sim.ErrInternal or an error no rule knows the server's (500, logged).
func (d *Domain) Simulate(ctx context.Context, res *scenario.Resolved, progress func(float64)) (*sim.Report, error) {
	var opts []sim.Option
	if progress != nil {
		opts = append(opts, sim.WithProgress(progress))
	}
	m, err := uncertainty.Builtin()
	if err != nil {
		return nil, err
	}
	rep, err := sim.Run(ctx, res.Config, opts...)
	if err != nil {
		return nil, err
	}
	m.Judge(&res.Config, rep)
	return rep, nil
}

// decodeScenario decodes a scenario body strictly: unknown keys are errors
// naming their path.
func decodeScenario(body []byte, name string) (scenario.Scenario, error) {
	if len(bytes.TrimSpace(body)) == 0 {
		return scenario.Scenario{}, fmt.Errorf("%w: the request body is empty (want a scenario; {} runs the defaults)", ErrMalformed)
	}
	if len(body) > scenario.MaxBytes {
		return scenario.Scenario{}, &bodyTooLargeError{limit: scenario.MaxBytes}
	}
	if b := bytes.TrimSpace(body); b[0] != '{' {
		return scenario.Scenario{}, fmt.Errorf("%w: a scenario is a JSON object", ErrMalformed)
	}
	sc, err := scenario.Decode(bytes.NewReader(body), name)
	if err != nil {
		return sc, err
	}
	return sc, nil
}

// notFound wraps ErrNotFound.
func notFound(format string, a ...any) error {
	return fmt.Errorf("%w: %s", ErrNotFound, fmt.Sprintf(format, a...))
}

var _ Engine = (*Domain)(nil)
