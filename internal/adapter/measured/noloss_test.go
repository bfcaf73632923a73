package measured

import (
	"bytes"
	"encoding/json"
	"io/fs"
	"os"
	"slices"
	"strings"
	"testing"
	"testing/fstest"
)

// TestNoSilentLoss holds every reader to listing what it does not read:
// each fixture gets a key (a column, for CSV; a metric row, for the
// AIPerf/GenAI-Perf summary CSV) that no tool writes, and the run read
// from it must list that key in Run.Ignored.
func TestNoSilentLoss(t *testing.T) {
	const key = "zz_not_a_known_key"
	for _, c := range fixtureCases {
		t.Run(c.golden, func(t *testing.T) {
			data, want := withUnknownKey(t, readCase(t, c), c.format, key)
			run, err := Import(bytes.NewReader(data), c.path, c.format)
			if err != nil {
				t.Fatalf("with %s: %v", key, err)
			}
			if !slices.ContainsFunc(run.Ignored, func(k string) bool { return strings.HasSuffix(k, want) }) {
				t.Errorf("ignored %q lacks %q", run.Ignored, want)
			}
		})
	}
}

// withUnknownKey adds key to every record of a fixture: a top-level key of
// each JSON object (each line of JSON Lines, each element of an array), a
// column of a CSV. It returns the file and the name Ignored must end with.
func withUnknownKey(t *testing.T, b []byte, format, key string) ([]byte, string) {
	t.Helper()
	b = bytes.TrimSpace(trimBOM(b))
	add := func(obj []byte) []byte {
		var m map[string]json.RawMessage
		if err := json.Unmarshal(pyJSON(obj), &m); err != nil {
			t.Fatalf("not an object: %v", err)
		}
		m[key] = json.RawMessage(`{"value": 1}`)
		out, _ := json.Marshal(m)
		return out
	}
	switch {
	case format == "aiperf-summary-csv":
		return append([]byte("Metric,avg\n"+strings.ReplaceAll(key, "_", " ")+" (ms),1\n\n"), b...), "row " + strings.ReplaceAll(key, "_", " ") + " (ms)"
	case b[0] == '[':
		var list []json.RawMessage
		if err := json.Unmarshal(pyJSON(b), &list); err != nil {
			t.Fatal(err)
		}
		for i := range list {
			list[i] = add(list[i])
		}
		out, _ := json.Marshal(list)
		return out, key
	case b[0] == '{':
		dec := json.NewDecoder(bytes.NewReader(pyJSON(b)))
		var out [][]byte
		for dec.More() {
			var raw json.RawMessage
			if err := dec.Decode(&raw); err != nil {
				t.Fatal(err)
			}
			out = append(out, add(raw))
		}
		return bytes.Join(out, []byte("\n")), key
	}
	lines := strings.Split(string(b), "\n")
	for i := range lines {
		if strings.TrimSpace(lines[i]) == "" {
			continue
		}
		if i == 0 {
			lines[i] += "," + key
		} else {
			lines[i] += ",1"
		}
	}
	return []byte(strings.Join(lines, "\n") + "\n"), "column " + key
}

// TestNoSilentLossFolders: every kind of run folder lists the files in it
// that its reader did not read.
func TestNoSilentLossFolders(t *testing.T) {
	for _, c := range []struct{ root, dir string }{
		{projectData + "/llmservingsim", "RTX4090/Llama-3.1-8B"},
		{projectData + "/inference-perf", "vllm+v0_engine"},
		{projectData + "/inference-perf", "vllm+v0_engine/results"},
		{"testdata/blis-trace", "run"},
		{"testdata", "llmperf"},
		{"testdata/vllm-sweep", "SERVE--max_num_seqs-32-BENCH--max_concurrency-8"},
	} {
		t.Run(c.dir, func(t *testing.T) {
			fsys := fstest.MapFS{}
			err := fs.WalkDir(os.DirFS(c.root), ".", func(p string, d fs.DirEntry, err error) error {
				if err != nil || d.IsDir() {
					return err
				}
				b, err := fs.ReadFile(os.DirFS(c.root), p)
				fsys[p] = &fstest.MapFile{Data: b}
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
			fsys[c.dir+"/zz_unknown.txt"] = &fstest.MapFile{Data: []byte("?")}
			run, err := LoadDir(fsys, c.dir)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Contains(run.Ignored, "file zz_unknown.txt") {
				t.Errorf("ignored %q lacks the unknown file", run.Ignored)
			}
		})
	}
}
