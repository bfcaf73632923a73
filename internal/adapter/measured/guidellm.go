package measured

import (
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"strings"
)

// guidellm's report (benchmarks.json; any name with --output-path) holds a
// list of benchmarks, one per strategy of the profile (a sweep runs
// synchronous, throughput, then constant rates), each with its requests
// grouped as successful, errored and incomplete (cut off at the end), and
// metrics (distributions with mean, median, min, max and percentiles
// p001 = 0.1th … p999 = 99.9th, per status). Clocks are epoch seconds.
//
// Two layouts are read. guidellm 0.6 (metadata.guidellm_version; the
// reference data): benchmark.config.strategy {type_, rate, max_concurrency,
// streams}, each request with info.timings {request_start,
// first_token_iteration, last_token_iteration, request_end}, info.error,
// prompt_tokens, output_tokens; model in args.model, config.backend.model or
// the request body. guidellm 0.2–0.3: benchmark.args.strategy, requests
// with start_time, first_token_time, last_token_time, end_time, error;
// model in worker.backend_model.
//
// guidellm records no per-chunk times. Its inter_token_latency_ms is
// (last − first token) / (output − 1), vLLM's TPOT, and maps to
// Aggregate.TPOTMS, but its distribution weights each request by its
// output tokens − 1 (the mean is total decode time over total gaps, not
// the mean over requests); its time_per_output_token_ms (latency / output
// tokens) has no Aggregate field. Requests may be a sample of a benchmark's
// (--sample-requests); a note says so when the totals differ. Records are
// requests, numbered across the file in file order (successful, errored,
// incomplete, benchmark by benchmark); fields are JSON paths.

type guidellmReport struct {
	Metadata struct {
		Version string `json:"guidellm_version"`
	} `json:"metadata"`
	Args struct {
		Model *string `json:"model"`
	} `json:"args"`
	Benchmarks []json.RawMessage `json:"benchmarks"`
}

type guidellmStrategy struct {
	Type           string `json:"type_"`
	Rate           num    `json:"rate"`
	Streams        num    `json:"streams"`
	MaxConcurrency num    `json:"max_concurrency"`
}

type guidellmBenchmark struct {
	Config *struct {
		Strategy guidellmStrategy `json:"strategy"`
		Backend  *struct {
			Model *string `json:"model"`
		} `json:"backend"`
	} `json:"config"`
	Args *struct {
		Strategy guidellmStrategy `json:"strategy"`
	} `json:"args"`
	Worker *struct {
		BackendModel string `json:"backend_model"`
	} `json:"worker"`
	Metrics map[string]json.RawMessage `json:"metrics"`
	// RequestTotals is where 0.3 keeps the counts (0.6: in metrics).
	RequestTotals json.RawMessage `json:"request_totals"`
	Requests      struct {
		Successful []json.RawMessage `json:"successful"`
		Errored    []json.RawMessage `json:"errored"`
		Incomplete []json.RawMessage `json:"incomplete"`
	} `json:"requests"`
}

type guidellmRequest struct {
	Info *struct {
		Timings *struct {
			RequestStart num `json:"request_start"`
			FirstToken   num `json:"first_token_iteration"`
			LastToken    num `json:"last_token_iteration"`
			RequestEnd   num `json:"request_end"`
		} `json:"timings"`
		Error json.RawMessage `json:"error"`
	} `json:"info"`
	RequestArgs      json.RawMessage `json:"request_args"`
	RequestStartTime num             `json:"request_start_time"`
	RequestEndTime   num             `json:"request_end_time"`
	StartTime        num             `json:"start_time"`
	EndTime          num             `json:"end_time"`
	FirstTokenTime   num             `json:"first_token_time"`
	LastTokenTime    num             `json:"last_token_time"`
	TTFTMS           num             `json:"time_to_first_token_ms"`
	PromptTokens     num             `json:"prompt_tokens"`
	OutputTokens     num             `json:"output_tokens"`
	Error            json.RawMessage `json:"error"`
}

func sniffGuidellm(s *shape) bool {
	return s.kind == kindJSONObject && s.anyTop("benchmarks")
}

var reModelArg = regexp.MustCompile(`['"]model['"]\s*:\s*['"]([^'"]+)['"]`)

