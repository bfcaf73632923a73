package scenario

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"reflect"
	"regexp"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// MaxBytes bounds a scenario document.
const MaxBytes = 1 << 20

// ErrSyntax marks documents that are not valid YAML/JSON.
var ErrSyntax = errors.New("malformed document")

// DecodeError locates a problem in a scenario document.
type DecodeError struct {
	Name  string // file name or "request body"
	Line  int
	Field string // dotted path
	Err   error
}

func (e *DecodeError) Error() string {
	var b strings.Builder
	b.WriteString(e.Name)
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d", e.Line)
	}
	if e.Field != "" {
		fmt.Fprintf(&b, ": field %s", e.Field)
	}
	fmt.Fprintf(&b, ": %v", e.Err)
	return b.String()
}

func (e *DecodeError) Unwrap() error { return e.Err }

// Decode reads a scenario from YAML or JSON (a JSON document is YAML) with
// the defaults applied: engine settings field by field, workload sections
// whole. Unknown keys are errors naming their path; name is used in errors.
// The result is validated.
func Decode(r io.Reader, name string) (Scenario, error) {
	data, err := io.ReadAll(io.LimitReader(r, MaxBytes+1))
	if err != nil {
		return Scenario{}, &DecodeError{Name: name, Err: err}
	}
	if len(data) > MaxBytes {
		return Scenario{}, &DecodeError{Name: name, Err: fmt.Errorf("larger than %d bytes", MaxBytes)}
	}
	// One document, and nothing after it: a second document, or text
	// after the first, is not silently dropped.
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var root, next yaml.Node
	if err := dec.Decode(&root); err != nil && !errors.Is(err, io.EOF) {
		return Scenario{}, syntaxError(name, err)
	}
	switch err := dec.Decode(&next); {
	case errors.Is(err, io.EOF):
	case err != nil:
		return Scenario{}, syntaxError(name, err)
	default:
		return Scenario{}, &DecodeError{Name: name, Line: next.Line, Err: fmt.Errorf("%w: a second document: a scenario is one document", ErrSyntax)}
	}
	s := base()
	var paths map[string]int // field path → line, for validation errors
	if root.Kind != 0 && len(root.Content) > 0 {
		doc := root.Content[0]
		if doc.Kind == yaml.ScalarNode && doc.Tag == "!!null" {
			// empty document: all defaults
		} else {
			if doc.Kind != yaml.MappingNode {
				return Scenario{}, &DecodeError{Name: name, Line: doc.Line, Err: errors.New("a scenario must be a mapping of keys to values")}
			}
			lines := map[int]string{}
			paths = map[string]int{}
			if err := checkKeys(doc, reflect.TypeOf(s), "", lines, paths); err != nil {
				var de *DecodeError
				if errors.As(err, &de) {
					de.Name = name
				}
				return Scenario{}, err
			}
			if err := doc.Decode(&s); err != nil {
				return Scenario{}, typeError(name, err, lines)
			}
		}
	}
	s.applyWorkloadDefaults()
	if err := s.Validate(); err != nil {
		var fe *FieldError
		if errors.As(err, &fe) {
			return s, &DecodeError{Name: name, Line: lineOf(paths, fe.Field), Field: fe.Field, Err: errors.New(fe.Reason)}
		}
		return s, &DecodeError{Name: name, Err: err}
	}
	return s, nil
}

func syntaxError(name string, err error) error {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	de := &DecodeError{Name: name, Err: fmt.Errorf("%w: %s", ErrSyntax, msg)}
	if m := lineRE.FindStringSubmatch(msg); m != nil {
		de.Line, _ = strconv.Atoi(m[1])
		de.Err = fmt.Errorf("%w: %s", ErrSyntax, m[2])
	}
	return de
}

var lineRE = regexp.MustCompile(`line (\d+): (.*)`)

func typeError(name string, err error, lines map[int]string) error {
	msg := err.Error()
	var te *yaml.TypeError
	if errors.As(err, &te) && len(te.Errors) > 0 {
		msg = te.Errors[0]
	}
	msg = strings.TrimPrefix(msg, "yaml: ")
	de := &DecodeError{Name: name, Err: errors.New(msg)}
	if m := lineRE.FindStringSubmatch(msg); m != nil {
		de.Line, _ = strconv.Atoi(m[1])
		de.Field = lines[de.Line]
		de.Err = errors.New(strings.Replace(m[2], "cannot unmarshal", "cannot use", 1))
	}
	return de
}

