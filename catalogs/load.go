package catalogs

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"regexp"
	"sort"
	"strings"
	"sync"

	"go.yaml.in/yaml/v3"

	"github.com/headroom-sim/headroom/hardware"
	"github.com/headroom-sim/headroom/models"
)

//go:embed gpus/*.yaml models/*.yaml
var builtinFS embed.FS

// FileError locates a catalog problem: the file, the entry (when known),
// the field and the reason.
type FileError struct {
	File  string
	Line  int
	Entry string
	Field string
	Err   error
}

func (e *FileError) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d", e.Line)
	}
	if e.Entry != "" {
		fmt.Fprintf(&b, ": entry %q", e.Entry)
	}
	if e.Field != "" {
		fmt.Fprintf(&b, ": field %s", e.Field)
	}
	fmt.Fprintf(&b, ": %v", e.Err)
	return b.String()
}

func (e *FileError) Unwrap() error { return e.Err }

var (
	builtinOnce sync.Once
	builtinCat  *Catalog
	builtinErr  error
)

// Builtin returns the embedded catalog, parsed once. Callers must not modify
// it; Clone it to add user entries.
func Builtin() (*Catalog, error) {
	builtinOnce.Do(func() {
		builtinCat = New()
		builtinErr = builtinCat.LoadFS(builtinFS)
	})
	return builtinCat, builtinErr
}

// maxCatalogFiles bounds the YAML files one catalog directory may hold.
const maxCatalogFiles = 4096

// LoadFS adds every *.yaml (or *.yml) file under gpus/ and models/ of fsys,
// in subdirectories too: an entry whose id has a slash (a Hugging Face id
// such as MiniMaxAI/MiniMax-M2.5) lives at models/MiniMaxAI/MiniMax-M2.5.yaml.
// Hidden files and directories (a leading dot) are skipped. A YAML file
// holds one entry or several separated by "---". Any other *.yaml file at
// the top level is an error (it would otherwise be silently ignored).
func (c *Catalog) LoadFS(fsys fs.FS) error {
	top, err := fs.Glob(fsys, "*.y*ml")
	if err != nil {
		return err
	}
	for _, f := range top {
		return &FileError{File: f, Err: errors.New("catalog entries belong in gpus/ or models/")}
	}
	for _, dir := range []string{"gpus", "models"} {
		files, err := catalogFiles(fsys, dir)
		if err != nil {
			return err
		}
		for _, f := range files {
			data, err := fs.ReadFile(fsys, f)
			if err != nil {
				return &FileError{File: f, Err: err}
			}
			if dir == "gpus" {
				err = c.LoadGPUs(f, bytes.NewReader(data))
			} else {
				err = c.LoadModels(f, bytes.NewReader(data))
			}
			if err != nil {
				return err
			}
		}
	}
	return nil
}

// catalogFiles lists the YAML files under dir, sorted by path; a missing
// dir has none.
func catalogFiles(fsys fs.FS, dir string) ([]string, error) {
	var files []string
	err := fs.WalkDir(fsys, dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == dir && errors.Is(err, fs.ErrNotExist) {
				return fs.SkipAll
			}
			return &FileError{File: p, Err: err}
		}
		if p != dir && strings.HasPrefix(d.Name(), ".") {
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if d.IsDir() || !(strings.HasSuffix(p, ".yaml") || strings.HasSuffix(p, ".yml")) {
			return nil
		}
		if len(files) == maxCatalogFiles {
			return &FileError{File: dir, Err: fmt.Errorf("more than %d YAML files", maxCatalogFiles)}
		}
		files = append(files, p)
		return nil
	})
	sort.Strings(files)
	return files, err
}

// ModelFile is where a catalog directory keeps the model with id id:
// models/<id>.yaml, with each slash of the id a subdirectory. The id must
// be usable as a relative path: no empty, "." or ".." element, no
// backslash, no leading dot and no control characters.
func ModelFile(id string) (string, error) {
	if id == "" {
		return "", &hardware.FieldError{Field: "id", Reason: "is required"}
	}
	for _, r := range id {
		if r < 0x20 || r == 0x7f || r == '\\' || r == ':' {
			return "", &hardware.FieldError{Field: "id", Reason: fmt.Sprintf("%q: %q cannot be part of a file name", id, r)}
		}
	}
	for _, seg := range strings.Split(id, "/") {
		if seg == "" || strings.HasPrefix(seg, ".") {
			return "", &hardware.FieldError{Field: "id", Reason: fmt.Sprintf("%q: every part between slashes must be non-empty and not start with a dot", id)}
		}
	}
	return path.Join("models", id+".yaml"), nil
}

