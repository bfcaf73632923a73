package main

import (
	"flag"
	"fmt"
	"math"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/headroom-sim/headroom/internal/study/scenario"
)

// The shortcut flags of simulate and the planning commands (--tp,
// --rate-rps, --input-tokens, --concurrency …) become --set overrides of
// the scenario. A flag that is given must be valid: --tp 0 is an error,
// not the default. The load and length shortcuts keep what the scenario
// already says where they can: --input-tokens sets a fixed length's value
// or a normal or lognormal distribution's mean, --rate-rps an open-loop
// arrival's rate (a closed loop becomes Poisson arrivals), --concurrency a
// closed loop's users (open-loop arrivals become a closed loop).

// givenFlags is the set of flags given on the command line.
func givenFlags(fs *flag.FlagSet) map[string]bool {
	given := map[string]bool{}
	if fs != nil {
		fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	}
	return given
}

// checkShortcuts refuses shortcut flags given with values they cannot have.
func (f *scenarioFlags) checkShortcuts(given map[string]bool) error {
	for _, c := range []struct {
		flag string
		v    int
	}{{"tp", f.tp}, {"replicas", f.replicas}, {"requests", f.requests}, {"input-tokens", f.inputTokens}, {"output-tokens", f.outputTokens}, {"concurrency", f.concurrency}} {
		if given[c.flag] && c.v < 1 {
			return usagef("--%s: must be >= 1, got %d", c.flag, c.v)
		}
	}
	if given["rate-rps"] && !(f.rate > 0 && !math.IsInf(f.rate, 1)) {
		return usagef("--rate-rps: must be a finite number > 0, got %g", f.rate)
	}
	if given["rate-rps"] && given["concurrency"] {
		return usagef("--concurrency: give --rate-rps (open-loop arrivals) or --concurrency (a closed loop of users), not both")
	}
	return nil
}

// docWorkload is the part of a scenario document the shortcuts look at.
type docWorkload struct {
	Workload struct {
		Arrival *struct {
			Type string `yaml:"type"`
		} `yaml:"arrival"`
		Stages       []any          `yaml:"stages"`
		Trace        any            `yaml:"trace"`
		InputTokens  map[string]any `yaml:"input_tokens"`
		OutputTokens map[string]any `yaml:"output_tokens"`
	} `yaml:"workload"`
}

// shortcutSets turns the load and length shortcut flags into overrides
// of doc, and seeds a length distribution the user's --set edits field
// by field (workload.input_tokens.value=2048) with the default one it
// replaces, so its type is kept.
func (f *scenarioFlags) shortcutSets(doc []byte, given map[string]bool) ([]string, error) {
	var d docWorkload
	if err := yaml.Unmarshal(doc, &d); err != nil {
		return nil, nil // the decoder reports a broken document
	}
	w := &d.Workload
	trace := w.Trace != nil
	// The paths the --set overrides name.
	setPaths := make([]string, len(f.sets))
	for i, s := range f.sets {
		p, _, _ := strings.Cut(s, "=")
		setPaths[i] = strings.TrimSpace(p)
	}
	for _, c := range []struct{ flag, path string }{
		{"input-tokens", "workload.input_tokens"}, {"output-tokens", "workload.output_tokens"},
		{"rate-rps", "workload.arrival"}, {"concurrency", "workload.arrival"},
	} {
		for _, p := range setPaths {
			if given[c.flag] && (p == c.path || strings.HasPrefix(p, c.path+".")) {
				return nil, usagef("--%s: --set %s also sets it; give one of the two", c.flag, p)
			}
		}
	}
	def := scenario.Default().Workload
	var sets []string
	lengths := []struct {
		flag, key string
		v         int
		cur       map[string]any
		def       any
	}{
		{"input-tokens", "input_tokens", f.inputTokens, w.InputTokens, def.InputTokens},
		{"output-tokens", "output_tokens", f.outputTokens, w.OutputTokens, def.OutputTokens},
	}
	for _, l := range lengths {
		path := "workload." + l.key
		edited := slices.ContainsFunc(setPaths, func(p string) bool { return strings.HasPrefix(p, path+".") })
		if !given[l.flag] && !edited {
			continue
		}
		if trace {
			if given[l.flag] {
				return nil, usagef("--%s: the scenario replays a trace (workload.trace), which gives every request's length", l.flag)
			}
			continue
		}
		typ := ""
		if l.cur != nil {
			typ, _ = l.cur["type"].(string)
		} else {
			seed, err := yaml.Marshal(l.def)
			if err != nil {
				return nil, err
			}
			sets = append(sets, path+"="+flowYAML(seed))
			typ = "fixed"
		}
		if !given[l.flag] {
			continue
		}
		switch typ {
		case "fixed", "":
			sets = append(sets, fmt.Sprintf("%s.type=fixed", path), fmt.Sprintf("%s.value=%d", path, l.v))
		case "normal", "lognormal":
			sets = append(sets, fmt.Sprintf("%s.mean=%d", path, l.v))
		default:
			return nil, usagef("--%s: %s has type %s, which has no single length; set its fields with --set %s.<field>=…", l.flag, path, typ, path)
		}
	}
	if given["rate-rps"] || given["concurrency"] {
		flagName := "rate-rps"
		if given["concurrency"] {
			flagName = "concurrency"
		}
		switch {
		case trace:
			return nil, usagef("--%s: the scenario replays a trace (workload.trace), which gives the arrivals; scale them with --set workload.trace.speedup=…", flagName)
		case len(w.Stages) > 0:
			return nil, usagef("--%s: the scenario's load is a staircase (workload.stages); change its steps with --set workload.stages=…", flagName)
		}
		closed := w.Arrival != nil && w.Arrival.Type == "closed_loop"
		switch {
		case given["rate-rps"] && closed:
			sets = append(sets, fmt.Sprintf("workload.arrival={type: poisson, rate_rps: %v}", f.rate))
		case given["rate-rps"]:
			sets = append(sets, fmt.Sprintf("workload.arrival.rate_rps=%v", f.rate))
		case closed:
			sets = append(sets, fmt.Sprintf("workload.arrival.concurrency=%d", f.concurrency))
		default:
			sets = append(sets, fmt.Sprintf("workload.arrival={type: closed_loop, concurrency: %d}", f.concurrency))
		}
	}
	return sets, nil
}

// flowYAML writes a YAML mapping on one line ({type: fixed, value: 512}).
func flowYAML(block []byte) string {
	var m map[string]any
	if err := yaml.Unmarshal(block, &m); err != nil {
		return strings.TrimSpace(string(block))
	}
	var n yaml.Node
	if err := n.Encode(m); err != nil {
		return strings.TrimSpace(string(block))
	}
	n.Style = yaml.FlowStyle
	out, err := yaml.Marshal(&n)
	if err != nil {
		return strings.TrimSpace(string(block))
	}
	return strings.TrimSpace(string(out))
}
