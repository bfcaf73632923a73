package promexport_test

import (
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// A strict reader of the OpenMetrics text this package writes: it fails on
// anything the OpenMetrics 1.0 text format forbids that an exporter could
// get wrong (and on a few things it allows but we never write), and returns
// every sample for the tests to check.

type omSample struct {
	name   string
	labels map[string]string
	value  float64
	ts     float64
}

type omFamily struct {
	name, typ, help, unit string
	samples               []omSample
}

var (
	metricName = regexp.MustCompile(`^[a-zA-Z_:][a-zA-Z0-9_:]*$`)
	labelName  = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]*$`)
	timestamp  = regexp.MustCompile(`^-?[0-9]+\.[0-9]{3}$`)
)

var suffixes = map[string][]string{
	"gauge":     {""},
	"counter":   {"_total", "_created"},
	"histogram": {"_bucket", "_count", "_sum", "_created"},
}

// parseOpenMetrics checks text line by line and returns its families in
// order.
func parseOpenMetrics(text string) ([]*omFamily, error) {
	if !strings.HasSuffix(text, "# EOF\n") {
		return nil, fmt.Errorf("does not end with \"# EOF\\n\"")
	}
	lines := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
	var fams []*omFamily
	seen := map[string]bool{}
	var cur *omFamily
	for n, ln := range lines {
		at := func(format string, args ...any) error {
			return fmt.Errorf("line %d %q: %s", n+1, ln, fmt.Sprintf(format, args...))
		}
		if ln == "# EOF" {
			if n != len(lines)-1 {
				return nil, at("# EOF before the end")
			}
			break
		}
		if ln == "" {
			return nil, at("empty line")
		}
		if strings.HasPrefix(ln, "#") {
			parts := strings.SplitN(ln, " ", 4)
			if len(parts) < 4 || parts[0] != "#" {
				return nil, at("malformed metadata")
			}
			kind, name, rest := parts[1], parts[2], parts[3]
			if !metricName.MatchString(name) {
				return nil, at("bad family name")
			}
			if cur == nil || cur.name != name {
				if seen[name] {
					return nil, at("family %s interleaved with another", name)
				}
				if cur != nil && len(cur.samples) == 0 {
					return nil, at("family %s has no samples", cur.name)
				}
				cur = &omFamily{name: name}
				seen[name] = true
				fams = append(fams, cur)
			}
			if len(cur.samples) > 0 {
				return nil, at("metadata after samples")
			}
			switch kind {
			case "TYPE":
				if cur.typ != "" {
					return nil, at("second TYPE")
				}
				if _, ok := suffixes[rest]; !ok {
					return nil, at("type %q is not one we write", rest)
				}
				if rest == "counter" && strings.HasSuffix(name, "_total") {
					return nil, at("a counter family's name must not end in _total")
				}
				cur.typ = rest
			case "HELP":
				if cur.help != "" {
					return nil, at("second HELP")
				}
				cur.help = rest
			case "UNIT":
				if cur.unit != "" {
					return nil, at("second UNIT")
				}
				if !strings.HasSuffix(name, "_"+rest) {
					return nil, at("family name does not end in its unit %q", rest)
				}
				cur.unit = rest
			default:
				return nil, at("unknown metadata %q", kind)
			}
			continue
		}
		if cur == nil || cur.typ == "" {
			return nil, at("sample before its family's TYPE")
		}
		s, err := parseSample(ln)
		if err != nil {
			return nil, at("%v", err)
		}
		suffix, ok := strings.CutPrefix(s.name, cur.name)
		if !ok || !slices.Contains(suffixes[cur.typ], suffix) {
			return nil, at("sample %s does not belong to %s family %s", s.name, cur.typ, cur.name)
		}
		if _, hasLE := s.labels["le"]; hasLE != (suffix == "_bucket") {
			return nil, at("le label on a sample other than a bucket, or a bucket without le")
		}
		cur.samples = append(cur.samples, s)
	}
	if cur != nil && len(cur.samples) == 0 {
		return nil, fmt.Errorf("family %s has no samples", cur.name)
	}
	for _, f := range fams {
		if f.typ == "" || f.help == "" {
			return nil, fmt.Errorf("family %s lacks TYPE or HELP", f.name)
		}
		if err := checkSeries(f); err != nil {
			return nil, fmt.Errorf("family %s: %w", f.name, err)
		}
	}
	return fams, nil
}

func parseSample(ln string) (omSample, error) {
	s := omSample{labels: map[string]string{}}
	i := strings.IndexAny(ln, "{ ")
	if i < 0 {
		return s, fmt.Errorf("no value")
	}
	s.name = ln[:i]
	if !metricName.MatchString(s.name) {
		return s, fmt.Errorf("bad metric name")
	}
	rest := ln[i:]
	if rest[0] == '{' {
		rest = rest[1:]
		for {
			eq := strings.IndexByte(rest, '=')
			if eq < 0 {
				return s, fmt.Errorf("label without =")
			}
			name := rest[:eq]
			if !labelName.MatchString(name) {
				return s, fmt.Errorf("bad label name %q", name)
			}
			if _, dup := s.labels[name]; dup {
				return s, fmt.Errorf("duplicate label %s", name)
			}
			rest = rest[eq+1:]
			if rest == "" || rest[0] != '"' {
				return s, fmt.Errorf("unquoted label value")
			}
			var val strings.Builder
			j := 1
			for ; j < len(rest) && rest[j] != '"'; j++ {
				if rest[j] == '\\' {
					j++
					if j == len(rest) {
						return s, fmt.Errorf("dangling escape")
					}
					switch rest[j] {
					case '\\', '"':
						val.WriteByte(rest[j])
					case 'n':
						val.WriteByte('\n')
					default:
						return s, fmt.Errorf("bad escape \\%c", rest[j])
					}
					continue
				}
				if rest[j] == '\n' {
					return s, fmt.Errorf("newline in label value")
				}
				val.WriteByte(rest[j])
			}
			if j == len(rest) {
				return s, fmt.Errorf("unterminated label value")
			}
			s.labels[name] = val.String()
			rest = rest[j+1:]
			if strings.HasPrefix(rest, ",") {
				rest = rest[1:]
				continue
			}
			if !strings.HasPrefix(rest, "}") {
				return s, fmt.Errorf("labels not closed")
			}
			rest = rest[1:]
			break
		}
	}
	fields := strings.Split(rest, " ")
	if len(fields) != 3 || fields[0] != "" {
		return s, fmt.Errorf("want exactly one space, a value, one space and a timestamp")
	}
	v, err := parseValue(fields[1])
	if err != nil {
		return s, err
	}
	s.value = v
	if !timestamp.MatchString(fields[2]) {
		return s, fmt.Errorf("timestamp %q is not seconds with three decimals", fields[2])
	}
	s.ts, _ = strconv.ParseFloat(fields[2], 64)
	return s, nil
}

func parseValue(s string) (float64, error) {
	switch s {
	case "+Inf":
		return math.Inf(1), nil
	case "-Inf":
		return math.Inf(-1), nil
	case "NaN":
		return math.NaN(), nil
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || strings.ContainsAny(s, "_xXpPiI") {
		return 0, fmt.Errorf("bad value %q", s)
	}
	return v, nil
}

// seriesKey names a sample's series (its name and labels).
func seriesKey(name string, labels map[string]string, drop string) string {
	keys := make([]string, 0, len(labels))
	for k := range labels {
		if k != drop {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	var b strings.Builder
	b.WriteString(name)
	for _, k := range keys {
		fmt.Fprintf(&b, ",%s=%q", k, labels[k])
	}
	return b.String()
}

// checkSeries checks each series' timestamps rise, counters never fall,
// and each histogram point has ascending cumulative buckets ending in +Inf
// equal to its count, then its count and sum, grouped by timestamp.
func checkSeries(f *omFamily) error {
	last := map[string]omSample{}
	for _, s := range f.samples {
		k := seriesKey(s.name, s.labels, "")
		if p, ok := last[k]; ok {
			if s.ts <= p.ts {
				return fmt.Errorf("%s: timestamp %v after %v", k, s.ts, p.ts)
			}
			if f.typ != "gauge" && s.value < p.value && !strings.HasSuffix(s.name, "_sum") {
				return fmt.Errorf("%s: cumulative value fell from %v to %v", k, p.value, s.value)
			}
		}
		last[k] = s
	}
	if f.typ != "histogram" {
		return nil
	}
	type point struct {
		les     []float64
		buckets []float64
		count   float64
		state   int // 0 buckets, 1 after count, 2 after sum
	}
	var cur *point
	var curKey string
	var curTS float64
	done := map[string]bool{}
	for _, s := range f.samples {
		k := seriesKey(f.name, s.labels, "le")
		id := fmt.Sprintf("%s@%v", k, s.ts)
		if cur == nil || k != curKey || s.ts != curTS {
			if cur != nil && cur.state != 2 {
				return fmt.Errorf("%s@%v: point ends without count and sum", curKey, curTS)
			}
			if done[id] {
				return fmt.Errorf("%s: point split", id)
			}
			cur, curKey, curTS = &point{}, k, s.ts
			done[id] = true
		}
		switch strings.TrimPrefix(s.name, f.name) {
		case "_bucket":
			if cur.state != 0 {
				return fmt.Errorf("%s: bucket after count", id)
			}
			le, err := parseValue(s.labels["le"])
			if err != nil {
				return fmt.Errorf("%s: le %q: %w", id, s.labels["le"], err)
			}
			if n := len(cur.les); n > 0 && (le <= cur.les[n-1] || s.value < cur.buckets[n-1]) {
				return fmt.Errorf("%s: buckets not ascending at le=%s", id, s.labels["le"])
			}
			cur.les, cur.buckets = append(cur.les, le), append(cur.buckets, s.value)
		case "_count":
			if cur.state != 0 || len(cur.les) == 0 || !math.IsInf(cur.les[len(cur.les)-1], 1) {
				return fmt.Errorf("%s: count before a +Inf bucket", id)
			}
			if s.value != cur.buckets[len(cur.buckets)-1] {
				return fmt.Errorf("%s: count %v != +Inf bucket %v", id, s.value, cur.buckets[len(cur.buckets)-1])
			}
			cur.count, cur.state = s.value, 1
		case "_sum":
			if cur.state != 1 {
				return fmt.Errorf("%s: sum before count", id)
			}
			cur.state = 2
		}
	}
	if cur != nil && cur.state != 2 {
		return fmt.Errorf("%s@%v: point ends without count and sum", curKey, curTS)
	}
	return nil
}

func TestStrictParserRejectsBadText(t *testing.T) {
	good := "# TYPE a gauge\n# HELP a x\na{l=\"v\"} 1 1.000\n# EOF\n"
	if _, err := parseOpenMetrics(good); err != nil {
		t.Fatalf("good text rejected: %v", err)
	}
	bad := map[string]string{
		"no eof":            "# TYPE a gauge\n# HELP a x\na 1 1.000\n",
		"no timestamp":      "# TYPE a gauge\n# HELP a x\na 1\n# EOF\n",
		"ms timestamp":      "# TYPE a gauge\n# HELP a x\na 1 1000\n# EOF\n",
		"wrong suffix":      "# TYPE a counter\n# HELP a x\na 1 1.000\n# EOF\n",
		"interleaved":       "# TYPE a gauge\n# HELP a x\na 1 1.000\n# TYPE b gauge\n# HELP b x\nb 1 1.000\n# TYPE a gauge\na 1 2.000\n# EOF\n",
		"time goes back":    "# TYPE a gauge\n# HELP a x\na 1 2.000\na 1 1.000\n# EOF\n",
		"counter falls":     "# TYPE a counter\n# HELP a x\na_total 2 1.000\na_total 1 2.000\n# EOF\n",
		"unit not suffix":   "# TYPE a gauge\n# UNIT a seconds\n# HELP a x\na 1 1.000\n# EOF\n",
		"bad escape":        "# TYPE a gauge\n# HELP a x\na{l=\"\\t\"} 1 1.000\n# EOF\n",
		"count != inf":      "# TYPE h histogram\n# HELP h x\nh_bucket{le=\"1.0\"} 1 1.000\nh_bucket{le=\"+Inf\"} 2 1.000\nh_count 3 1.000\nh_sum 1 1.000\n# EOF\n",
		"buckets fall":      "# TYPE h histogram\n# HELP h x\nh_bucket{le=\"1.0\"} 2 1.000\nh_bucket{le=\"+Inf\"} 1 1.000\nh_count 1 1.000\nh_sum 1 1.000\n# EOF\n",
		"no +Inf":           "# TYPE h histogram\n# HELP h x\nh_bucket{le=\"1.0\"} 2 1.000\nh_count 2 1.000\nh_sum 1 1.000\n# EOF\n",
		"total counter":     "# TYPE a_total counter\n# HELP a_total x\na_total 1 1.000\n# EOF\n",
		"sample before typ": "a 1 1.000\n# EOF\n",
	}
	for name, text := range bad {
		if _, err := parseOpenMetrics(text); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}