func parseGuidellm(p *parser) (*Run, error) {
	var rep guidellmReport
	if err := p.unmarshal(0, "", pyJSON(trimBOM(p.data)), &rep); err != nil {
		return nil, err
	}
	if len(rep.Benchmarks) == 0 {
		return nil, p.errf(0, "benchmarks", "empty")
	}
	run := &Run{}
	run.ignoreJSON("", p.data, tagsOf(rep))
	if rep.Metadata.Version != "" {
		run.note("guidellm %s", rep.Metadata.Version)
	}
	if rep.Args.Model != nil {
		run.Model = *rep.Args.Model
	}
	reqNo := 0
	sampled := false
	for bi, raw := range rep.Benchmarks {
		path := fmt.Sprintf("benchmarks[%d]", bi)
		var b guidellmBenchmark
		if err := p.unmarshal(0, path, raw, &b); err != nil {
			return nil, err
		}
		run.ignoreJSON("benchmarks[].", raw, tagsOf(b))
		var st guidellmStrategy
		switch {
		case b.Config != nil:
			st = b.Config.Strategy
			if run.Model == "" && b.Config.Backend != nil && b.Config.Backend.Model != nil {
				run.Model = *b.Config.Backend.Model
			}
		case b.Args != nil:
			st = b.Args.Strategy
		}
		if run.Model == "" && b.Worker != nil {
			run.Model = b.Worker.BackendModel
		}
		stage := StageInfo{Index: bi, Strategy: st.Type, RateRPS: positive(st.Rate.finite())}
		switch st.Type {
		case "synchronous":
			stage.Concurrency = 1
		case "concurrent":
			stage.Concurrency = count(st.Streams.finite())
		case "throughput":
			stage.Concurrency = count(st.MaxConcurrency.finite())
		}
		agg, totals, err := guidellmAggregate(p, path, b.Metrics, b.RequestTotals)
		if err != nil {
			return nil, err
		}
		agg.RateRPS, agg.Concurrency = stage.RateRPS, stage.Concurrency
		stage.Aggregate = agg
		if agg.empty() {
			stage.Aggregate = nil
		}
		run.Stages = append(run.Stages, stage)
		n := 0
		for _, group := range []struct {
			status string
			list   []json.RawMessage
		}{{"successful", b.Requests.Successful}, {"errored", b.Requests.Errored}, {"incomplete", b.Requests.Incomplete}} {
			for ri, rraw := range group.list {
				reqNo++
				n++
				q, model, err := guidellmRequestOf(p, reqNo, fmt.Sprintf("%s.requests.%s[%d]", path, group.status, ri), rraw, group.status)
				if err != nil {
					return nil, err
				}
				run.ignoreJSON("benchmarks[].requests.[].", rraw, guidellmRequestUsed)
				if run.Model == "" {
					run.Model = model
				}
				q.Stage = bi
				run.Requests = append(run.Requests, q)
			}
		}
		if totals > 0 && n != totals {
			sampled = true
		}
	}
	if sampled {
		run.note("the report keeps a sample of each benchmark's requests (--sample-requests): per-request data is a subset; the stage aggregates cover all")
	}
	if len(run.Stages) == 1 {
		run.Aggregate, run.Stages[0].Aggregate = run.Stages[0].Aggregate, nil
	}
	return run, nil
}

// guidellmRequestUsed are a request's keys the reader reads (the 0.3 and
// 0.6 layouts).
var guidellmRequestUsed = tagsOf(guidellmRequest{})

func guidellmRequestOf(p *parser, rec int, path string, raw json.RawMessage, status string) (Request, string, error) {
	var r guidellmRequest
	if err := p.unmarshal(rec, path, raw, &r); err != nil {
		return Request{}, "", err
	}
	q := Request{TTFTS: math.NaN(), E2ES: math.NaN()}
	var start, first, last, end num
	fieldStart := path + ".info.timings.request_start"
	switch {
	case r.Info != nil && r.Info.Timings != nil && r.Info.Timings.RequestStart.Set:
		t := r.Info.Timings
		start, first, last, end = t.RequestStart, t.FirstToken, t.LastToken, t.RequestEnd
	case r.StartTime.Set:
		start, first, last, end = r.StartTime, r.FirstTokenTime, r.LastTokenTime, r.EndTime
		fieldStart = path + ".start_time"
	default:
		start, end = r.RequestStartTime, r.RequestEndTime
		fieldStart = path + ".request_start_time"
	}
	if !start.Set {
		return q, "", p.errf(rec, fieldStart, "missing")
	}
	var err error
	if q.SendS, err = p.instant(rec, fieldStart, start.finite()); err != nil {
		return q, "", err
	}
	if !last.Set {
		last = end
	}
	if first.Set {
		if q.TTFTS, err = p.duration(rec, path+".first_token", first.finite()-q.SendS); err != nil {
			return q, "", err
		}
	} else if r.TTFTMS.Set {
		if q.TTFTS, err = p.duration(rec, path+".time_to_first_token_ms", r.TTFTMS.finite()/1e3); err != nil {
			return q, "", err
		}
	}
	if last.Set {
		if q.E2ES, err = p.duration(rec, path+".last_token", last.finite()-q.SendS); err != nil {
			return q, "", err
		}
	}
	if q.InputTokens, err = p.tokens(rec, path+".prompt_tokens", r.PromptTokens); err != nil {
		return q, "", err
	}
	if q.OutputTokens, err = p.tokens(rec, path+".output_tokens", r.OutputTokens); err != nil {
		return q, "", err
	}
	errRaw := r.Error
	if r.Info != nil && len(r.Info.Error) > 0 && string(r.Info.Error) != "null" {
		errRaw = r.Info.Error
	}
	if len(errRaw) > 0 && string(errRaw) != "null" {
		var s string
		if json.Unmarshal(errRaw, &s) != nil {
			s = string(errRaw)
		}
		q.Error = strings.TrimSpace(s)
	}
	if status != "successful" && q.Error == "" {
		q.Error = status
	}
	var model string
	if len(r.RequestArgs) > 0 {
		if m := reModelArg.FindSubmatch(r.RequestArgs); m != nil {
			model = string(m[1])
		}
	}
	return q, model, nil
}

