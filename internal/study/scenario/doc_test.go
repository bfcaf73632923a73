package scenario

import (
	"os"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
)

// schemaDoc is the in-repo contract of the scenario schema.
const schemaDoc = "../../../docs/scenario.md"

// schemaBlock is the first yaml block of docs/scenario.md: the schema.
func schemaBlock(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(schemaDoc)
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	i := strings.Index(s, "\n```yaml\n")
	if i < 0 {
		t.Fatalf("%s has no yaml block", schemaDoc)
	}
	s = s[i+len("\n```yaml\n"):]
	j := strings.Index(s, "\n```")
	if j < 0 {
		t.Fatalf("%s: the yaml block does not end", schemaDoc)
	}
	return s[:j+1]
}

// schemaPaths lists every key path of the scenario schema: struct fields by
// their yaml names, the elements of lists under their list's path; maps (a
// bound per quantile) and scalars end a path.
func schemaPaths(t reflect.Type, prefix string, out map[string]bool) {
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct || t == reflect.TypeFor[time.Duration]() {
		return
	}
	for name, ft := range yamlFields(t) {
		p := join(prefix, name)
		out[p] = true
		schemaPaths(ft, p, out)
	}
}

var listIndexRE = regexp.MustCompile(`\[\d+\]`)

// TestScenarioDocIsTheSchema: the schema block of docs/scenario.md is the
// scenario decoder's schema. Every key it shows is one the decoder
// accepts, with a value of the key's kind (checkKeys, as Decode runs it);
// every key the decoder accepts is shown, as a key or, for the
// alternatives of a union (the length distributions, the arrival types),
// named in the block's comments; a disaggregated pool's engine keys are
// the scenario's engine keys.
func TestScenarioDocIsTheSchema(t *testing.T) {
	block := schemaBlock(t)
	var root yaml.Node
	if err := yaml.Unmarshal([]byte(block), &root); err != nil {
		t.Fatalf("%s: the schema block is not YAML: %v", schemaDoc, err)
	}
	lines, shown := map[int]string{}, map[string]int{}
	if err := checkKeys(root.Content[0], reflect.TypeFor[Scenario](), "", lines, shown); err != nil {
		t.Fatalf("%s: the schema block shows a key or value the decoder refuses: %v", schemaDoc, err)
	}
	shownPaths := map[string]bool{}
	for p := range shown {
		shownPaths[listIndexRE.ReplaceAllString(p, "")] = true
	}
	known := map[string]bool{}
	schemaPaths(reflect.TypeFor[Scenario](), "", known)
	var comments strings.Builder
	for _, l := range strings.Split(block, "\n") {
		if _, c, ok := strings.Cut(l, "#"); ok {
			comments.WriteString(c + "\n")
		}
	}
	word := func(name string) bool {
		return regexp.MustCompile(`(^|[^a-z_])` + regexp.QuoteMeta(name) + `([^a-z_]|$)`).MatchString(comments.String())
	}
	var missing []string
	for p := range known {
		if shownPaths[p] {
			continue
		}
		// A pool's engine takes the scenario's engine keys (the block says so).
		if _, rest, ok := strings.Cut(p, ".engine."); ok && strings.HasPrefix(p, "disaggregation.") && shownPaths["engine."+rest] {
			continue
		}
		leaf := p[strings.LastIndex(p, ".")+1:]
		if !word(leaf) {
			missing = append(missing, p)
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Errorf("%s does not show these keys of the scenario schema (add them to the schema block, as keys or in its comments): %s", schemaDoc, strings.Join(missing, ", "))
	}
	if len(shownPaths) < 100 {
		t.Errorf("the schema block shows %d keys: is it the whole schema?", len(shownPaths))
	}
}
