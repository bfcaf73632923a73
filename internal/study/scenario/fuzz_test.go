package scenario_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/headroom-sim/headroom/internal/study/scenario"
)

// examples reads every scenario under examples/, by base name.
func examples(t testing.TB) map[string]string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("..", "..", "..", "examples", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no examples under ../../../examples: %v", err)
	}
	out := map[string]string{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		out[filepath.Base(f)] = string(b)
	}
	return out
}

// normalize makes empty maps and slices nil, so that a scenario compares
// equal to its re-decoded self whatever encoding does with empty
// collections (a nil SLA map encodes as {} and decodes as an empty map).
func normalize(v reflect.Value) {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			normalize(v.Elem())
		}
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				normalize(v.Field(i))
			}
		}
	case reflect.Slice, reflect.Map:
		if v.Len() == 0 && !v.IsNil() && v.CanSet() {
			v.Set(reflect.Zero(v.Type()))
			return
		}
		if v.Kind() == reflect.Slice {
			for i := range v.Len() {
				normalize(v.Index(i))
			}
		}
	}
}

func sameScenario(a, b scenario.Scenario) bool {
	normalize(reflect.ValueOf(&a).Elem())
	normalize(reflect.ValueOf(&b).Elem())
	return reflect.DeepEqual(a, b)
}

// FuzzDecode: Decode never panics; it fails with a *DecodeError whose
// message starts with the document's name, or returns a valid scenario
// that survives Encode and Decode unchanged.
func FuzzDecode(f *testing.F) {
	for _, doc := range examples(f) {
		f.Add(doc)
		// Broken variants: truncated, a key misspelt, a number made a
		// word, tabs for spaces, JSON-ish.
		f.Add(doc[:len(doc)/2])
		f.Add(strings.Replace(doc, "workload:", "workloads:", 1))
		f.Add(strings.Replace(doc, "rate_rps: ", "rate_rps: x", 1))
		f.Add(strings.ReplaceAll(doc, "  ", "\t"))
		f.Add(strings.Replace(doc, "model:", "model: [", 1))
	}
	for _, doc := range []string{
		"", "null", "{}", "[]", "- 1", "model: x\ngpu: y\n",
		`{"model":"llama-3.1-8b","gpu":"h100-sxm","tp":"abc","replicas":2}`,
		`{"model":"llama-3.1-8b","gpu":"h100-sxm","workload":{"arrival":{"concurrency":4}}}`,
		head + "sla:\n  ttft_ms: {p42: 3}\n",
		head + "engine: &e {max_num_seqs: 4}\nreport: *e\n",
		head + "workload: {requests: 1e3, arrival: {rate_rps: .5}}\n",
		head + "workload:\n  stages: [{duration_s: 1, rate_rps: 1}, {duration_s: 2, concurrency: 3}]\n",
		head + "workload:\n  input_tokens: {type: buckets, buckets: [{weight: 1, min: 1, max: 5}]}\n",
		head + "workload:\n  rate_profile: [{at_s: 0, rate_rps: 2}, {at_s: 600, rate_rps: 0}, {at_s: 900, rate_rps: 7.5}]\n  rate_profile_end_s: 1800\n",
		head + "workload: {rate_profile: [{at_s: 0, rate_rps: 1}, {at_s: 1, rate_rps: 1e9}], arrival: {type: gamma, cv: 2}}\n",
		head + "replicas: 2\nautoscale: {min_replicas: 1, max_replicas: 4, metric: in_flight, target: 8, interval_s: 30, tolerance: 0, scale_down_stabilization_s: 0}\n",
		head + "autoscale:\n  metric: kv_cache_usage\n  target: 0.7\n  scale_up_delay_s: 0\n  cold_start: {provision_s: 120, startup_s: 0, weights_load_gbps: 2.5, torch_compile_s: 0, cuda_graph_capture_s: 3}\n",
		head + "? [a, b]\n: 1\n",
		"a: &a [*a, *a]\nb: &b [*a, *a]\n",
	} {
		f.Add(doc)
	}
	f.Fuzz(func(t *testing.T, doc string) {
		s, err := scenario.Decode(strings.NewReader(doc), "fuzz.yaml")
		if err != nil {
			var de *scenario.DecodeError
			if !errors.As(err, &de) {
				t.Fatalf("error %v (%T) is not a *DecodeError", err, err)
			}
			if !strings.HasPrefix(err.Error(), "fuzz.yaml") {
				t.Fatalf("error %q does not start with the name", err)
			}
			return
		}
		if err := s.Validate(); err != nil {
			t.Fatalf("Decode returned an invalid scenario: %v", err)
		}
		var buf bytes.Buffer
		if err := scenario.Encode(&buf, s); err != nil {
			t.Fatalf("Encode: %v", err)
		}
		again, err := scenario.Decode(bytes.NewReader(buf.Bytes()), "encoded.yaml")
		if err != nil {
			t.Fatalf("the encoding does not decode: %v\n%s", err, buf.String())
		}
		if !sameScenario(s, again) {
			t.Fatalf("the round trip changed the scenario\nbefore %+v\nafter  %+v\nencoded:\n%s", s, again, buf.String())
		}
	})
}

// FuzzOverride: ParseOverride and With never panic; With fails with a
// *DecodeError or returns a valid scenario that keeps every field the
// override did not touch (checked on model and gpu).
func FuzzOverride(f *testing.F) {
	for _, s := range []string{
		"tp=2", "engine.max_num_seqs=64", "workload.arrival={type: closed_loop, concurrency: 8}",
		"sla.ttft_ms.p99=500", "model.x=1", "engine=5", "a.b.c=[1, 2]", "=", "tp", "workload.stages=[{duration_s: 1, rate_rps: 2}]",
		"engine..block_size=16", ".=1", "workload.requests=1e9",
		"disaggregation.decode.replicas=2", "disaggregation=null", "disaggregation.kv_transfer={link: nvlink4, latency_us: 3}",
		"disaggregation.prefill.engine.max_num_seqs=8", "disaggregation.decode.engine=[1]",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		o, err := scenario.ParseOverride(in)
		if err != nil {
			return
		}
		if o.Path == "" || o.Path != strings.TrimSpace(o.Path) {
			t.Fatalf("ParseOverride(%q) path %q", in, o.Path)
		}
		s, err := scenario.With(scenario.Default(), o)
		if err != nil {
			var de *scenario.DecodeError
			if !errors.As(err, &de) {
				t.Fatalf("With error %v (%T) is not a *DecodeError", err, err)
			}
			return
		}
		if err := s.Validate(); err != nil {
			t.Fatalf("With returned an invalid scenario: %v", err)
		}
		top, _, _ := strings.Cut(o.Path, ".")
		if top != "model" && s.Model != "llama-3.1-8b" || top != "gpu" && s.GPU != "h100-sxm" {
			t.Fatalf("override %q changed model or gpu: %s %s", in, s.Model, s.GPU)
		}
	})
}
