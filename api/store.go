package api

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"go.yaml.in/yaml/v3"

	"github.com/headroom-sim/headroom/catalogs"
	"github.com/headroom-sim/headroom/models"
)

// catalogStore holds the served catalog. Readers take the current one
// without locking; a writer builds the next one (the base, then the added
// models), persists, and swaps.
type catalogStore struct {
	mu  sync.Mutex // serialises writers
	cur atomic.Pointer[catalogs.Catalog]
	// base is the catalog without added models (built-in and catalog_dir).
	base *catalogs.Catalog
	// added are the models of POST /v1/models and of the model store, in
	// the order they came.
	added []*models.Model
	// dir is the model store ("" keeps added models in memory only).
	dir string
}

// ErrLimit marks a store that holds as much as it may (422).
var ErrLimit = errors.New("limit reached")

// newCatalogStore serves base extended with dir's catalog files.
func newCatalogStore(base *catalogs.Catalog, dir string) (*catalogStore, error) {
	s := &catalogStore{dir: dir, base: base}
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
			for _, m := range cat.Models() {
				if bm, err := base.Model(m.ID); err != nil || bm != m {
					s.added = append(s.added, m)
				}
			}
		}
	}
	s.cur.Store(cat)
	return s, nil
}

func (s *catalogStore) catalog() *catalogs.Catalog { return s.cur.Load() }

// addModel adds m unless its id or a name of it is taken, or maxAdded
// models are held already (0 refuses every addition), writing it to the
// store first when there is one. persisted says whether it was written.
func (s *catalogStore) addModel(m *models.Model, ignored []string, maxAdded int) (persisted bool, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.added) >= maxAdded {
		return false, fmt.Errorf("%w: the server holds %d added models, the most models.max_added allows: DELETE /v1/models/{id} one first", ErrLimit, len(s.added))
	}
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
	s.added = append(s.added, m)
	s.cur.Store(next)
	return persisted, nil
}

// deleteModel removes an added model (by id, alias or Hugging Face id),
// and its file from the store; built-in and catalog_dir models are not
// removable (ErrConflict). It answers the removed model's id.
func (s *catalogStore) deleteModel(name string) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	m, err := s.cur.Load().Model(name)
	if err != nil {
		return "", err
	}
	i := slices.Index(s.added, m)
	if i < 0 {
		return "", fmt.Errorf("%w: model %q is part of the catalog the server started with (built in or from catalog_dir); only models added with POST /v1/models can be deleted", ErrConflict, m.ID)
	}
	if s.dir != "" {
		err := os.Remove(filepath.Join(s.dir, "models", m.ID+".yaml"))
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return "", fmt.Errorf("model store: %w", err)
		}
	}
	rest := slices.Delete(slices.Clone(s.added), i, i+1)
	next := s.base.Clone()
	for _, am := range rest {
		if err := next.AddModel(am, am.Source); err != nil {
			return "", fmt.Errorf("model store: rebuild the catalog: %w", err)
		}
	}
	s.added = rest
	s.cur.Store(next)
	return m.ID, nil
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
