package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// docKeys reads the keys of the table under heading in a document: the
// backticked names of its first column, with a.{b, c} expanded to a.b and
// a.c, list marks ([]) dropped and a final .* standing for everything
// below its prefix.
func docKeys(t *testing.T, file, heading string) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot, file))
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	i := strings.Index(s, "\n"+heading+"\n")
	if i < 0 {
		t.Fatalf("%s has no heading %q", file, heading)
	}
	var keys []string
	inTable := false
	for _, line := range strings.Split(s[i+len(heading)+2:], "\n") {
		if strings.HasPrefix(line, "#") {
			break
		}
		if !strings.HasPrefix(line, "|") {
			if inTable {
				break
			}
			continue
		}
		inTable = true
		cell := strings.SplitN(line, " | ", 2)[0]
		for _, m := range codeSpanRE.FindAllStringSubmatch(cell, -1) {
			keys = append(keys, expandKey(m[1])...)
		}
	}
	if len(keys) < 10 {
		t.Fatalf("%s, %s: only %d keys in its table", file, heading, len(keys))
	}
	return keys
}

var codeSpanRE = regexp.MustCompile("`([^`]+)`")

// expandKey expands the braces of a documented key.
func expandKey(k string) []string {
	k = strings.ReplaceAll(k, "[]", "")
	k = strings.TrimSuffix(k, ".*")
	i := strings.Index(k, "{")
	if i < 0 {
		return []string{k}
	}
	depth, j := 0, i
	for ; j < len(k); j++ {
		if k[j] == '{' {
			depth++
		}
		if k[j] == '}' {
			if depth--; depth == 0 {
				break
			}
		}
	}
	var out []string
	for _, alt := range splitValues(k[i+1 : j]) {
		alt = strings.TrimSpace(alt)
		if alt == "…" {
			continue
		}
		for _, rest := range expandKey(alt + k[j+1:]) {
			out = append(out, k[:i]+rest)
		}
	}
	return out
}

// jsonPaths collects every object and leaf path of a JSON document, list
// elements under their list's path.
func jsonPaths(v any, prefix string, objects, leaves map[string]bool) {
	switch x := v.(type) {
	case map[string]any:
		if prefix != "" {
			objects[prefix] = true
		}
		for k, e := range x {
			p := k
			if prefix != "" {
				p = prefix + "." + k
			}
			jsonPaths(e, p, objects, leaves)
		}
	case []any:
		objects[prefix] = true
		for _, e := range x {
			jsonPaths(e, prefix, objects, leaves)
		}
	default:
		leaves[prefix] = true
	}
}

// checkDocKeys: every documented key is in some output, and every output
// key is documented (itself or a prefix of it).
func checkDocKeys(t *testing.T, where string, doc []string, outputs []string) {
	t.Helper()
	objects, leaves := map[string]bool{}, map[string]bool{}
	for _, o := range outputs {
		var v any
		if err := json.Unmarshal([]byte(o), &v); err != nil {
			t.Fatalf("%s: output is not JSON: %v", where, err)
		}
		jsonPaths(v, "", objects, leaves)
	}
	documented := map[string]bool{}
	for _, k := range doc {
		documented[k] = true
		if !objects[k] && !leaves[k] {
			t.Errorf("%s documents %s, which none of the outputs has", where, k)
		}
	}
	var undocumented []string
	for p := range leaves {
		ok := false
		for q := p; q != ""; {
			if documented[q] {
				ok = true
				break
			}
			i := strings.LastIndex(q, ".")
			if i < 0 {
				break
			}
			q = q[:i]
		}
		if !ok {
			undocumented = append(undocumented, p)
		}
	}
	sort.Strings(undocumented)
	if len(undocumented) > 0 {
		t.Errorf("%s does not document these keys of the output: %s", where, strings.Join(undocumented, ", "))
	}
}

// TestReportDocListsEveryKey: the report table of docs/scenario.md names
// exactly the keys of the reports of the example scenarios (which cover
// SLAs, stages, time series, autoscaling, speculative decoding and
// disaggregation). They run at full length (shortened, the autoscaler
// makes no decision), so -short skips it.
func TestReportDocListsEveryKey(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the example scenarios take about 10 s at full length")
	}
	files, err := filepath.Glob(filepath.Join(repoRoot, "examples", "*.yaml"))
	if err != nil || len(files) < 10 {
		t.Fatalf("examples: %v, %d files", err, len(files))
	}
	var outs []string
	for _, f := range files {
		code, out, stderr := runCLI(t, "simulate", "--scenario", f, "--output", "json")
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", f, code, stderr)
		}
		outs = append(outs, out)
	}
	checkDocKeys(t, "docs/scenario.md (The report)", docKeys(t, "docs/scenario.md", "## The report"), outs)
}

// TestCapacityDocListsEveryKey: the capacity JSON table of
// docs/memory-model.md names exactly the keys `headroom capacity --output
// json` writes, for a model that fits and one that does not.
func TestCapacityDocListsEveryKey(t *testing.T) {
	var outs []string
	for _, args := range [][]string{
		{"--model", "llama-3.1-70b", "--gpu", "h100-sxm", "--tp", "4", "--prompt-tokens", "2048", "--output-tokens", "512"},
		{"--model", "llama-3.1-70b", "--gpu", "h100-sxm"},
	} {
		_, out, _ := runCLI(t, append(append([]string{"capacity"}, args...), "--output", "json")...)
		outs = append(outs, out)
	}
	checkDocKeys(t, "docs/memory-model.md (capacity JSON)", docKeys(t, "docs/memory-model.md", "JSON output (`--output json`), a public contract:"), outs)
}
