package measured

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math"
	"regexp"
	"slices"
	"strconv"
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

// perfScalar stores a scalar metric (its avg) in the Aggregate; ok is
// false for a tag it has no field for.
func perfScalar(a *Aggregate, tag string, v float64) bool {
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
	default:
		return false
	}
	return true
}

// perfScale is the factor from a distribution metric's unit to
// milliseconds; ok is false when the unit is not a time (the metric is
// then left out, with a note).
func perfScale(unit string) (float64, bool) {
	s, ok := unitSeconds(unit)
	return s * 1e3, ok
}

func sniffPerfSummary(s *shape) bool {
	if s.kind != kindJSONObject {
		return false
	}
	return (s.anyTop("records") && s.keys["tag"] == 3) ||
		(s.anyTop("input_config", "aiperf_version", "genai_perf_version") && s.anyTop("ttft", "time_to_first_token", "request_latency", "request_throughput"))
}

// perfVersionKeys are the top-level keys that name the writer's version
// (said in a note).
var perfVersionKeys = keys("schema_version", "aiperf_version", "genai_perf_version")

func parsePerfSummary(p *parser) (*Run, error) {
	var top map[string]json.RawMessage
	if err := p.unmarshal(0, "", pyJSON(trimBOM(p.data)), &top); err != nil {
		return nil, err
	}
	run := &Run{}
	metrics, prefix := top, ""
	if raw, ok := top["records"]; ok {
		metrics, prefix = nil, "records."
		if err := p.unmarshal(0, "records", raw, &metrics); err != nil {
			return nil, err
		}
		for k := range top {
			if k != "records" && k != "input_config" && !perfVersionKeys(k) {
				run.ignore("", k)
			}
		}
	}
	a := &Aggregate{}
	for _, tag := range slices.Sorted(maps.Keys(metrics)) {
		raw := metrics[tag]
		if prefix == "" && (tag == "records" || tag == "input_config" || perfVersionKeys(tag)) {
			continue
		}
		var m map[string]json.RawMessage
		if len(raw) == 0 || raw[0] != '{' || json.Unmarshal(raw, &m) != nil {
			run.ignore(prefix, tag) // a scalar or list beside the metrics
			continue
		}
		if _, ok := m["unit"]; !ok {
			run.ignore(prefix, tag) // not a metric
			continue
		}
		var unit string
		if err := p.unmarshal(0, prefix+tag+".unit", m["unit"], &unit); err != nil {
			return nil, err
		}
		dist := perfMetric(a, tag)
		scale := 1.0
		if dist != nil {
			var ok bool
			if scale, ok = perfScale(unit); !ok {
				run.note("%s%s: unit %q is not a time: left out", prefix, tag, unit)
				run.ignore(prefix, tag)
				continue
			}
		}
		used := false
		for _, k := range slices.Sorted(maps.Keys(m)) {
			stat, ok := statKey(k)
			if !ok {
				switch k {
				case "tag", "unit", "header":
				default:
					if dist != nil {
						run.ignore(prefix+tag+".", k)
					}
				}
				continue
			}
			var v num
			if err := p.unmarshal(0, prefix+tag+"."+k, m[k], &v); err != nil {
				return nil, err
			}
			switch {
			case dist != nil:
				setStat(dist, stat, v.finite(), scale)
				used = true
			case stat == "mean":
				used = perfScalar(a, tag, v.finite())
			}
		}
		if !used {
			run.ignore(prefix, tag)
		}
	}
	run.Aggregate = a
	if v := perfVersion(top); v != "" {
		run.note("%s", v)
	}
	if raw, ok := top["input_config"]; ok {
		if err := perfInputConfig(p, raw, run); err != nil {
			return nil, err
		}
	}
	if a.empty() {
		return nil, p.errf(0, "", "no metrics")
	}
	return run, nil
}

// perfVersion says which tool version and export schema wrote the file
// ("" when it does not say).
func perfVersion(top map[string]json.RawMessage) string {
	var parts []string
	for _, k := range []string{"aiperf_version", "genai_perf_version", "schema_version"} {
		var v string
		if json.Unmarshal(top[k], &v) == nil && v != "" {
			parts = append(parts, k+" "+v)
		}
	}
	return strings.Join(parts, ", ")
}

