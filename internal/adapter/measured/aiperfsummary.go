package measured

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"io"
	"math"
	"regexp"
	"strings"
)

// AIPerf's profile_export_aiperf.json holds one object per metric, each
// {"tag", "unit", "header", "avg", "min", "max", "p1" … "p99", "std",
// "count"}, under "records" (or, in later versions and in GenAI-Perf's
// profile_export_genai_perf.json, at the top level), with the run's
// input_config (endpoint.model_names or model, loadgen.concurrency or
// concurrency, request_rate). The matching CSV has one row per metric,
// "Time to First Token (ms),avg,min,…", then a "Metric,Value" table of
// scalars. Both are aggregate-only: the Run has no Requests. GenAI-Perf's
// CSV (profile_export_genai_perf.csv) has the same tables and writes every
// value with thousands separators ("1,146.31", quoted): those are read as
// numbers; a comma anywhere else in a number is an error.
//
// Name mapping (see Aggregate for the definitions): ttft /
// time_to_first_token → TTFT; request_latency → E2E; inter_token_latency
// (per request (e2e − ttft)/(osl − 1)) → TPOT; inter_chunk_latency → ITL.

// perfMetric names the Aggregate distribution of a metric tag.
func perfMetric(a *Aggregate, tag string) *map[string]float64 {
	switch tag {
	case "ttft", "time_to_first_token":
		return &a.TTFTMS
	case "request_latency":
		return &a.E2EMS
	case "inter_token_latency":
		return &a.TPOTMS
	case "inter_chunk_latency":
		return &a.ITLMS
	}
	return nil
}

// perfScalar stores a scalar metric (its avg) in the Aggregate.
func perfScalar(a *Aggregate, tag string, v float64) {
	switch tag {
	case "request_throughput":
		a.RequestsPerS = positive(v)
	case "output_token_throughput":
		a.OutputTokensPerS = positive(v)
	case "request_count":
		a.Completed = count(v)
	case "error_request_count":
		a.Failed = count(v)
	case "input_sequence_length":
		a.MeanInputTokens = positive(v)
	case "output_sequence_length":
		a.MeanOutputTokens = positive(v)
	}
}

func sniffPerfSummary(s *shape) bool {
	if s.kind != kindJSONObject {
		return false
	}
	return (s.anyTop("records") && s.keys["tag"] == 3) ||
		(s.anyTop("input_config", "aiperf_version", "genai_perf_version") && s.anyTop("ttft", "time_to_first_token", "request_latency", "request_throughput"))
}

func parsePerfSummary(p *parser) (*Run, error) {
	var top map[string]json.RawMessage
	if err := p.unmarshal(0, "", pyJSON(trimBOM(p.data)), &top); err != nil {
		return nil, err
	}
	metrics, prefix := top, ""
	if raw, ok := top["records"]; ok {
		metrics, prefix = nil, "records."
		if err := p.unmarshal(0, "records", raw, &metrics); err != nil {
			return nil, err
		}
	}
	a := &Aggregate{}
	for tag, raw := range metrics {
		if len(raw) == 0 || raw[0] != '{' {
			continue
		}
		var m map[string]json.RawMessage
		if err := p.unmarshal(0, prefix+tag, raw, &m); err != nil {
			return nil, err
		}
		if _, ok := m["unit"]; !ok {
			continue // input_config and other non-metrics
		}
		var unit string
		if err := p.unmarshal(0, prefix+tag+".unit", m["unit"], &unit); err != nil {
			return nil, err
		}
		scale := 1.0
		if s, ok := unitSeconds(unit); ok {
			scale = s * 1e3 // to ms
		}
		dist := perfMetric(a, tag)
		for k, rv := range m {
			stat, ok := statKey(k)
			if !ok {
				continue
			}
			var v num
			if err := p.unmarshal(0, prefix+tag+"."+k, rv, &v); err != nil {
				return nil, err
			}
			if dist != nil {
				setStat(dist, stat, v.finite(), scale)
			} else if stat == "mean" {
				perfScalar(a, tag, v.finite())
			}
		}
	}
	run := &Run{Aggregate: a}
	if raw, ok := top["input_config"]; ok {
		var cfg struct {
			Endpoint struct {
				ModelNames []string `json:"model_names"`
			} `json:"endpoint"`
			Model   json.RawMessage `json:"model"`
			Loadgen struct {
				Concurrency num `json:"concurrency"`
				RequestRate num `json:"request_rate"`
			} `json:"loadgen"`
			Concurrency num `json:"concurrency"`
			RequestRate num `json:"request_rate"`
		}
		if err := p.unmarshal(0, "input_config", raw, &cfg); err != nil {
			return nil, err
		}
		if len(cfg.Endpoint.ModelNames) > 0 {
			run.Model = cfg.Endpoint.ModelNames[0]
		} else {
			var names []string
			var name string
			if json.Unmarshal(cfg.Model, &names) == nil && len(names) > 0 {
				run.Model = names[0]
			} else if json.Unmarshal(cfg.Model, &name) == nil {
				run.Model = name
			}
		}
		a.Concurrency = count(firstSet(cfg.Loadgen.Concurrency, cfg.Concurrency).finite())
		a.RateRPS = positive(firstSet(cfg.Loadgen.RequestRate, cfg.RequestRate).finite())
	}
	if a.empty() {
		return nil, p.errf(0, "", "no metrics")
	}
	return run, nil
}

