package uncertainty

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/headroom-sim/headroom/catalogs"
)

// Model is a fitted error model: for each headline metric, the quantiles
// of the signed log error log(predicted / measured) of the validation
// runs, pooled by regime.
type Model struct {
	Version int `json:"version"`
	// Source says what the model was fitted on and how to refit it;
	// Checked how it was checked.
	Source  string `json:"source"`
	Checked string `json:"checked"`
	// MinRuns and MinGroups are what a pool needs to stand on its own:
	// at least MinRuns residuals from MinGroups groups (model@GPU of a
	// family). A regime with less falls back to a coarser pool.
	MinRuns   int `json:"min_runs"`
	MinGroups int `json:"min_groups"`
	// WidenPerOutside is what each feature outside the envelope adds to
	// the ratio the bands' spread is multiplied by (1 + WidenPerOutside
	// per feature).
	WidenPerOutside float64 `json:"widen_per_outside"`
	// Envelope is what the fitted runs covered.
	Envelope Envelope `json:"envelope"`
	// Pools are the pools that stand on their own, most specific first
	// for each metric.
	Pools []Pool `json:"pools"`

	byKey map[string]*Pool
}

// Envelope is what the validation runs covered: each regime feature's
// values, the GPUs, and the longest mean prompt and output.
type Envelope struct {
	Values          map[string][]string `json:"values"`
	GPUs            []string            `json:"gpus"`
	MaxPromptTokens float64             `json:"max_prompt_tokens"`
	MaxOutputTokens float64             `json:"max_output_tokens"`
}

// Pool is the residuals of one metric (or one metric's statistics
// pooled: "ttft_ms.*") in the runs whose regime has the Where values.
type Pool struct {
	Metric string            `json:"metric"`
	Where  map[string]string `json:"where,omitempty"`
	Runs   int               `json:"runs"`
	Groups int               `json:"groups"`
	// Quantiles are the log error's quantiles at Levels, each group of
	// runs weighing the same.
	Quantiles []float64 `json:"quantiles"`
}

// Levels are the probabilities of a pool's quantiles: the 95% and 80%
// central bands and the median.
var Levels = []float64{0.025, 0.10, 0.50, 0.90, 0.975}

// Name is the pool as reports show it: "ttft_ms.mean | loop=closed, load=light".
func (p *Pool) Name() string {
	if len(p.Where) == 0 {
		return p.Metric + " | every regime"
	}
	var parts []string
	for _, f := range Features {
		if v, ok := p.Where[f]; ok {
			parts = append(parts, f+"="+v)
		}
	}
	return p.Metric + " | " + strings.Join(parts, ", ")
}

// poolKey is the index key of a metric and its feature values.
func poolKey(metric string, where map[string]string) string {
	var b strings.Builder
	b.WriteString(metric)
	for _, f := range Features {
		if v, ok := where[f]; ok {
			b.WriteString("|" + f + "=" + v)
		}
	}
	return b.String()
}

// Parse reads a model (catalogs.ErrorModel's bytes) and checks it.
func Parse(b []byte) (*Model, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var m Model
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("error model: %w", err)
	}
	if m.Version != 1 {
		return nil, fmt.Errorf("error model: version %d, want 1", m.Version)
	}
	if m.MinRuns < 1 || m.MinGroups < 1 || !(m.WidenPerOutside >= 0) {
		return nil, fmt.Errorf("error model: min_runs %d, min_groups %d, widen_per_outside %v: want at least 1, 1 and 0", m.MinRuns, m.MinGroups, m.WidenPerOutside)
	}
	for i := range m.Pools {
		p := &m.Pools[i]
		if len(p.Quantiles) != len(Levels) || !sort.Float64sAreSorted(p.Quantiles) {
			return nil, fmt.Errorf("error model: pools[%d] (%s): quantiles %v are not %d values in order", i, p.Name(), p.Quantiles, len(Levels))
		}
		for f := range p.Where {
			if !slices.Contains(Features, f) {
				return nil, fmt.Errorf("error model: pools[%d].where: no feature %q (want one of %s)", i, f, strings.Join(Features, ", "))
			}
		}
		if p.Runs < 1 || p.Groups < 1 || p.Metric == "" {
			return nil, fmt.Errorf("error model: pools[%d]: metric %q, %d runs in %d groups: want a metric and at least one run and group", i, p.Metric, p.Runs, p.Groups)
		}
	}
	m.index()
	return &m, nil
}

func (m *Model) index() {
	m.byKey = make(map[string]*Pool, len(m.Pools))
	for i := range m.Pools {
		p := &m.Pools[i]
		m.byKey[poolKey(p.Metric, p.Where)] = p
	}
}

// Marshal writes the model as its file holds it.
func (m *Model) Marshal() ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", " ")
	if err := enc.Encode(m); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// Builtin is the shipped model (catalogs.ErrorModel), parsed once.
var Builtin = sync.OnceValues(func() (*Model, error) { return Parse(catalogs.ErrorModel()) })

// chain is the pools a metric's figure in regime r is looked up in, most
// specific first: the metric with every feature, then with one feature
// fewer at a time (the least telling first), then the metric's
// statistics pooled, with the loop and load, with the loop, alone (and,
// for ITL, TPOT's chain after its own).
func chain(metric string, r Regime) []struct {
	metric string
	where  map[string]string
} {
	type link = struct {
		metric string
		where  map[string]string
	}
	var out []link
	prefix := func(k int) map[string]string {
		w := map[string]string{}
		for _, f := range Features[:k] {
			w[f] = r.Value(f)
		}
		return w
	}
	for k := len(Features); k >= 0; k-- {
		out = append(out, link{metric, prefix(k)})
	}
	base, q, _ := strings.Cut(metric, ".")
	if base != "throughput" {
		for k := 2; k >= 0; k-- {
			out = append(out, link{base + ".*", prefix(k)})
		}
	}
	if base == "itl_ms" {
		// Few runs measured ITL apart from TPOT; a request's ITLs
		// average to its TPOT, and the step time that makes both is one
		// model: TPOT's errors stand in (the pool's name says so).
		out = append(out, chain("tpot_ms."+q, r)...)
	}
	return out
}

// Lookup is the most specific pool that stands on its own for metric
// ("ttft_ms.p99") in regime r, skipping the pools that split on a feature
// in skip (those outside the envelope); nil when there is none.
func (m *Model) Lookup(metric string, r Regime, skip map[string]bool) *Pool {
	if m.byKey == nil {
		m.index()
	}
next:
	for _, l := range chain(metric, r) {
		for f := range l.where {
			if skip[f] {
				continue next
			}
		}
		if p := m.byKey[poolKey(l.metric, l.where)]; p != nil {
			return p
		}
	}
	return nil
}
