package measured

import (
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"slices"
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
// Forks of the script (InferenceX's benchmark_serving_random.py) write the
// statistics in seconds under keys without _ms (median_ttft, p99_e2el):
// they are read as seconds, checked against the per-request ttfts when the
// file has them (see settlePlain). The --metadata pairs are read by
// benchMetadata. Every top-level key the reader does not use is listed in
// Run.Ignored.
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

// benchRead are the result keys benchResult decodes that the reader uses.
var benchRead = keys("date", "backend", "endpoint_type", "label", "model_id", "model", "tokenizer_id", "dataset_name",
	"request_rate", "burstiness", "max_concurrency", "duration", "completed", "failed", "total_input_tokens",
	"total_output_tokens", "request_throughput", "output_throughput", "input_lens", "output_lens", "ttfts", "itls",
	"errors", "start_times")

// benchDialect is what differs between vLLM's and SGLang's result files.
type benchDialect struct {
	// metrics maps the tool's metric names in <stat>_<metric>_ms keys to
	// the Aggregate field.
	metrics map[string]func(*Aggregate) *map[string]float64
}

// reBenchStat matches a statistic key: <stat>_<metric>_ms, or, as forks
// of benchmark_serving.py write them (InferenceX's
// benchmark_serving_random.py), <stat>_<metric> in seconds.
var reBenchStat = regexp.MustCompile(`^(mean|median|std|min|max|p[0-9]+(?:\.[0-9]+)?)_([a-z0-9_]+?)(_ms)?$`)

var vllmDialect = benchDialect{metrics: map[string]func(*Aggregate) *map[string]float64{
	"ttft": func(a *Aggregate) *map[string]float64 { return &a.TTFTMS },
	"tpot": func(a *Aggregate) *map[string]float64 { return &a.TPOTMS },
	"itl":  func(a *Aggregate) *map[string]float64 { return &a.ITLMS },
	"e2el": func(a *Aggregate) *map[string]float64 { return &a.E2EMS },
}}

func sniffVLLM(s *shape) bool {
	return (s.objects() || s.kind == kindJSONArray) && !sniffSGLangKeys(s) &&
		(s.anyTop("mean_ttft_ms", "ttfts", "mean_e2el_ms", "mean_ttft", "median_ttft", "mean_e2el") || s.top("model_id", "request_throughput"))
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
		used := map[string]bool{}
		agg, plain, err := benchAggregate(p, objRec, &res, keys, d, used)
		if err != nil {
			return nil, err
		}
		reqs, hadStarts, err := benchRequests(p, &res, i, objRec, &reqNo)
		if err != nil {
			return nil, err
		}
		settlePlain(run, i, agg, plain, reqs)
		if res.Completed.Set && agg.Completed == 0 && (len(agg.TTFTMS) > 0 || len(agg.E2EMS) > 0) {
			// vLLM writes 0.0 for every statistic when no request completed.
			agg.TTFTMS, agg.TPOTMS, agg.ITLMS, agg.E2EMS = nil, nil, nil, nil
			run.note("benchmark %d: no request completed; its zero latency statistics are not measurements and are left out", i)
		}
		serve, err := serveParams(p, objRec, keys, used)
		if err != nil {
			return nil, err
		}
		if err := benchMetadata(p, objRec, keys, used, run, i); err != nil {
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
		for k := range keys {
			if !used[k] && !benchRead(k) {
				run.ignore("", k)
			}
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

// benchAggregate reads a result object's statistics; used collects the
// keys it read. Statistics under keys without _ms go to plain, as the file
// wrote them (see settlePlain).
func benchAggregate(p *parser, record int, res *benchResult, keys map[string]json.RawMessage, d benchDialect, used map[string]bool) (a, plain *Aggregate, err error) {
	a = &Aggregate{
		RequestsPerS:     positive(res.ReqThroughput.finite()),
		OutputTokensPerS: positive(res.OutThroughput.finite()),
		Completed:        count(res.Completed.finite()),
		Failed:           count(res.Failed.finite()),
		RateRPS:          positive(res.RequestRate.finite()),
		Concurrency:      count(res.MaxConcurrency.finite()),
	}
	plain = &Aggregate{}
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
				return nil, nil, err
			}
			used[k] = true
			if m[3] == "" {
				setStat(field(plain), stat, v.finite(), 1)
				continue
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
				return nil, nil, err
			}
			used[k] = true
			for _, pv := range pairs {
				if pct := pv[0].finite(); pct >= 0 && pct <= 100 {
					setStat(field(a), percentKey(pct), pv[1].finite(), 1)
				}
			}
		}
	}
	return a, plain, nil
}

// settlePlain moves the statistics a fork wrote under keys without _ms
// into a, in milliseconds, and says so. They are seconds (the unit of the
// script's per-request lists, which the forks keep), unless the
// benchmark's own per-request TTFTs (seconds) show that the mean TTFT is
// in milliseconds. A statistic also under its _ms key keeps that one.
func settlePlain(run *Run, stage int, a, plain *Aggregate, reqs []Request) {
	if plain.empty() {
		return
	}
	scale, why := 1e3, "read as seconds (the unit of the per-request lists)"
	var sum float64
	var n int
	for i := range reqs {
		if q := &reqs[i]; q.Error == "" && !math.IsNaN(q.TTFTS) {
			sum += q.TTFTS
			n++
		}
	}
	if m, ok := plain.TTFTMS["mean"]; ok && n > 0 && m > 0 {
		switch mean := sum / float64(n); {
		case math.Abs(m-mean) <= 0.05*mean:
			why = "seconds, as the mean of the per-request ttfts shows"
		case math.Abs(m/1e3-mean) <= 0.05*mean:
			scale, why = 1, "milliseconds, as the mean of the per-request ttfts (seconds) shows"
		}
	}
	var dup []string
	for _, d := range []struct {
		name     string
		src, dst *map[string]float64
	}{{"ttft", &plain.TTFTMS, &a.TTFTMS}, {"tpot", &plain.TPOTMS, &a.TPOTMS}, {"itl", &plain.ITLMS, &a.ITLMS}, {"e2el", &plain.E2EMS, &a.E2EMS}} {
		for k, v := range *d.src {
			if _, ok := (*d.dst)[k]; ok {
				dup = append(dup, k+"_"+d.name)
				continue
			}
			setStat(d.dst, k, v, scale)
		}
	}
	run.note("benchmark %d: latency statistics under keys without _ms (median_ttft, p99_e2el …): %s, converted to ms", stage, why)
	if len(dup) > 0 {
		slices.Sort(dup)
		run.note("benchmark %d: %s also under _ms keys: those are used", stage, strings.Join(dup, ", "))
	}
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