// perfConfig is the part of a summary's input_config the replay uses, in
// the layouts of AIPerf's versions: the model under endpoint.model_names
// (older), model (GenAI-Perf) or models.items[].name (AIPerf 0.10); the
// load under loadgen (older), at the top (GenAI-Perf) or per phase,
// phases[] with the warm-up phase's request count and the profiling
// phase's concurrency and request_rate (AIPerf 0.10).
type perfConfig struct {
	Endpoint struct {
		ModelNames []string `json:"model_names"`
	} `json:"endpoint"`
	Model   json.RawMessage `json:"model"`
	Models  json.RawMessage `json:"models"`
	Loadgen struct {
		Concurrency num `json:"concurrency"`
		RequestRate num `json:"request_rate"`
	} `json:"loadgen"`
	Concurrency num               `json:"concurrency"`
	RequestRate num               `json:"request_rate"`
	Phases      []json.RawMessage `json:"phases"`
}

// perfPhase is one phase of AIPerf 0.10's input_config.phases; its kind
// is under type, name or phase ("warmup", "profiling").
type perfPhase struct {
	Type         string `json:"type"`
	Name         string `json:"name"`
	Phase        string `json:"phase"`
	Concurrency  num    `json:"concurrency"`
	RequestRate  num    `json:"request_rate"`
	RequestCount num    `json:"request_count"`
}

func perfInputConfig(p *parser, raw json.RawMessage, run *Run) error {
	var cfg perfConfig
	if err := p.unmarshal(0, "input_config", raw, &cfg); err != nil {
		return err
	}
	a := run.Aggregate
	used := map[string]bool{}
	switch {
	case len(cfg.Endpoint.ModelNames) > 0:
		run.Model, used["endpoint"] = cfg.Endpoint.ModelNames[0], true
	case modelName(cfg.Models) != "":
		run.Model, used["models"] = modelName(cfg.Models), true
	case modelName(cfg.Model) != "":
		run.Model, used["model"] = modelName(cfg.Model), true
	}
	conc, rate := firstSet(cfg.Loadgen.Concurrency, cfg.Concurrency), firstSet(cfg.Loadgen.RequestRate, cfg.RequestRate)
	used["loadgen"] = cfg.Loadgen.Concurrency.Set || cfg.Loadgen.RequestRate.Set
	used["concurrency"], used["request_rate"] = cfg.Concurrency.Set, cfg.RequestRate.Set
	for i, pr := range cfg.Phases {
		var ph perfPhase
		if err := p.unmarshal(0, fmt.Sprintf("input_config.phases[%d]", i), pr, &ph); err != nil {
			return err
		}
		used["phases"] = true
		kind := strings.ToLower(firstNonEmpty(ph.Type, ph.Name, ph.Phase))
		if strings.Contains(kind, "warm") {
			run.Warmup = count(ph.RequestCount.finite())
			continue
		}
		if !conc.Set && !rate.Set {
			conc, rate = ph.Concurrency, ph.RequestRate
			run.note("load from input_config.phases[%d] (%s)", i, firstNonEmpty(kind, "unnamed phase"))
		}
	}
	a.Concurrency = count(conc.finite())
	a.RateRPS = positive(rate.finite())
	run.ignoreJSON("input_config.", raw, func(k string) bool { return used[k] })
	return nil
}

