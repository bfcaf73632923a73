package measured

import (
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"strings"
)

// vLLM's benchmark client (`vllm bench serve --save-result`, formerly
// benchmarks/benchmark_serving.py) writes one JSON object per run: the
// arguments (date, backend or endpoint_type, label, model_id, tokenizer_id,
// num_prompts, request_rate — a number or "inf" —, burstiness,
// max_concurrency), the totals (duration, completed, failed,
// total_input_tokens, total_output_tokens, request_throughput,
// output_throughput), the latency statistics ({mean,median,std}_<m>_ms and
// p<percent>_<m>_ms for m in ttft, tpot, itl, e2el) and, with
// --save-detailed (always, in older versions), parallel per-request lists:
// input_lens, output_lens, ttfts (seconds), itls (seconds between
// successive streamed chunks after the first: chunks, not tokens),
// generated_texts, errors. --append-result appends further objects.
//
// Times are time.perf_counter() differences, so only spans mean anything,
// and the lists carry no send times (a start_times list, when a version
// writes one, is used). Without them send times are reconstructed (see
// reconstructSends) and a note says so: replay arrivals from the run's
// rate, not from these.
//
// Records in errors: a request, numbered across the file, for a bad list
// entry; a result object (the line of an appended file; 0 when the file
// holds one) for anything else.

// benchResult is one result object of vLLM's or SGLang's bench client.
type benchResult struct {
	Date           string `json:"date"`
	Backend        string `json:"backend"`
	EndpointType   string `json:"endpoint_type"`
	Label          string `json:"label"`
	ModelID        string `json:"model_id"`
	Model          string `json:"model"`
	TokenizerID    string `json:"tokenizer_id"`
	DatasetName    string `json:"dataset_name"`
	NumPrompts     num    `json:"num_prompts"`
	RequestRate    num    `json:"request_rate"`
	Burstiness     num    `json:"burstiness"`
	MaxConcurrency num    `json:"max_concurrency"`
	Duration       num    `json:"duration"`
	Completed      num    `json:"completed"`
	Failed         num    `json:"failed"`
	TotalInput     num    `json:"total_input_tokens"`
	TotalOutput    num    `json:"total_output_tokens"`
	ReqThroughput  num    `json:"request_throughput"`
	OutThroughput  num    `json:"output_throughput"`

	InputLens  []json.RawMessage `json:"input_lens"`
	OutputLens []json.RawMessage `json:"output_lens"`
	TTFTs      []json.RawMessage `json:"ttfts"`
	ITLs       []json.RawMessage `json:"itls"`
	Errors     []json.RawMessage `json:"errors"`
	StartTimes []json.RawMessage `json:"start_times"`
}

// benchDialect is what differs between vLLM's and SGLang's result files.
type benchDialect struct {
	// metrics maps the tool's metric names in <stat>_<metric>_ms keys to
	// the Aggregate field.
	metrics map[string]func(*Aggregate) *map[string]float64
}

var reBenchStat = regexp.MustCompile(`^(mean|median|std|min|max|p[0-9]+(?:\.[0-9]+)?)_([a-z0-9_]+?)_ms$`)

var vllmDialect = benchDialect{metrics: map[string]func(*Aggregate) *map[string]float64{
	"ttft": func(a *Aggregate) *map[string]float64 { return &a.TTFTMS },
	"tpot": func(a *Aggregate) *map[string]float64 { return &a.TPOTMS },
	"itl":  func(a *Aggregate) *map[string]float64 { return &a.ITLMS },
	"e2el": func(a *Aggregate) *map[string]float64 { return &a.E2EMS },
}}

func sniffVLLM(s *shape) bool {
	return (s.objects() || s.kind == kindJSONArray) && !sniffSGLangKeys(s) &&
		(s.anyTop("mean_ttft_ms", "ttfts", "mean_e2el_ms") || s.top("model_id", "request_throughput"))
}

func parseVLLMBench(p *parser) (*Run, error) { return parseBenchResults(p, vllmDialect) }

