package measured

import (
	"regexp"
	"strings"
)

// Benchmark tools record the model as the server was asked for it: a
// Hugging Face id ("openai/gpt-oss-120b"), a local path the server loaded
// ("/models/meta-llama/Llama-3.1-8B-Instruct", or a Hugging Face cache
// snapshot, "/models/models--openai--gpt-oss-120b/snapshots/<hash>/"), or
// the name the server was started with (--served-model-name). Import
// rewrites a cache snapshot path to the id it caches (the path says it
// exactly); ModelCandidates lists the names a catalog lookup may try for
// the others.

// reHFCache matches a Hugging Face hub cache folder of a model:
// models--<org>--<name>, optionally followed by snapshots/<revision>.
var reHFCache = regexp.MustCompile(`(?:^|/)models--([^/]+)(?:/snapshots/[^/]*)?/?$`)

// hfCacheID is the Hugging Face id a cache path holds ("" when it is not one).
func hfCacheID(p string) string {
	m := reHFCache.FindStringSubmatch(strings.ReplaceAll(strings.TrimSpace(p), `\`, "/"))
	if m == nil {
		return ""
	}
	org, name, ok := strings.Cut(m[1], "--")
	if !ok || org == "" || name == "" {
		return ""
	}
	return org + "/" + name
}

// normaliseModel rewrites a run's model id recorded as a Hugging Face cache
// path, with a note.
func (r *Run) normaliseModel() {
	if id := hfCacheID(r.Model); id != "" && id != r.Model {
		r.note("model recorded as the cache path %s: read as %s", r.Model, id)
		r.Model = id
	}
}

// ModelCandidates are the names to look a recorded model id up by, most
// specific first: the id itself; the id a Hugging Face cache path holds;
// for a path, its last two components (an org/name folder layout) and its
// last component; and each of these
// without a trailing quantisation or format suffix the catalog does not
// distinguish ("-hf"). Empty for an empty id.
func ModelCandidates(id string) []string {
	id = strings.TrimSpace(strings.ReplaceAll(id, `\`, "/"))
	if id == "" {
		return nil
	}
	var out []string
	add := func(s string) {
		s = strings.Trim(s, "/")
		if s == "" {
			return
		}
		for _, o := range out {
			if strings.EqualFold(o, s) {
				return
			}
		}
		out = append(out, s)
	}
	add(id)
	base := id
	if c := hfCacheID(id); c != "" {
		add(c)
		base = c // the path's other components are the cache's, not names
	}
	parts := strings.Split(strings.Trim(base, "/"), "/")
	if n := len(parts); n > 2 {
		add(parts[n-2] + "/" + parts[n-1])
	}
	if n := len(parts); n > 1 {
		add(parts[n-1])
	}
	for _, c := range append([]string(nil), out...) {
		if s, ok := strings.CutSuffix(strings.ToLower(c), "-hf"); ok {
			add(c[:len(s)])
		}
	}
	return out
}