// modelName is the first model's name of a JSON string, list of strings,
// list of {"name"} objects or {"items": [{"name"}]} ("" when none).
func modelName(raw json.RawMessage) string {
	var name string
	if json.Unmarshal(raw, &name) == nil {
		return name
	}
	var names []string
	if json.Unmarshal(raw, &names) == nil && len(names) > 0 {
		return names[0]
	}
	type item struct {
		Name string `json:"name"`
	}
	var items []item
	if json.Unmarshal(raw, &items) == nil && len(items) > 0 {
		return items[0].Name
	}
	var obj struct {
		Items []item `json:"items"`
	}
	if json.Unmarshal(raw, &obj) == nil && len(obj.Items) > 0 {
		return obj.Items[0].Name
	}
	return ""
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

// A CSV table is one of these kinds.
const (
	csvNone      = iota // before the first header
	csvMetrics          // Metric,avg,… or Metric,Value
	csvTelemetry        // Endpoint,GPU_Index,GPU_Name,GPU_UUID,Metric,avg,…
	csvOther            // a table this reader does not know
)

// perfCSVHeader tells a table's header row (lower-cased, trimmed cells)
// by its first cell, or, for a table of a kind this reader does not know,
// by having no number in it (at least two cells, none empty).
func perfCSVHeader(cells []string) (int, bool) {
	switch {
	case cells[0] == "metric":
		return csvMetrics, true
	case cells[0] == "endpoint" || slices.Contains(cells, "gpu_index"):
		return csvTelemetry, true
	case len(cells) < 2:
		return csvNone, false
	}
	for _, c := range cells[1:] {
		if c == "" {
			return csvNone, false
		}
		if _, err := strconv.ParseFloat(ungroup(c), 64); err == nil {
			return csvNone, false
		}
	}
	return csvOther, true
}

func parsePerfSummaryCSV(p *parser) (*Run, error) {
	if err := p.lines(func(int, []byte) error { return nil }); err != nil {
		return nil, err // line limit
	}
	a := &Aggregate{}
	run := &Run{Aggregate: a}
	cr := csv.NewReader(bytes.NewReader(trimBOM(p.data)))
	cr.FieldsPerRecord = -1
	kind := csvNone
	var head []string // the current table's columns after the first
	var col map[string]int
	telemetryHeaders, telemetryRows := 0, 0
	gpus := map[string]bool{}
	var other []string // headers of tables not read, with their row counts
	otherRows := 0
	flushOther := func() {
		if kind == csvOther {
			other[len(other)-1] += fmt.Sprintf(" (%d rows)", otherRows)
		}
	}
	for rec := 1; ; rec++ {
		cells, err := cr.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, p.errf(rec, "", "CSV: %v", err)
		}
		low := make([]string, len(cells))
		for i := range cells {
			cells[i] = strings.TrimSpace(cells[i])
			low[i] = strings.ToLower(cells[i])
		}
		if len(cells) == 1 && cells[0] == "" {
			continue
		}
		if k, ok := perfCSVHeader(low); ok {
			flushOther()
			kind, head, col = k, cells[1:], map[string]int{}
			for i, c := range low {
				col[c] = i
			}
			switch k {
			case csvTelemetry:
				telemetryHeaders++
			case csvOther:
				other, otherRows = append(other, strings.Join(cells, ",")), 0
			}
			continue
		}
		switch kind {
		case csvNone:
			return nil, p.errf(rec, "", "no Metric header before the first row")
		case csvTelemetry:
			telemetryRows++
			if i, ok := col["gpu_name"]; ok && i < len(cells) && cells[i] != "" {
				gpus[cells[i]] = true
			}
			continue
		case csvOther:
			otherRows++
			continue
		}
		m := reCSVMetric.FindStringSubmatch(cells[0])
		if m == nil {
			continue // a label over several lines
		}
		tag := strings.Join(strings.Fields(strings.ToLower(m[1])), "_")
		if tag == "output_token_throughput" && strings.Contains(m[2], "user") {
			run.ignore("row ", cells[0]) // per-user throughput, not the run's
			continue
		}
		dist := perfMetric(a, tag)
		scale := 1.0
		if dist != nil {
			var ok bool
			if scale, ok = perfScale(m[2]); !ok {
				run.note("row %q: unit %q is not a time: left out", cells[0], m[2])
				run.ignore("row ", cells[0])
				continue
			}
		}
		used := false
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
			switch {
			case dist != nil:
				setStat(dist, stat, v, scale)
				used = true
			case stat == "mean" && !math.IsNaN(v):
				used = perfScalar(a, tag, v)
			}
		}
		if !used {
			run.ignore("row ", cells[0])
		}
	}
	flushOther()
	switch {
	case telemetryHeaders > 0 && telemetryRows == 0:
		run.note("the GPU-telemetry section is empty (no telemetry was collected)")
	case telemetryRows > 0:
		names := slices.Sorted(maps.Keys(gpus))
		if len(names) == 1 {
			run.GPU, run.GPUNote = names[0], "GPU_Name of the file's GPU-telemetry section"
		}
		run.note("GPU telemetry: %d rows (GPUs %s); the DCGM metrics are not used", telemetryRows, strings.Join(names, ", "))
		run.ignore("", "GPU-telemetry section")
	}
	for _, t := range other {
		run.note("a table this reader does not know is not read: header %s", t)
		run.ignore("table ", t)
	}
	if a.empty() {
		return nil, p.errf(0, "", "no metrics")
	}
	return run, nil
}
