package kerneldb

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"sync"

	"github.com/headroom-sim/headroom/catalogs"
	"github.com/headroom-sim/headroom/hardware"
	"github.com/headroom-sim/headroom/sim/steptime"
)

// Provider finds and caches the kernel database of a GPU: the built-in
// measurements, or a directory a user names. It is safe for concurrent
// use; each (directory, system) is read once.
type Provider struct {
	// BuiltIn holds the built-in measurements (catalogs.Kernels()); nil
	// means none.
	BuiltIn fs.FS
	// Resolve maps a database's system name (h100_sxm …) to a catalog GPU
	// id, for user directories holding several systems; nil matches names
	// against the GPU's id and aliases only.
	Resolve func(system string) (gpuID string, ok bool)
	// Open opens a user directory (default os.DirFS).
	Open func(dir string) (fs.FS, error)
	// GPU returns the catalog GPU of a built-in system, for the family
	// sibling's and the predecessor's hardware (steptime.SiblingSystems,
	// steptime.PredecessorSystems); nil leaves built-in databases without
	// either.
	GPU func(system string) (*hardware.GPU, bool)

	mu    sync.Mutex
	cache map[string]*entry
}

type entry struct {
	once sync.Once
	db   *steptime.KernelDB
	err  error
}

// Load returns g's kernel database: from dir when it is set, else the
// built-in one (nil, nil when Headroom has no measurements of g).
func (p *Provider) Load(g *hardware.GPU, dir string) (*steptime.KernelDB, error) {
	if dir == "" {
		sys, ok := steptime.MeasuredSystems[g.ID]
		if !ok || p.BuiltIn == nil {
			return nil, nil
		}
		return p.load("builtin:"+sys, func() (*steptime.KernelDB, error) {
			db, err := p.builtin(sys)
			if err != nil || p.GPU == nil {
				return db, err
			}
			if db.Sibling, db.SiblingHW, err = p.related(steptime.SiblingSystems[sys]); err != nil {
				return nil, err
			}
			if db.Predecessor, db.PredecessorHW, err = p.related(steptime.PredecessorSystems[sys]); err != nil {
				return nil, err
			}
			return db, nil
		})
	}
	open := p.Open
	if open == nil {
		open = func(d string) (fs.FS, error) {
			st, err := os.Stat(d)
			if err != nil {
				return nil, err
			}
			if !st.IsDir() {
				return nil, fmt.Errorf("%s is not a directory", d)
			}
			return os.DirFS(d), nil
		}
	}
	fsys, err := open(dir)
	if err != nil {
		return nil, err
	}
	// A system directory itself (it holds the op directories).
	for op := range tableFiles {
		if st, err := fs.Stat(fsys, op); err == nil && st.IsDir() {
			return p.load(dir, func() (*steptime.KernelDB, error) { return loadRoot(fsys, dir) })
		}
	}
	systems, err := Systems(fsys)
	if err != nil {
		return nil, err
	}
	for _, sys := range systems {
		if p.matches(sys, g) {
			return p.load(dir+"\x00"+sys, func() (*steptime.KernelDB, error) { return Load(fsys, sys, Options{}) })
		}
	}
	if len(systems) == 0 {
		return nil, fmt.Errorf("%s: %w (no <system>/gemm|attention|moe|comm directories)", dir, ErrNoSystem)
	}
	return nil, fmt.Errorf("%s: %w for %s (it has %s)", dir, ErrNoSystem, g.ID, strings.Join(systems, ", "))
}

// related returns the built-in database of sys (a family sibling or
// predecessor) alone, without its own relatives, and its GPU's hardware;
// nil without a system or a catalog GPU for it.
func (p *Provider) related(sys string) (*steptime.KernelDB, steptime.Hardware, error) {
	if sys == "" {
		return nil, steptime.Hardware{}, nil
	}
	g, ok := p.GPU(sys)
	if !ok {
		return nil, steptime.Hardware{}, nil
	}
	db, err := p.load("builtin-only:"+sys, func() (*steptime.KernelDB, error) { return p.builtin(sys) })
	if err != nil {
		return nil, steptime.Hardware{}, err
	}
	return db, steptime.NewHardware(g), nil
}

func (p *Provider) builtin(sys string) (*steptime.KernelDB, error) {
	db, err := Load(p.BuiltIn, sys, Options{})
	if db != nil {
		db.Source = "built-in " + db.Source
	}
	return db, err
}

// matches reports whether a database system names g.
func (p *Provider) matches(sys string, g *hardware.GPU) bool {
	if s, ok := steptime.MeasuredSystems[g.ID]; ok && s == sys {
		return true
	}
	if p.Resolve != nil {
		if id, ok := p.Resolve(sys); ok {
			return id == g.ID
		}
	}
	norm := func(s string) string { return strings.ToLower(strings.NewReplacer("_", "-", " ", "-").Replace(s)) }
	for _, n := range append([]string{g.ID}, g.Aliases...) {
		if norm(n) == norm(sys) {
			return true
		}
	}
	return false
}

func (p *Provider) load(key string, f func() (*steptime.KernelDB, error)) (*steptime.KernelDB, error) {
	p.mu.Lock()
	if p.cache == nil {
		p.cache = map[string]*entry{}
	}
	e := p.cache[key]
	if e == nil {
		e = &entry{}
		p.cache[key] = e
	}
	p.mu.Unlock()
	e.once.Do(func() { e.db, e.err = f() })
	return e.db, e.err
}

// loadRoot reads a directory that is one system's database: its op
// directories at the top.
func loadRoot(fsys fs.FS, name string) (*steptime.KernelDB, error) {
	sub := rootFS{fsys}
	db, err := Load(sub, rootName, Options{})
	if errors.Is(err, ErrNoSystem) {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if db != nil {
		db.System = name
	}
	return db, err
}

// rootName is the system directory name rootFS invents.
const rootName = "system"

// rootFS presents a system directory as <rootName>/… so Load can read it.
type rootFS struct{ fs.FS }

func (r rootFS) Open(name string) (fs.File, error) {
	if name == "." {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
	}
	rest, ok := strings.CutPrefix(name, rootName)
	switch {
	case !ok:
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
	case rest == "":
		return r.FS.Open(".")
	case rest[0] == '/':
		return r.FS.Open(rest[1:])
	}
	return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
}

// ForCatalog is the built-in measurements (catalogs.Kernels()), their
// systems resolved to GPUs by gpu (a catalog's GPU method; a function,
// so that a catalog that changes, the API's, is asked at each load).
func ForCatalog(gpu func(id string) (*hardware.GPU, error)) *Provider {
	return &Provider{BuiltIn: catalogs.Kernels(),
		Resolve: func(sys string) (string, bool) {
			g, err := gpu(sys)
			if err != nil {
				return "", false
			}
			return g.ID, true
		},
		GPU: func(sys string) (*hardware.GPU, bool) {
			g, err := gpu(sys)
			return g, err == nil
		}}
}