// parseBenchResults reads one or more result objects (vLLM or SGLang),
// each a stage when there are several.
func parseBenchResults(p *parser, d benchDialect) (*Run, error) {
	run := &Run{}
	var raws []json.RawMessage
	if err := p.jsonValues(func(_ int, raw json.RawMessage) error {
		raws = append(raws, raw)
		return nil
	}); err != nil {
		return nil, err
	}
	sweep := false
	if len(raws) == 1 && firstByte(raws[0]) == '[' {
		// `vllm bench sweep serve`'s summary.json: a list of run objects.
		var list []json.RawMessage
		if err := p.unmarshal(0, "", raws[0], &list); err != nil {
			return nil, err
		}
		if len(list) == 0 {
			return nil, p.errf(0, "", "empty list of runs")
		}
		raws, sweep = list, true
	}
	reqNo := 0   // requests so far, for error records
	offset := 0. // where the next stage's reconstructed sends start
	reconstructed := false
	for i, raw := range raws {
		objRec := i + 1 // errors about a whole result name the result…
		if len(raws) == 1 {
			objRec = 0 // …unless it is the whole file
		}
		var res benchResult
		if err := p.unmarshal(objRec, "", raw, &res); err != nil {
			return nil, err
		}
		var keys map[string]json.RawMessage
		if err := p.unmarshal(objRec, "", raw, &keys); err != nil {
			return nil, err
		}
		agg, err := benchAggregate(p, objRec, &res, keys, d)
		if err != nil {
			return nil, err
		}
		if res.Completed.Set && agg.Completed == 0 && (len(agg.TTFTMS) > 0 || len(agg.E2EMS) > 0) {
			// vLLM writes 0.0 for every statistic when no request completed.
			agg.TTFTMS, agg.TPOTMS, agg.ITLMS, agg.E2EMS = nil, nil, nil, nil
			run.note("benchmark %d: no request completed; its zero latency statistics are not measurements and are left out", i)
		}
		serve, err := serveParams(p, objRec, keys)
		if err != nil {
			return nil, err
		}
		stage := StageInfo{Index: i, Strategy: benchStrategy(&res), RateRPS: agg.RateRPS, Concurrency: agg.Concurrency, Label: serve.label}
		if !serve.empty() {
			stage.Engine, stage.TP = &serve.engine, serve.tp
		}
		if agg.empty() {
			agg = nil
		}
		if len(raws) == 1 {
			run.Aggregate = agg
		} else {
			stage.Aggregate = agg
		}
		run.Stages = append(run.Stages, stage)
		if run.Model == "" {
			run.Model = firstNonEmpty(res.ModelID, res.Model)
		}
		if i == 0 {
			for _, kv := range [][2]string{{"backend", firstNonEmpty(res.Backend, res.EndpointType)}, {"tokenizer", res.TokenizerID},
				{"dataset", res.DatasetName}, {"date", res.Date}, {"label", res.Label}} {
				if kv[1] != "" {
					run.note("%s: %s", kv[0], kv[1])
				}
			}
		}
		reqs, hadStarts, err := benchRequests(p, &res, i, objRec, &reqNo)
		if err != nil {
			return nil, err
		}
		if len(reqs) > 0 && !hadStarts {
			reconstructSends(reqs, &res, offset)
			reconstructed = true
		}
		for _, q := range reqs {
			if !math.IsNaN(q.E2ES) {
				offset = max(offset, q.SendS+q.E2ES)
			}
		}
		run.Requests = append(run.Requests, reqs...)
	}
	liftServeParams(run)
	if len(run.Stages) == 1 && run.Stages[0].Strategy == "" && run.Stages[0].RateRPS == 0 && run.Stages[0].Concurrency == 0 {
		run.Stages = nil
	}
	if sweep {
		run.note("vllm bench sweep summary: one stage per run, each with the serve parameters it was started with")
	}
	if reconstructed {
		run.note("send times are not in the file: reconstructed in request order (one after another at max_concurrency 1, else spread evenly over the benchmark's duration); use the stated rate, not these, to replay arrivals")
	}
	return run, nil
}

// benchAggregate reads a result object's statistics.
func benchAggregate(p *parser, record int, res *benchResult, keys map[string]json.RawMessage, d benchDialect) (*Aggregate, error) {
	a := &Aggregate{
		RequestsPerS:     positive(res.ReqThroughput.finite()),
		OutputTokensPerS: positive(res.OutThroughput.finite()),
		Completed:        count(res.Completed.finite()),
		Failed:           count(res.Failed.finite()),
		RateRPS:          positive(res.RequestRate.finite()),
		Concurrency:      count(res.MaxConcurrency.finite()),
	}
	if c := res.Completed.finite(); c > 0 {
		a.MeanInputTokens = positive(res.TotalInput.finite() / c)
		a.MeanOutputTokens = positive(res.TotalOutput.finite() / c)
	}
	for k, raw := range keys {
		if m := reBenchStat.FindStringSubmatch(k); m != nil {
			field, ok := d.metrics[m[2]]
			if !ok {
				continue
			}
			stat, ok := statKey(m[1])
			if !ok {
				continue
			}
			var v num
			if err := p.unmarshal(record, k, raw, &v); err != nil {
				return nil, err
			}
			setStat(field(a), stat, v.finite(), 1)
			continue
		}
		// Some versions keep percentiles as [[percent, value], …] lists.
		if metric, ok := strings.CutPrefix(k, "percentiles_"); ok {
			metric = strings.TrimSuffix(metric, "_ms")
			field, ok := d.metrics[metric]
			if !ok {
				continue
			}
			var pairs [][2]num
			if err := p.unmarshal(record, k, raw, &pairs); err != nil {
				return nil, err
			}
			for _, pv := range pairs {
				if pct := pv[0].finite(); pct >= 0 && pct <= 100 {
					setStat(field(a), percentKey(pct), pv[1].finite(), 1)
				}
			}
		}
	}
	return a, nil
}