func firstSet(ns ...num) num {
	for _, n := range ns {
		if n.Set {
			return n
		}
	}
	return num{}
}

func sniffPerfSummaryCSV(s *shape) bool {
	return s.kind == kindCSV && s.header[0] == "metric"
}

// reGrouped is a number written with thousands separators, as GenAI-Perf
// writes every statistic ("1,146.31", "-3,000").
var reGrouped = regexp.MustCompile(`^[-+]?[0-9]{1,3}(?:,[0-9]{3})+(?:\.[0-9]*)?$`)

// ungroup drops the thousands separators of a grouped number; other
// cells are returned as they are (and fail as numbers if they are not).
func ungroup(s string) string {
	if !reGrouped.MatchString(s) {
		return s
	}
	return strings.ReplaceAll(s, ",", "")
}

// reCSVMetric splits "Time to First Token (ms)" into name and unit.
var reCSVMetric = regexp.MustCompile(`^(.*?)\s*(?:\(([^)]*)\))?$`)

func parsePerfSummaryCSV(p *parser) (*Run, error) {
	if err := p.lines(func(int, []byte) error { return nil }); err != nil {
		return nil, err // line limit
	}
	a := &Aggregate{}
	cr := csv.NewReader(bytes.NewReader(trimBOM(p.data)))
	cr.FieldsPerRecord = -1
	var head []string // the current table's statistic columns
	for rec := 1; ; rec++ {
		cells, err := cr.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, p.errf(rec, "", "CSV: %v", err)
		}
		for i := range cells {
			cells[i] = strings.TrimSpace(cells[i])
		}
		if strings.EqualFold(cells[0], "metric") {
			head = cells[1:]
			continue
		}
		if head == nil {
			return nil, p.errf(rec, "", "no Metric header before the first row")
		}
		m := reCSVMetric.FindStringSubmatch(cells[0])
		if m == nil {
			continue // a label over several lines
		}
		tag := strings.Join(strings.Fields(strings.ToLower(m[1])), "_")
		if tag == "output_token_throughput" && strings.Contains(m[2], "user") {
			continue // per-user throughput, not the run's
		}
		scale := 1.0
		if s, ok := unitSeconds(m[2]); ok {
			scale = s * 1e3
		}
		dist := perfMetric(a, tag)
		for i, h := range head {
			if i+1 >= len(cells) {
				break
			}
			stat, ok := statKey(h)
			if strings.EqualFold(h, "value") {
				stat, ok = "mean", true
			}
			if !ok {
				continue
			}
			v, err := p.cellNum(rec, h, ungroup(cells[i+1]))
			if err != nil {
				return nil, err
			}
			if dist != nil {
				setStat(dist, stat, v, scale)
			} else if stat == "mean" && !math.IsNaN(v) {
				perfScalar(a, tag, v)
			}
		}
	}
	if a.empty() {
		return nil, p.errf(0, "", "no metrics")
	}
	return &Run{Aggregate: a}, nil
}
