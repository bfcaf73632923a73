package scenario_test

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/headroom-sim/headroom/internal/study/scenario"
	"github.com/headroom-sim/headroom/sim"
	"github.com/headroom-sim/headroom/sim/workload"
)

// TestWithNoOverrides: encoding a scenario and decoding it back changes
// nothing.
func TestWithNoOverrides(t *testing.T) {
	got, err := scenario.With(scenario.Default())
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, scenario.Default()) {
		t.Errorf("With(Default()) =\n%+v\nwant\n%+v", got, scenario.Default())
	}
	for name, doc := range examples(t) {
		t.Run(name, func(t *testing.T) {
			s, err := scenario.Decode(strings.NewReader(doc), name)
			if err != nil {
				t.Fatal(err)
			}
			got, err := scenario.With(s)
			if err != nil {
				t.Fatal(err)
			}
			if !sameScenario(got, s) {
				t.Errorf("With(s) =\n%+v\nwant\n%+v", got, s)
			}
		})
	}
}

func mustParse(t *testing.T, s string) scenario.Override {
	t.Helper()
	o, err := scenario.ParseOverride(s)
	if err != nil {
		t.Fatal(err)
	}
	return o
}

func TestWithOverrides(t *testing.T) {
	for _, c := range []struct {
		name      string
		overrides []string
		want      scenario.Scenario
	}{
		{"an engine setting", []string{"engine.max_num_seqs=64"},
			defaultWith(func(s *scenario.Scenario) { s.Engine.MaxNumSeqs = 64 })},
		{"a nested workload setting", []string{"workload.arrival.rate_rps=20"},
			defaultWith(func(s *scenario.Scenario) { s.Workload.Arrival.RateRPS = 20 })},
		{"top-level settings", []string{"tp=2", "router=least_kv", "replicas=4"},
			defaultWith(func(s *scenario.Scenario) { s.TP, s.Router, s.Replicas = 2, sim.RouterLeastKV, 4 })},
		{"the last override of a path wins", []string{"tp=2", "tp=4"},
			defaultWith(func(s *scenario.Scenario) { s.TP = 4 })},
		{"a new path creates its sections", []string{"sla.ttft_ms.p99=500"},
			defaultWith(func(s *scenario.Scenario) { s.SLA = &sim.SLA{TTFTMS: map[string]float64{"p99": 500}} })},
		{"a new optional section from two paths", []string{"workload.shared_prefix.groups=4", "workload.shared_prefix.prefix_tokens=100"},
			defaultWith(func(s *scenario.Scenario) {
				s.Workload.SharedPrefix = &workload.SharedPrefixSpec{Groups: 4, PrefixTokens: 100}
			})},
		{"a whole section in YAML", []string{"workload.arrival={type: closed_loop, concurrency: 8}"},
			defaultWith(func(s *scenario.Scenario) {
				s.Workload.Arrival = workload.ArrivalSpec{Type: workload.ArrivalClosedLoop, Concurrency: 8}
			})},
		{"a boolean", []string{"engine.enable_prefix_caching=false"},
			defaultWith(func(s *scenario.Scenario) { s.Engine.EnablePrefixCaching = false })},
		{"a float", []string{"engine.gpu_memory_utilization=0.85"},
			defaultWith(func(s *scenario.Scenario) { s.Engine.GPUMemoryUtilization = 0.85 })},
		{"spaces around the path", []string{" engine.block_size =32"},
			defaultWith(func(s *scenario.Scenario) { s.Engine.BlockSize = 32 })},
	} {
		t.Run(c.name, func(t *testing.T) {
			var ovs []scenario.Override
			for _, o := range c.overrides {
				ovs = append(ovs, mustParse(t, o))
			}
			got, err := scenario.With(scenario.Default(), ovs...)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, c.want) {
				t.Errorf("With =\n%+v\nwant\n%+v", got, c.want)
			}
		})
	}
}