// LoadGPUs parses the GPU entries of one YAML stream named name.
func (c *Catalog) LoadGPUs(name string, r io.Reader) error {
	return decodeAll(name, r, func() any { return new(hardware.GPU) }, func(v any, line int) error {
		g := v.(*hardware.GPU)
		if err := c.AddGPU(g, name); err != nil {
			return entryError(name, line, g.ID, err)
		}
		return nil
	})
}

// LoadModels parses the model entries of one YAML stream named name.
func (c *Catalog) LoadModels(name string, r io.Reader) error {
	return decodeAll(name, r, func() any { return new(models.Model) }, func(v any, line int) error {
		m := v.(*models.Model)
		if err := c.AddModel(m, name); err != nil {
			return entryError(name, line, m.ID, err)
		}
		return nil
	})
}

// ParseModels decodes and validates the model entries of one YAML stream
// named name without adding them anywhere: a loader that takes a file's
// entries one by one (a server's model store) checks each against its
// catalog itself.
func ParseModels(name string, r io.Reader) ([]*models.Model, error) {
	var out []*models.Model
	err := decodeAll(name, r, func() any { return new(models.Model) }, func(v any, line int) error {
		m := v.(*models.Model)
		if err := m.Validate(); err != nil {
			return entryError(name, line, m.ID, err)
		}
		out = append(out, m)
		return nil
	})
	return out, err
}

// ModelFiles lists the model files of a catalog directory (models/, its
// subdirectories too; hidden ones skipped), sorted.
func ModelFiles(fsys fs.FS) ([]string, error) { return catalogFiles(fsys, "models") }

func entryError(file string, line int, id string, err error) error {
	var fe *hardware.FieldError
	if errors.As(err, &fe) {
		return &FileError{File: file, Line: line, Entry: id, Field: fe.Field, Err: errors.New(fe.Reason)}
	}
	return &FileError{File: file, Line: line, Entry: id, Err: err}
}

var yamlLineRE = regexp.MustCompile(`line (\d+): (.*)`)
var yamlFieldRE = regexp.MustCompile(`field (\S+) not found in type (\S+)`)

// maxCatalogFileBytes bounds one catalog file.
const maxCatalogFileBytes = 8 << 20

// decodeAll decodes every document of a YAML stream strictly (unknown keys
// are errors) and hands each to add with the line it starts on.
func decodeAll(name string, r io.Reader, alloc func() any, add func(v any, line int) error) error {
	data, err := io.ReadAll(io.LimitReader(r, maxCatalogFileBytes+1))
	if err != nil {
		return &FileError{File: name, Err: err}
	}
	if len(data) > maxCatalogFileBytes {
		return &FileError{File: name, Err: fmt.Errorf("larger than %d bytes", maxCatalogFileBytes)}
	}
	// First pass: document start lines, and which documents are empty.
	var lines []int
	nodes := yaml.NewDecoder(bytes.NewReader(data))
	for {
		var node yaml.Node
		err := nodes.Decode(&node)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return yamlError(name, err)
		}
		line := 0
		if len(node.Content) > 0 && node.Content[0].Kind == yaml.MappingNode {
			line = node.Content[0].Line
		} else if len(node.Content) > 0 && !(node.Content[0].Kind == yaml.ScalarNode && node.Content[0].Tag == "!!null") {
			return &FileError{File: name, Line: node.Content[0].Line, Err: errors.New("an entry must be a mapping of keys to values")}
		}
		lines = append(lines, line)
	}
	// Second pass: strict decoding into the entry type.
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	n := 0
	for _, line := range lines {
		v := alloc()
		if err := dec.Decode(v); err != nil {
			return yamlError(name, err)
		}
		if line == 0 {
			continue // empty document
		}
		if err := add(v, line); err != nil {
			return err
		}
		n++
	}
	if n == 0 {
		return &FileError{File: name, Err: errors.New("no entries")}
	}
	return nil
}

func yamlError(name string, err error) error {
	msg := err.Error()
	var te *yaml.TypeError
	if errors.As(err, &te) && len(te.Errors) > 0 {
		msg = te.Errors[0]
	}
	msg = strings.TrimPrefix(msg, "yaml: ")
	fe := &FileError{File: name}
	if m := yamlLineRE.FindStringSubmatch(msg); m != nil {
		fmt.Sscanf(m[1], "%d", &fe.Line)
		msg = m[2]
	}
	if m := yamlFieldRE.FindStringSubmatch(msg); m != nil {
		fe.Field = m[1]
		fe.Err = errors.New("unknown key")
		return fe
	}
	fe.Err = errors.New(msg)
	return fe
}
