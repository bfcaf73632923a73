package measured

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
)

// SpecDecodeCounts are vLLM's speculative decoding counters
// (vllm/v1/spec_decode/metrics.py, exported by the V1 Prometheus logger):
// proposals verified, the drafts in them, those accepted, and those
// accepted at each draft position, summed over the scrape's engines.
type SpecDecodeCounts struct {
	Drafts, DraftTokens, AcceptedTokens float64
	// AcceptedPerPosition[i] counts proposals whose draft i+1 was accepted.
	AcceptedPerPosition []float64
}

// Spec decode metric names as vLLM's /metrics writes them (counters get
// the _total suffix in the exposition).
const (
	metricSpecDrafts      = "vllm:spec_decode_num_drafts"
	metricSpecDraftTokens = "vllm:spec_decode_num_draft_tokens"
	metricSpecAccepted    = "vllm:spec_decode_num_accepted_tokens"
	metricSpecPerPos      = "vllm:spec_decode_num_accepted_tokens_per_pos"
)

// MaxSpecPositions bounds the positions a scrape may give.
const MaxSpecPositions = 64

// ReadSpecDecodeCounts reads the spec_decode counters from a Prometheus
// text exposition of vLLM's /metrics (other metrics are skipped). A
// scrape without them is an error that says so.
func ReadSpecDecodeCounts(r io.Reader, name string) (*SpecDecodeCounts, error) {
	c := &SpecDecodeCounts{}
	found := false
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	line := 0
	for sc.Scan() {
		line++
		text := strings.TrimSpace(sc.Text())
		if text == "" || text[0] == '#' {
			continue
		}
		metric, labels, value, err := parseSample(text)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %v", name, line, err)
		}
		metric = strings.TrimSuffix(metric, "_total")
		switch metric {
		case metricSpecDrafts, metricSpecDraftTokens, metricSpecAccepted, metricSpecPerPos:
		default:
			continue
		}
		if !(value >= 0) || math.IsInf(value, 0) {
			return nil, fmt.Errorf("%s:%d: %s is %v, not a count", name, line, metric, value)
		}
		found = true
		switch metric {
		case metricSpecDrafts:
			c.Drafts += value
		case metricSpecDraftTokens:
			c.DraftTokens += value
		case metricSpecAccepted:
			c.AcceptedTokens += value
		default:
			pos, err := strconv.Atoi(labels["position"])
			if err != nil || pos < 0 || pos >= MaxSpecPositions {
				return nil, fmt.Errorf("%s:%d: %s has position %q, not in [0, %d)", name, line, metric, labels["position"], MaxSpecPositions)
			}
			for len(c.AcceptedPerPosition) <= pos {
				c.AcceptedPerPosition = append(c.AcceptedPerPosition, 0)
			}
			c.AcceptedPerPosition[pos] += value
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %v", name, err)
	}
	if !found {
		return nil, fmt.Errorf("%s: no %s* counters: the server did not speculate, or the scrape is not vLLM's /metrics", name, "vllm:spec_decode_")
	}
	return c, nil
}

// Sub is c less an earlier scrape of the same server (the counts of the
// interval between them); it fails if a counter went down (a restart).
func (c *SpecDecodeCounts) Sub(before *SpecDecodeCounts) (*SpecDecodeCounts, error) {
	out := &SpecDecodeCounts{Drafts: c.Drafts - before.Drafts, DraftTokens: c.DraftTokens - before.DraftTokens, AcceptedTokens: c.AcceptedTokens - before.AcceptedTokens}
	for i, v := range c.AcceptedPerPosition {
		b := 0.0
		if i < len(before.AcceptedPerPosition) {
			b = before.AcceptedPerPosition[i]
		}
		out.AcceptedPerPosition = append(out.AcceptedPerPosition, v-b)
	}
	if len(before.AcceptedPerPosition) > len(c.AcceptedPerPosition) {
		return nil, fmt.Errorf("the earlier scrape has %d positions, the later %d: not the same server", len(before.AcceptedPerPosition), len(c.AcceptedPerPosition))
	}
	for _, v := range append([]float64{out.Drafts, out.DraftTokens, out.AcceptedTokens}, out.AcceptedPerPosition...) {
		if v < 0 {
			return nil, fmt.Errorf("a counter went down between the scrapes (the server restarted?)")
		}
	}
	return out, nil
}

// PerPosition is the fraction of proposals whose draft i+1 was accepted
// (vLLM's per-position acceptance rate), for k positions: an error when
// there are no proposals, fewer positions than k, or rates that rise with
// the position (a draft counts only after every draft before it).
func (c *SpecDecodeCounts) PerPosition(k int) ([]float64, error) {
	switch {
	case !(c.Drafts > 0):
		return nil, fmt.Errorf("no proposals counted (%s is 0)", metricSpecDrafts)
	case len(c.AcceptedPerPosition) < k:
		return nil, fmt.Errorf("%d positions counted, for num_speculative_tokens %d", len(c.AcceptedPerPosition), k)
	}
	out := make([]float64, k)
	for i := range out {
		out[i] = c.AcceptedPerPosition[i] / c.Drafts
		switch {
		case out[i] > 1:
			return nil, fmt.Errorf("position %d: %g accepted of %g proposals", i, c.AcceptedPerPosition[i], c.Drafts)
		case i > 0 && out[i] > out[i-1]:
			return nil, fmt.Errorf("position %d's acceptance %.4g is above position %d's %.4g: a draft is accepted only after every draft before it", i, out[i], i-1, out[i-1])
		}
	}
	return out, nil
}

// parseSample splits one exposition line: name{labels} value [timestamp].
func parseSample(s string) (name string, labels map[string]string, value float64, err error) {
	i := strings.IndexAny(s, "{ \t")
	if i <= 0 {
		return "", nil, 0, fmt.Errorf("%q is not a metric sample", clip(s))
	}
	name, rest := s[:i], s[i:]
	labels = map[string]string{}
	if rest[0] == '{' {
		end := strings.IndexByte(rest, '}')
		if end < 0 {
			return "", nil, 0, fmt.Errorf("%q: unclosed labels", clip(s))
		}
		for _, kv := range splitLabels(rest[1:end]) {
			k, v, ok := strings.Cut(kv, "=")
			uq, uerr := strconv.Unquote(strings.TrimSpace(v))
			if !ok || uerr != nil {
				return "", nil, 0, fmt.Errorf("%q: label %q is not name=\"value\"", clip(s), clip(kv))
			}
			labels[strings.TrimSpace(k)] = uq
		}
		rest = rest[end+1:]
	}
	fields := strings.Fields(rest)
	if len(fields) < 1 || len(fields) > 2 {
		return "", nil, 0, fmt.Errorf("%q: want a value (and a timestamp) after the name", clip(s))
	}
	value, err = strconv.ParseFloat(fields[0], 64)
	if err != nil {
		return "", nil, 0, fmt.Errorf("%q: value %q is not a number", clip(s), clip(fields[0]))
	}
	return name, labels, value, nil
}

// splitLabels splits label pairs at the commas outside quotes.
func splitLabels(s string) []string {
	var out []string
	start, quoted, esc := 0, false, false
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case esc:
			esc = false
		case c == '\\':
			esc = true
		case c == '"':
			quoted = !quoted
		case c == ',' && !quoted:
			out = append(out, s[start:i])
			start = i + 1
		}
	}
	if strings.TrimSpace(s[start:]) != "" {
		out = append(out, s[start:])
	}
	return out
}

// clip shortens s for an error message.
func clip(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}
