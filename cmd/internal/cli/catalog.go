package cli

import (
	"fmt"
	"os"
	"strings"

	"github.com/headroom-sim/headroom/catalogs"
)

// LoadCatalog returns the built-in catalog, extended with the user's
// directory when one is given (dir, else HEADROOM_CATALOG_DIR read with
// getenv). A directory that is not one, or whose entries do not load, is a
// UsageError naming --catalog-dir.
func LoadCatalog(getenv func(string) string, dir string) (*catalogs.Catalog, error) {
	base, err := catalogs.Builtin()
	if err != nil {
		return nil, fmt.Errorf("built-in catalog: %w", err)
	}
	if dir == "" {
		dir = getenv("HEADROOM_CATALOG_DIR")
	}
	if dir == "" {
		return base, nil
	}
	st, err := os.Stat(dir)
	if err != nil || !st.IsDir() {
		return nil, Usagef("--catalog-dir: %s is not a directory", dir)
	}
	c := base.Clone()
	if err := c.LoadFS(os.DirFS(dir)); err != nil {
		return nil, Usagef("--catalog-dir: %s/%v", strings.TrimSuffix(dir, "/"), err)
	}
	return c, nil
}
