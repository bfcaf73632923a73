package measured

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"slices"
	"strings"
)

// shapeKind is what the start of a file is.
type shapeKind int

const (
	kindEmpty shapeKind = iota
	kindJSONObject
	kindJSONArray
	kindJSONLines
	kindCSV
	kindOther
)

// shape is what detection sees of a file's start: for JSON, the object keys
// of the first value (of the first element of a top-level array) with
// their depth (1 = the record's own keys); for CSV, the header.
type shape struct {
	kind   shapeKind
	keys   map[string]int
	header []string
}

// sniffTokens bounds the JSON tokens detection reads.
const sniffTokens = 200_000

func sniff(head []byte) *shape {
	head = bytes.TrimLeft(trimBOM(head), " \t\r\n")
	s := &shape{keys: map[string]int{}}
	switch {
	case len(head) == 0:
		s.kind = kindEmpty
	case head[0] == '{' || head[0] == '[':
		s.sniffJSON(head)
	default:
		line := head
		if i := bytes.IndexByte(line, '\n'); i >= 0 {
			line = line[:i]
		}
		rec, err := csv.NewReader(bytes.NewReader(line)).Read()
		if err != nil || len(rec) < 2 {
			s.kind = kindOther
			return s
		}
		s.kind = kindCSV
		for _, h := range rec {
			s.header = append(s.header, strings.ToLower(strings.TrimSpace(h)))
		}
	}
	return s
}

// sniffJSON walks the tokens of head (which may end mid-value) and records
// object keys by depth, and whether a second top-level value follows (JSON
// Lines).
func (s *shape) sniffJSON(head []byte) {
	dec := json.NewDecoder(bytes.NewReader(pyJSON(head)))
	type frame struct{ obj, wantKey bool }
	var stack []frame
	base := 0 // depth of the record's own keys, minus one
	values := 0
	if head[0] == '[' {
		s.kind, base = kindJSONArray, 1
	} else {
		s.kind = kindJSONObject
	}
	for range sniffTokens {
		tok, err := dec.Token()
		if err != nil {
			return
		}
		if len(stack) > 0 && stack[len(stack)-1].obj {
			top := &stack[len(stack)-1]
			if top.wantKey {
				if k, ok := tok.(string); ok {
					top.wantKey = false
					d := len(stack) - base
					if old, seen := s.keys[k]; d >= 1 && (!seen || d < old) {
						s.keys[k] = d
					}
					continue
				}
			} else {
				top.wantKey = true // this token starts the key's value
			}
		}
		switch tok {
		case json.Delim('{'):
			stack = append(stack, frame{obj: true, wantKey: true})
		case json.Delim('['):
			stack = append(stack, frame{})
		case json.Delim('}'), json.Delim(']'):
			stack = stack[:len(stack)-1]
		}
		if len(stack) == 0 {
			values++
			if values == 2 {
				if s.kind == kindJSONObject {
					s.kind = kindJSONLines
				}
				return
			}
			if s.kind == kindJSONArray {
				return
			}
		}
	}
}

// top reports whether the record has all the keys at its own level.
func (s *shape) top(keys ...string) bool {
	for _, k := range keys {
		if s.keys[k] != 1 {
			return false
		}
	}
	return len(keys) > 0
}

// anyTop reports whether the record has one of the keys at its own level.
func (s *shape) anyTop(keys ...string) bool {
	return slices.ContainsFunc(keys, func(k string) bool { return s.keys[k] == 1 })
}

// topPrefix reports whether a key at the record's level starts with one of
// the prefixes.
func (s *shape) topPrefix(prefixes ...string) bool {
	for k, d := range s.keys {
		if d == 1 && slices.ContainsFunc(prefixes, func(p string) bool { return strings.HasPrefix(k, p) }) {
			return true
		}
	}
	return false
}

func (s *shape) isJSON() bool {
	return s.kind == kindJSONObject || s.kind == kindJSONArray || s.kind == kindJSONLines
}

func (s *shape) objects() bool { return s.kind == kindJSONObject || s.kind == kindJSONLines }

func (s *shape) hasColumns(cols ...string) bool {
	if s.kind != kindCSV {
		return false
	}
	for _, c := range cols {
		if !slices.Contains(s.header, c) {
			return false
		}
	}
	return true
}

// keyList is up to n of the record's top-level keys, sorted.
func (s *shape) keyList(n int) string {
	var ks []string
	for k, d := range s.keys {
		if d == 1 {
			ks = append(ks, k)
		}
	}
	slices.Sort(ks)
	if len(ks) > n {
		ks = append(ks[:n], "…")
	}
	return strings.Join(ks, ", ")
}
