package main

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// manifestPath is the committed manifest of the reference data the
// external steps read, relative to the repository root.
const manifestPath = "testdata/shared-data.manifest"

// manifestRoots are the folders of the reference data the external steps
// read: the host fit reads families of runs under measured/, and
// docs/gen-accuracy.sh replays every run under it (validate --runs-from),
// docs/gen-calibration.sh a few of them.
var manifestRoots = []string{"measured"}

const manifestHeader = `# The reference data (../shared/data beside the checkout) that go run ./cmd/headroom-fit reads
# for the host costs (sim/steptime/profiles/host.json) and docs/accuracy.md and docs/calibration.md:
# every file under measured/, one a line: SHA-256, size in bytes, path relative to ../shared/data.
# The tool refuses to fit or check on data that differ; after a deliberate change of the data,
# go run ./cmd/headroom-fit --write-manifest rewrites this file.
`

// manifestEntry is one file of the reference data.
type manifestEntry struct {
	Path   string // slash-separated, relative to the data directory
	Size   int64
	SHA256 string // hex
}

// parseManifest reads a manifest: comment and blank lines, then one
// "sha256 size path" a line.
func parseManifest(r io.Reader, name string) ([]manifestEntry, error) {
	var out []manifestEntry
	seen := map[string]bool{}
	sc := bufio.NewScanner(r)
	line := 0
	for sc.Scan() {
		line++
		s := strings.TrimSpace(sc.Text())
		if s == "" || strings.HasPrefix(s, "#") {
			continue
		}
		f := strings.Fields(s)
		if len(f) != 3 {
			return nil, fmt.Errorf("%s:%d: want \"sha256 size path\", got %d fields", name, line, len(f))
		}
		if b, err := hex.DecodeString(f[0]); err != nil || len(b) != sha256.Size {
			return nil, fmt.Errorf("%s:%d: sha256 %q is not 64 hex digits", name, line, f[0])
		}
		size, err := strconv.ParseInt(f[1], 10, 64)
		if err != nil || size < 0 {
			return nil, fmt.Errorf("%s:%d: size %q is not a byte count", name, line, f[1])
		}
		if !fs.ValidPath(f[2]) || f[2] == "." {
			return nil, fmt.Errorf("%s:%d: path %q is not relative to the data directory", name, line, f[2])
		}
		if seen[f[2]] {
			return nil, fmt.Errorf("%s:%d: %s listed twice", name, line, f[2])
		}
		seen[f[2]] = true
		out = append(out, manifestEntry{Path: f[2], Size: size, SHA256: strings.ToLower(f[0])})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: lists no file", name)
	}
	return out, nil
}

// formatManifest writes entries, sorted by path, under the header.
func formatManifest(w io.Writer, entries []manifestEntry) error {
	sort.Slice(entries, func(i, j int) bool { return entries[i].Path < entries[j].Path })
	if _, err := io.WriteString(w, manifestHeader); err != nil {
		return err
	}
	for _, e := range entries {
		if _, err := fmt.Fprintf(w, "%s %d %s\n", e.SHA256, e.Size, e.Path); err != nil {
			return err
		}
	}
	return nil
}

func hashFile(fsys fs.FS, p string) (manifestEntry, error) {
	f, err := fsys.Open(p)
	if err != nil {
		return manifestEntry{}, err
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err != nil {
		return manifestEntry{}, err
	}
	return manifestEntry{Path: p, Size: n, SHA256: hex.EncodeToString(h.Sum(nil))}, nil
}

// scanData hashes every regular file under roots of fsys.
func scanData(fsys fs.FS, roots []string) ([]manifestEntry, error) {
	var out []manifestEntry
	for _, root := range roots {
		err := fs.WalkDir(fsys, root, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !d.Type().IsRegular() {
				return err
			}
			e, err := hashFile(fsys, p)
			if err != nil {
				return err
			}
			out = append(out, e)
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// verifyData checks fsys against the manifest: every listed file present
// with its size and hash, and no file under roots that it does not list.
// The error names every file that differs.
func verifyData(fsys fs.FS, want []manifestEntry, roots []string) error {
	have, err := scanData(fsys, roots)
	if err != nil {
		return err
	}
	got := map[string]manifestEntry{}
	for _, e := range have {
		got[e.Path] = e
	}
	// Changed files first, then unlisted ones, then missing ones: a
	// folder absent from the data would otherwise hide the others.
	var changed, unlisted, missing []string
	listed := map[string]bool{}
	for _, w := range want {
		listed[w.Path] = true
		g, ok := got[w.Path]
		switch {
		case !ok:
			missing = append(missing, w.Path+": missing")
		case g.Size != w.Size:
			changed = append(changed, fmt.Sprintf("%s: %d bytes, the manifest says %d", w.Path, g.Size, w.Size))
		case g.SHA256 != w.SHA256:
			changed = append(changed, fmt.Sprintf("%s: sha256 %s, the manifest says %s", w.Path, g.SHA256, w.SHA256))
		}
	}
	for _, e := range have {
		if !listed[e.Path] {
			unlisted = append(unlisted, e.Path+": not in the manifest")
		}
	}
	sort.Strings(changed)
	sort.Strings(unlisted)
	sort.Strings(missing)
	diffs := append(append(changed, unlisted...), missing...)
	if len(diffs) == 0 {
		return nil
	}
	const show = 10
	more := ""
	if len(diffs) > show {
		more = fmt.Sprintf("\n  … and %d more", len(diffs)-show)
		diffs = diffs[:show]
	}
	return fmt.Errorf("the reference data differ from %s:\n  %s%s\n(fits and checks are only reproducible on the data the manifest lists; after a deliberate change, go run ./cmd/headroom-fit --write-manifest)",
		manifestPath, strings.Join(diffs, "\n  "), more)
}

// readManifest reads the committed manifest under root.
func readManifest(root string) ([]manifestEntry, error) {
	f, err := os.Open(filepath.Join(root, filepath.FromSlash(manifestPath)))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return parseManifest(f, manifestPath)
}

// writeManifest rewrites the committed manifest from the data in fsys.
func writeManifest(root string, fsys fs.FS) (int, error) {
	entries, err := scanData(fsys, manifestRoots)
	if err != nil {
		return 0, err
	}
	var b strings.Builder
	if err := formatManifest(&b, entries); err != nil {
		return 0, err
	}
	p := filepath.Join(root, filepath.FromSlash(manifestPath))
	return len(entries), os.WriteFile(p, []byte(b.String()), 0o644)
}