// lineOf finds the line of a field path, or of its closest parent that
// the document sets (0 when none).
func lineOf(paths map[string]int, field string) int {
	for p := field; p != ""; {
		if l, ok := paths[p]; ok {
			return l
		}
		i := strings.LastIndexAny(p, ".[")
		if i < 0 {
			break
		}
		p = p[:i]
	}
	return 0
}

// checkKeys walks a mapping node against the struct type t (by yaml tags)
// and reports the first unknown or duplicate key, or scalar of the wrong
// kind, with its dotted path. It records the path of each value's line for
// later type errors, and each path's line for validation errors.
func checkKeys(n *yaml.Node, t reflect.Type, path string, lines map[int]string, paths map[string]int) error {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if path != "" {
		if _, ok := paths[path]; !ok {
			paths[path] = n.Line
		}
	}
	if err := checkScalar(n, t, path); err != nil {
		return err
	}
	switch {
	case t.Kind() == reflect.Struct && n.Kind == yaml.MappingNode:
		fields := yamlFields(t)
		seen := map[string]bool{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			p := join(path, k.Value)
			ft, ok := fields[k.Value]
			if !ok {
				return &DecodeError{Line: k.Line, Field: p, Err: errors.New("unknown key")}
			}
			if seen[k.Value] {
				return &DecodeError{Line: k.Line, Field: p, Err: errors.New("duplicate key")}
			}
			seen[k.Value] = true
			lines[v.Line] = p
			lines[k.Line] = p
			paths[p] = k.Line
			if err := checkKeys(v, ft, p, lines, paths); err != nil {
				return err
			}
		}
	case (t.Kind() == reflect.Slice) && n.Kind == yaml.SequenceNode:
		for i, item := range n.Content {
			p := fmt.Sprintf("%s[%d]", path, i)
			lines[item.Line] = p
			if err := checkKeys(item, t.Elem(), p, lines, paths); err != nil {
				return err
			}
		}
	case t.Kind() == reflect.Map && n.Kind == yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			p := join(path, n.Content[i].Value)
			lines[n.Content[i+1].Line] = p
			paths[p] = n.Content[i].Line
			if err := checkKeys(n.Content[i+1], t.Elem(), p, lines, paths); err != nil {
				return err
			}
		}
	case t.Kind() == reflect.Struct && n.Kind != yaml.MappingNode && !(n.Kind == yaml.ScalarNode && n.Tag == "!!null"):
		return &DecodeError{Line: n.Line, Field: path, Err: errors.New("must be a mapping of keys to values")}
	}
	return nil
}

// checkScalar refuses a scalar the field's kind cannot hold exactly: a
// fraction or a string in an integer field (the YAML decoder would
// truncate 2.7 to 2), a string in a number or boolean field. It names the
// field even when several keys share a line, as in one-line JSON.
func checkScalar(n *yaml.Node, t reflect.Type, path string) error {
	if n.Kind != yaml.ScalarNode || n.Tag == "!!null" {
		return nil
	}
	var want string
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		if n.Tag != "!!int" {
			want = "an integer"
		}
	case reflect.Float32, reflect.Float64:
		if n.Tag != "!!int" && n.Tag != "!!float" {
			want = "a number"
		}
	case reflect.Bool:
		if n.Tag != "!!bool" {
			want = "true or false"
		}
	}
	if want == "" {
		return nil
	}
	return &DecodeError{Line: n.Line, Field: path, Err: fmt.Errorf("%q is not %s", n.Value, want)}
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// yamlFields maps a struct's yaml keys to their field types.
func yamlFields(t reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		tag := f.Tag.Get("yaml")
		name, opts, _ := strings.Cut(tag, ",")
		if name == "-" {
			continue
		}
		if strings.Contains(opts, "inline") {
			for k, v := range yamlFields(f.Type) {
				out[k] = v
			}
			continue
		}
		if name == "" {
			name = strings.ToLower(f.Name)
		}
		out[name] = f.Type
	}
	return out
}

// Encode writes s as YAML (for `--print-scenario` and golden files).
func Encode(w io.Writer, s Scenario) error {
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(s); err != nil {
		return err
	}
	_, err := w.Write(b.Bytes())
	return err
}
