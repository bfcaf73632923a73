package catalogs

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
)

// qobj reads typed values of one JSON object of a quantisation config;
// field is its path in errors ("" at the top of a file).
type qobj struct {
	file, field string
	m           map[string]any
}

func (o qobj) path(k string) string {
	if o.field == "" {
		return k
	}
	return o.field + "." + k
}

func (o qobj) errf(k, format string, args ...any) error {
	return &FileError{File: o.file, Field: o.path(k), Err: fmt.Errorf(format, args...)}
}

// get returns the value of k; null counts as absent.
func (o qobj) get(k string) (any, bool) {
	v, ok := o.m[k]
	return v, ok && v != nil
}

func (o qobj) str(k string) (string, bool, error) {
	v, ok := o.get(k)
	if !ok {
		return "", false, nil
	}
	s, isStr := v.(string)
	if !isStr {
		return "", true, o.errf(k, "must be a string, not %s", jsonKind(v))
	}
	return s, true, nil
}

func (o qobj) int(k string) (int, bool, error) {
	v, ok := o.get(k)
	if !ok {
		return 0, false, nil
	}
	n, msg := toInt(v)
	if msg != "" {
		return 0, true, o.errf(k, "%s", msg)
	}
	return n, true, nil
}

func (o qobj) obj(k string) (qobj, bool, error) {
	v, ok := o.get(k)
	if !ok {
		return qobj{}, false, nil
	}
	m, isObj := v.(map[string]any)
	if !isObj {
		return qobj{}, true, o.errf(k, "must be an object, not %s", jsonKind(v))
	}
	return qobj{file: o.file, field: o.path(k), m: m}, true, nil
}

func (o qobj) strs(k string) ([]string, bool, error) {
	v, ok := o.get(k)
	if !ok {
		return nil, false, nil
	}
	list, isList := v.([]any)
	if !isList {
		return nil, true, o.errf(k, "must be a list of strings, not %s", jsonKind(v))
	}
	out := make([]string, len(list))
	for i, e := range list {
		s, isStr := e.(string)
		if !isStr {
			return nil, true, o.errf(fmt.Sprintf("%s[%d]", k, i), "must be a string, not %s", jsonKind(e))
		}
		out[i] = s
	}
	return out, true, nil
}

// blockSize reads a [rows, columns] block: a list of two integers, or the
// "128x128" string older compressed-tensors versions write.
func (o qobj) blockSize(k string) ([]int, bool, error) {
	v, ok := o.get(k)
	if !ok {
		return nil, false, nil
	}
	var parts []any
	switch t := v.(type) {
	case []any:
		parts = t
	case string:
		a, b, found := strings.Cut(strings.ToLower(t), "x")
		if !found {
			return nil, true, o.errf(k, "must be [rows, columns] or \"RxC\", not %q", t)
		}
		parts = []any{json.Number(strings.TrimSpace(a)), json.Number(strings.TrimSpace(b))}
	default:
		return nil, true, o.errf(k, "must be a list of two integers, not %s", jsonKind(v))
	}
	if len(parts) != 2 {
		return nil, true, o.errf(k, "must have two entries (rows, columns), not %d", len(parts))
	}
	out := make([]int, 2)
	for i, p := range parts {
		n, msg := toInt(p)
		if msg != "" || n == 0 {
			if msg == "" {
				msg = "must be > 0"
			}
			return nil, true, o.errf(fmt.Sprintf("%s[%d]", k, i), "%s", msg)
		}
		out[i] = n
	}
	return out, true, nil
}

// checkKeys reports the keys of o outside known: an error, or with lenient
// their paths added to ignored.
func (o qobj) checkKeys(known map[string]bool, lenient bool, ignored *[]string) error {
	keys := make([]string, 0, len(o.m))
	for k := range o.m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if known[k] {
			continue
		}
		if !lenient {
			return o.errf(k, "unknown quantization key (use the lenient import to ignore it)")
		}
		*ignored = append(*ignored, o.path(k))
	}
	return nil
}