func TestWithOverrideErrors(t *testing.T) {
	for _, c := range []struct {
		name     string
		override scenario.Override
		field    string
		inMsg    string
	}{
		{"unknown path", scenario.Override{Path: "engine.max_num_seqz", Value: 3}, "engine.max_num_seqz", "unknown key"},
		{"unknown top-level path", scenario.Override{Path: "gpus", Value: "h100"}, "gpus", "unknown key"},
		{"unknown nested new path", scenario.Override{Path: "workload.multi_turn.rounds", Value: 3}, "workload.multi_turn.rounds", "unknown key"},
		{"a path through a string", scenario.Override{Path: "model.size", Value: 3}, "model", "is not a mapping"},
		{"a path through a number", scenario.Override{Path: "engine.max_num_seqs.min", Value: 3}, "engine.max_num_seqs", "is not a mapping"},
		{"a path through a boolean", scenario.Override{Path: "engine.enable_prefix_caching.x", Value: true}, "engine.enable_prefix_caching", "is not a mapping"},
		{"a value of the wrong type", scenario.Override{Path: "tp", Value: "two"}, "tp", "is not an integer"},
		{"an invalid value", scenario.Override{Path: "tp", Value: 0}, "tp", "not in [1, 1024]"},
		{"a section replaced by a scalar", scenario.Override{Path: "engine", Value: 5}, "engine", "must be a mapping"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := scenario.With(scenario.Default(), c.override)
			var de *scenario.DecodeError
			if !errors.As(err, &de) {
				t.Fatalf("With error %v (%T) is not a *DecodeError", err, err)
			}
			if de.Field != c.field || !strings.Contains(err.Error(), c.inMsg) {
				t.Errorf("error %q (field %q): want field %q and %q", err, de.Field, c.field, c.inMsg)
			}
		})
	}
}

func TestParseOverride(t *testing.T) {
	for _, c := range []struct {
		in   string
		want scenario.Override
	}{
		{"tp=2", scenario.Override{Path: "tp", Value: 2}},
		{"engine.gpu_memory_utilization=0.5", scenario.Override{Path: "engine.gpu_memory_utilization", Value: 0.5}},
		{"engine.enable_prefix_caching=false", scenario.Override{Path: "engine.enable_prefix_caching", Value: false}},
		{"model=meta-llama/Llama-3.1-8B", scenario.Override{Path: "model", Value: "meta-llama/Llama-3.1-8B"}},
		{"a.b=x=y", scenario.Override{Path: "a.b", Value: "x=y"}},
		{"model=", scenario.Override{Path: "model", Value: nil}},
		{"workload.stages=[{duration_s: 1, rate_rps: 2}]", scenario.Override{Path: "workload.stages", Value: []any{map[string]any{"duration_s": 1, "rate_rps": 2}}}},
	} {
		t.Run(c.in, func(t *testing.T) {
			got, err := scenario.ParseOverride(c.in)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, c.want) {
				t.Errorf("ParseOverride = %#v, want %#v", got, c.want)
			}
		})
	}
	for _, bad := range []string{"tp", "=3", " =3", "tp=[", "x={a: 1"} {
		t.Run("bad "+bad, func(t *testing.T) {
			if o, err := scenario.ParseOverride(bad); err == nil {
				t.Errorf("ParseOverride(%q) = %+v, want an error", bad, o)
			}
		})
	}
}

func TestApplyOverridesDocuments(t *testing.T) {
	t.Run("an empty document", func(t *testing.T) {
		got, err := scenario.ApplyOverrides(nil, scenario.Override{Path: "engine.block_size", Value: 32})
		if err != nil || string(got) != "engine:\n    block_size: 32\n" {
			t.Errorf("ApplyOverrides = %q, %v", got, err)
		}
	})
	t.Run("a null document", func(t *testing.T) {
		got, err := scenario.ApplyOverrides([]byte("null\n"), scenario.Override{Path: "tp", Value: 2})
		if err != nil || string(got) != "tp: 2\n" {
			t.Errorf("ApplyOverrides = %q, %v", got, err)
		}
	})
	t.Run("a malformed document", func(t *testing.T) {
		_, err := scenario.ApplyOverrides([]byte("model: [\n"), scenario.Override{Path: "tp", Value: 2})
		var de *scenario.DecodeError
		if !errors.As(err, &de) || !errors.Is(err, scenario.ErrSyntax) {
			t.Errorf("ApplyOverrides error %v, want a *DecodeError wrapping ErrSyntax", err)
		}
	})
	t.Run("other keys are kept", func(t *testing.T) {
		got, err := scenario.ApplyOverrides([]byte("model: x\nengine:\n  block_size: 16\n  max_num_seqs: 8\n"), scenario.Override{Path: "engine.block_size", Value: 32})
		if err != nil || string(got) != "engine:\n    block_size: 32\n    max_num_seqs: 8\nmodel: x\n" {
			t.Errorf("ApplyOverrides = %q, %v", got, err)
		}
	})
}
