package api

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"

	"go.yaml.in/yaml/v3"

	"github.com/headroom-sim/headroom/catalogs"
	"github.com/headroom-sim/headroom/models"
)

// catalogStore holds the served catalog. Readers take the current one
// without locking; a writer clones it, adds, persists, and swaps.
type catalogStore struct {
	mu  sync.Mutex // serialises writers
	cur atomic.Pointer[catalogs.Catalog]
	// dir is the model store ("" keeps added models in memory only).
	dir string
}

// newCatalogStore serves base extended with dir's catalog files.
func newCatalogStore(base *catalogs.Catalog, dir string) (*catalogStore, error) {
	s := &catalogStore{dir: dir}
	cat := base
	if dir != "" {
		st, err := os.Stat(dir)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			// created on the first POST /v1/models
		case err != nil:
			return nil, fmt.Errorf("model store: %w", err)
		case !st.IsDir():
			return nil, fmt.Errorf("model store: %s is not a directory", dir)
		default:
			cat = base.Clone()
			if err := cat.LoadFS(os.DirFS(dir)); err != nil {
				return nil, fmt.Errorf("model store %s: %w", dir, err)
			}
		}
	}
	s.cur.Store(cat)
	return s, nil
}

func (s *catalogStore) catalog() *catalogs.Catalog { return s.cur.Load() }

// addModel adds m unless its id or a name of it is taken, writing it to the
// store first when there is one. persisted says whether it was written.
func (s *catalogStore) addModel(m *models.Model, ignored []string) (persisted bool, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	cur := s.cur.Load()
	for _, name := range append([]string{m.ID, m.HFID}, m.Aliases...) {
		if name == "" {
			continue
		}
		if other, err := cur.Model(name); err == nil {
			return false, fmt.Errorf("%w: %q already names model %q", ErrConflict, name, other.ID)
		}
	}
	next := cur.Clone()
	if err := next.AddModel(m, m.Source); err != nil {
		return false, err
	}
	if s.dir != "" {
		if err := s.write(m, ignored); err != nil {
			return false, err
		}
		persisted = true
	}
	s.cur.Store(next)
	return persisted, nil
}

// write stores m as <dir>/models/<id>.yaml, atomically.
func (s *catalogStore) write(m *models.Model, ignored []string) error {
	var b bytes.Buffer
	b.WriteString("# Added by POST /v1/models (Hugging Face config.json import).\n")
	if len(ignored) > 0 {
		fmt.Fprintf(&b, "# Ignored config.json keys: %s\n", strings.Join(ignored, ", "))
	}
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(m); err != nil {
		return fmt.Errorf("model store: %w", err)
	}
	dir := filepath.Join(s.dir, "models")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("model store: %w", err)
	}
	f, err := os.CreateTemp(dir, ".tmp-*.yaml.part")
	if err != nil {
		return fmt.Errorf("model store: %w", err)
	}
	_, werr := f.Write(b.Bytes())
	cerr := f.Close()
	if werr != nil || cerr != nil {
		os.Remove(f.Name())
		return fmt.Errorf("model store: %w", errors.Join(werr, cerr))
	}
	if err := os.Rename(f.Name(), filepath.Join(dir, m.ID+".yaml")); err != nil {
		os.Remove(f.Name())
		return fmt.Errorf("model store: %w", err)
	}
	return nil
}
