package scenario

import (
	"bytes"
	"fmt"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Override sets one field, named by its dotted path (engine.max_num_seqs,
// workload.arrival.rate_rps), to a value.
type Override struct {
	Path  string `json:"path"`
	Value any    `json:"value"`
}

// ParseOverride reads "path=value", the value in YAML syntax.
func ParseOverride(s string) (Override, error) {
	path, val, ok := strings.Cut(s, "=")
	if !ok || strings.TrimSpace(path) == "" {
		return Override{}, fmt.Errorf("%q is not path=value", s)
	}
	var v any
	if err := yaml.Unmarshal([]byte(val), &v); err != nil {
		return Override{}, fmt.Errorf("%s: %v", path, err)
	}
	return Override{Path: strings.TrimSpace(path), Value: v}, nil
}

// With returns s with the overrides applied, decoded and validated like a
// scenario file (unknown paths are errors naming them).
func With(s Scenario, overrides ...Override) (Scenario, error) {
	var doc bytes.Buffer
	if err := Encode(&doc, s); err != nil {
		return s, err
	}
	merged, err := ApplyOverrides(doc.Bytes(), overrides...)
	if err != nil {
		return s, err
	}
	return Decode(bytes.NewReader(merged), "scenario with overrides")
}

// ApplyOverrides merges overrides into a YAML document.
func ApplyOverrides(doc []byte, overrides ...Override) ([]byte, error) {
	root := map[string]any{}
	if len(bytes.TrimSpace(doc)) > 0 {
		if err := yaml.Unmarshal(doc, &root); err != nil {
			return nil, &DecodeError{Name: "scenario", Err: fmt.Errorf("%w: %v", ErrSyntax, err)}
		}
		if root == nil {
			root = map[string]any{}
		}
	}
	for _, o := range overrides {
		keys := strings.Split(o.Path, ".")
		m := root
		for i, k := range keys[:len(keys)-1] {
			next, ok := m[k].(map[string]any)
			if !ok {
				if _, exists := m[k]; exists && m[k] != nil {
					return nil, &DecodeError{Name: "override", Field: strings.Join(keys[:i+1], "."), Err: fmt.Errorf("is not a mapping")}
				}
				next = map[string]any{}
				m[k] = next
			}
			m = next
		}
		m[keys[len(keys)-1]] = o.Value
	}
	return yaml.Marshal(root)
}