// guidellmAggregate reads a benchmark's metrics; totals is the number of
// requests the benchmark made (0 when not stated).
func guidellmAggregate(p *parser, path string, metrics map[string]json.RawMessage, totalsRaw json.RawMessage) (*Aggregate, int, error) {
	type dist struct {
		Mean        num            `json:"mean"`
		Median      num            `json:"median"`
		Min         num            `json:"min"`
		Max         num            `json:"max"`
		StdDev      num            `json:"std_dev"`
		Count       num            `json:"count"`
		Percentiles map[string]num `json:"percentiles"`
	}
	get := func(name string) (*dist, error) {
		raw, ok := metrics[name]
		if !ok {
			return nil, nil
		}
		var by struct {
			Successful *dist `json:"successful"`
		}
		if err := p.unmarshal(0, path+".metrics."+name, raw, &by); err != nil {
			return nil, err
		}
		return by.Successful, nil
	}
	// guidellm's percentile names: p001 = 0.1th, p01 = 1st, p05 = 5th,
	// p10 … p99, p999 = 99.9th.
	pct := map[string]float64{"p001": 0.1, "p01": 1, "p05": 5, "p999": 99.9}
	a := &Aggregate{}
	for _, m := range []struct {
		name  string
		to    *map[string]float64
		scale float64
	}{{"time_to_first_token_ms", &a.TTFTMS, 1}, {"inter_token_latency_ms", &a.TPOTMS, 1}, {"request_latency", &a.E2EMS, 1e3}} {
		d, err := get(m.name)
		if err != nil || d == nil {
			if err != nil {
				return nil, 0, err
			}
			continue
		}
		setStat(m.to, "mean", d.Mean.finite(), m.scale)
		setStat(m.to, "p50", d.Median.finite(), m.scale)
		setStat(m.to, "min", d.Min.finite(), m.scale)
		setStat(m.to, "max", d.Max.finite(), m.scale)
		setStat(m.to, "std", d.StdDev.finite(), m.scale)
		for k, v := range d.Percentiles {
			key, ok := statKey(k)
			if x, special := pct[k]; special {
				key, ok = percentKey(x), true
			}
			if ok {
				setStat(m.to, key, v.finite(), m.scale)
			}
		}
	}
	for _, m := range []struct {
		name string
		set  func(float64)
	}{
		{"requests_per_second", func(v float64) { a.RequestsPerS = positive(v) }},
		{"output_tokens_per_second", func(v float64) { a.OutputTokensPerS = positive(v) }},
		{"prompt_token_count", func(v float64) { a.MeanInputTokens = positive(v) }},
		{"output_token_count", func(v float64) { a.MeanOutputTokens = positive(v) }},
	} {
		d, err := get(m.name)
		if err != nil {
			return nil, 0, err
		}
		if d != nil {
			m.set(d.Mean.finite())
		}
	}
	totals := 0
	totalsPath := path + ".request_totals"
	if raw, ok := metrics["request_totals"]; ok {
		totalsRaw, totalsPath = raw, path+".metrics.request_totals"
	}
	if len(totalsRaw) > 0 && string(totalsRaw) != "null" {
		var t struct {
			Successful, Errored, Incomplete, Total num
		}
		if err := p.unmarshal(0, totalsPath, totalsRaw, &t); err != nil {
			return nil, 0, err
		}
		a.Completed, a.Failed = count(t.Successful.finite()), count(t.Errored.finite())+count(t.Incomplete.finite())
		totals = a.Completed + a.Failed
	}
	return a, totals, nil
}