// benchStrategy names the load of a vLLM or SGLang run.
func benchStrategy(res *benchResult) string {
	r := res.RequestRate
	switch {
	case r.Set && !math.IsInf(r.V, 0) && r.V > 0:
		if b := res.Burstiness.finite(); !math.IsNaN(b) && b != 1 {
			return fmt.Sprintf("gamma(burstiness=%g)", b)
		}
		return "poisson"
	case r.Set || res.MaxConcurrency.Set:
		return "burst" // all requests at once, up to max_concurrency in flight
	}
	return ""
}

// benchRequests reads the per-request lists of one result object; reqNo
// counts requests across the file (error records); objRec is the result's
// record. hadStarts is whether the
// file gave send times.
func benchRequests(p *parser, res *benchResult, stage, objRec int, reqNo *int) (reqs []Request, hadStarts bool, err error) {
	n := len(res.TTFTs)
	if n == 0 {
		return nil, false, nil
	}
	for _, l := range []struct {
		name string
		list []json.RawMessage
		opt  bool
	}{{"input_lens", res.InputLens, false}, {"output_lens", res.OutputLens, false}, {"itls", res.ITLs, true}, {"errors", res.Errors, true}, {"start_times", res.StartTimes, true}} {
		if len(l.list) != n && (!l.opt || len(l.list) > 0) {
			return nil, false, p.errf(objRec, l.name, "has %d entries, ttfts has %d", len(l.list), n)
		}
	}
	hadStarts = len(res.StartTimes) == n
	reqs = make([]Request, n)
	for i := range n {
		*reqNo++
		rec := *reqNo
		q := &reqs[i]
		q.Stage = stage
		var in, out, ttft num
		if err := p.unmarshal(rec, "input_lens", res.InputLens[i], &in); err != nil {
			return nil, false, err
		}
		if err := p.unmarshal(rec, "output_lens", res.OutputLens[i], &out); err != nil {
			return nil, false, err
		}
		if err := p.unmarshal(rec, "ttfts", res.TTFTs[i], &ttft); err != nil {
			return nil, false, err
		}
		if q.InputTokens, err = p.tokens(rec, "input_lens", in); err != nil {
			return nil, false, err
		}
		if q.OutputTokens, err = p.tokens(rec, "output_lens", out); err != nil {
			return nil, false, err
		}
		if q.TTFTS, err = p.duration(rec, "ttfts", ttft.finite()); err != nil {
			return nil, false, err
		}
		var gaps []num
		if len(res.ITLs) == n {
			if err := p.unmarshal(rec, "itls", res.ITLs[i], &gaps); err != nil {
				return nil, false, err
			}
		}
		g := make([]float64, 0, len(gaps))
		for _, v := range gaps {
			d, err := p.duration(rec, "itls", v.finite())
			if err != nil {
				return nil, false, err
			}
			if !math.IsNaN(d) {
				g = append(g, d)
			}
		}
		if len(res.Errors) == n {
			var e *string
			if err := p.unmarshal(rec, "errors", res.Errors[i], &e); err != nil {
				return nil, false, err
			}
			if e != nil {
				q.Error = strings.TrimSpace(*e)
			}
		}
		if hadStarts {
			var st num
			if err := p.unmarshal(rec, "start_times", res.StartTimes[i], &st); err != nil {
				return nil, false, err
			}
			if q.SendS, err = p.instant(rec, "start_times", st.finite()); err != nil {
				return nil, false, err
			}
			if math.IsNaN(q.SendS) {
				return nil, false, p.errf(rec, "start_times", "missing")
			}
		}
		if q.Error == "" && q.OutputTokens == 0 && (q.TTFTS == 0 || math.IsNaN(q.TTFTS)) {
			q.Error = "failed (no output)" // the client's failed requests: ttft 0, no tokens
		}
		if q.Error != "" {
			q.TTFTS, q.E2ES = math.NaN(), math.NaN()
			continue
		}
		q.ChunkTimesS = chunkTimes(q.TTFTS, g)
		q.E2ES = q.TTFTS
		if k := len(q.ChunkTimesS); k > 0 {
			q.E2ES = q.ChunkTimesS[k-1] // latency is the last chunk's arrival
		}
	}
	return reqs, hadStarts, nil
}

// reconstructSends gives requests without send times ones that keep their
// order (the client gathers its tasks in send order): back to back when at
// most one request was in flight, else spread evenly so that the last
// request ends at the benchmark's duration. Sends start at offset.
func reconstructSends(reqs []Request, res *benchResult, offset float64) {
	e2e := func(q *Request) float64 {
		if math.IsNaN(q.E2ES) {
			return 0
		}
		return q.E2ES
	}
	if res.MaxConcurrency.finite() == 1 {
		t := offset
		for i := range reqs {
			reqs[i].SendS = t
			t += e2e(&reqs[i])
		}
		return
	}
	n := len(reqs)
	span := res.Duration.finite() - e2e(&reqs[n-1])
	if math.IsNaN(span) || span < 0 || n < 2 {
		span = 0
	}
	for i := range reqs {
		reqs[i].SendS = offset
		if n > 1 {
			reqs[i].SendS += span * float64(i) / float64(n-1)
		}
	}
}

func firstNonEmpty(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}
