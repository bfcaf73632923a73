package api

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
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

// newCatalogStore serves base extended with the models of dir's model
// files (models/, as write lays them out), entry by entry: a file that
// does not parse (empty, cut short, not YAML) and an entry one of whose
// names (id, Hugging Face id, aliases) already names a model, as
// addModel refuses it, are logged and skipped, and the server starts with
// the rest.
func newCatalogStore(base *catalogs.Catalog, dir string, log *slog.Logger) (*catalogStore, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
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
			s.added = loadStoreFiles(cat, dir, log)
		}
	}
	s.cur.Store(cat)
	return s, nil
}

// loadStoreFiles adds the model files of dir to cat one entry at a time,
// logging what it skips, and returns the models added.
func loadStoreFiles(cat *catalogs.Catalog, dir string, log *slog.Logger) []*models.Model {
	fsys := os.DirFS(dir)
	files, err := catalogs.ModelFiles(fsys)
	if err != nil {
		log.Warn("model store: not every file could be listed; loading those that were", "dir", dir, "err", err)
	}
	var added []*models.Model
	for _, f := range files {
		path := filepath.Join(dir, filepath.FromSlash(f))
		data, err := fs.ReadFile(fsys, f)
		if err != nil {
			log.Warn("model store: file skipped", "file", path, "err", err)
			continue
		}
		ms, err := catalogs.ParseModels(f, bytes.NewReader(data))
		if err != nil {
			log.Warn("model store: file skipped", "file", path, "err", err)
			continue
		}
		for _, m := range ms {
			if err := namesFree(cat, m); err != nil {
				log.Warn("model store: entry skipped", "file", path, "model", m.ID, "err", err)
				continue
			}
			if err := cat.AddModel(m, f); err != nil {
				log.Warn("model store: entry skipped", "file", path, "model", m.ID, "err", err)
				continue
			}
			added = append(added, m)
		}
	}
	return added
}

// namesFree refuses m when its id, Hugging Face id or an alias already
// names a model of cat.
func namesFree(cat *catalogs.Catalog, m *models.Model) error {
	for _, name := range append([]string{m.ID, m.HFID}, m.Aliases...) {
		if name == "" {
			continue
		}
		if other, err := cat.Model(name); err == nil {
			return fmt.Errorf("%w: %q already names model %q", ErrConflict, name, other.ID)
		}
	}
	return nil
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
	if err := namesFree(cur, m); err != nil {
		return false, err
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
		dir := filepath.Join(s.dir, "models")
		err := os.Remove(filepath.Join(dir, m.ID+".yaml"))
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return "", fmt.Errorf("model store: %w", err)
		}
		if err := syncDir(dir); err != nil {
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

// write stores m as <dir>/models/<id>.yaml, atomically and durably: the
// YAML goes to a temporary file (hidden, so a load skips it), which is
// fsynced and renamed over the file, and the directory is fsynced. User
// text (the id, names, aliases, the ignored config.json keys) appears only
// in double-quoted YAML scalars, escaped: a line break or a quote in it
// can never end its scalar and start a key of its own.
func (s *catalogStore) write(m *models.Model, ignored []string) error {
	b, err := modelYAML(m, ignored)
	if err != nil {
		return fmt.Errorf("model store: %w", err)
	}
	dir := filepath.Join(s.dir, "models")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("model store: %w", err)
	}
	if err := writeAtomic(dir, m.ID+".yaml", b); err != nil {
		return fmt.Errorf("model store: %w", err)
	}
	return nil
}

// modelYAML is the stored file of m.
func modelYAML(m *models.Model, ignored []string) ([]byte, error) {
	var b bytes.Buffer
	b.WriteString("# Added by POST /v1/models (Hugging Face config.json import).\n")
	if len(ignored) > 0 {
		quoted := make([]string, len(ignored))
		for i, k := range ignored {
			quoted[i] = strconv.QuoteToASCII(k) // a double-quoted YAML scalar: no line break survives
		}
		fmt.Fprintf(&b, "# Ignored config.json keys: %s\n", strings.Join(quoted, ", "))
	}
	var doc yaml.Node
	if err := doc.Encode(m); err != nil {
		return nil, err
	}
	quoteValues(&doc)
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(&doc); err != nil {
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// quoteValues makes every string value of n (not the keys, which are the
// schema's) a double-quoted scalar.
func quoteValues(n *yaml.Node) {
	switch n.Kind {
	case yaml.MappingNode:
		for i := 1; i < len(n.Content); i += 2 {
			quoteValues(n.Content[i])
		}
	case yaml.ScalarNode:
		if n.Tag == "!!str" {
			n.Style = yaml.DoubleQuotedStyle
		}
	default:
		for _, c := range n.Content {
			quoteValues(c)
		}
	}
}

// writeAtomic replaces dir/name with b: a temporary file in dir, fsynced,
// renamed over name, then dir fsynced, so that a crash leaves the old file
// or the new one, never a part of either.
func writeAtomic(dir, name string, b []byte) error {
	f, err := os.CreateTemp(dir, ".tmp-*.yaml.part")
	if err != nil {
		return err
	}
	_, werr := f.Write(b)
	serr := f.Sync()
	cerr := f.Close()
	if err := errors.Join(werr, serr, cerr); err != nil {
		os.Remove(f.Name())
		return err
	}
	if err := os.Rename(f.Name(), filepath.Join(dir, name)); err != nil {
		os.Remove(f.Name())
		return err
	}
	return syncDir(dir)
}

// syncDir fsyncs a directory, so that a rename or removal in it lasts.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	serr := d.Sync()
	return errors.Join(serr, d.Close())
}
