package measured

import (
	"math"
	"strconv"
)

// guidellm-csv is the compact per-request table the reference data derives
// from a guidellm report (guidellm_requests.csv), one row per request:
// benchmark_index, strategy, rate, status (successful, errored,
// incomplete), prompt_tokens, output_tokens, the epoch-second stamps
// targeted_start, queued, request_start, first_token_iteration,
// last_token_iteration, request_end, and error. The send is request_start;
// TTFT and E2E run from it to the first and last token. Rows are records,
// numbered from 1 after the header.

func sniffGuidellmCSV(s *shape) bool {
	return s.hasColumns("benchmark_index", "request_start", "first_token_iteration")
}

func parseGuidellmCSV(p *parser) (*Run, error) {
	t, err := p.readCSV()
	if err != nil {
		return nil, err
	}
	for _, c := range []string{"benchmark_index", "prompt_tokens", "output_tokens", "request_start"} {
		if _, ok := t.col[c]; !ok {
			return nil, p.errf(0, c, "missing column")
		}
	}
	run := &Run{}
	run.ignoreColumns(t, keys("benchmark_index", "strategy", "rate", "status", "prompt_tokens", "output_tokens", "request_start",
		"first_token_iteration", "last_token_iteration", "request_end", "error"))
	stages := map[int]int{} // benchmark index → position in run.Stages
	for i, row := range t.rows {
		rec := i + 1
		bi, err := strconv.Atoi(t.get(row, "benchmark_index"))
		if err != nil || bi < 0 || bi > 1<<20 {
			return nil, p.errf(rec, "benchmark_index", "%q is not a benchmark index", t.get(row, "benchmark_index"))
		}
		if _, ok := stages[bi]; !ok {
			rate, err := p.cellNum(rec, "rate", t.get(row, "rate"))
			if err != nil {
				return nil, err
			}
			st := StageInfo{Index: bi, Strategy: t.get(row, "strategy"), RateRPS: positive(rate)}
			if st.Strategy == "synchronous" {
				st.Concurrency = 1
			}
			stages[bi] = len(run.Stages)
			run.Stages = append(run.Stages, st)
		}
		vals := map[string]float64{}
		for _, c := range []string{"prompt_tokens", "output_tokens", "request_start", "first_token_iteration", "last_token_iteration", "request_end"} {
			if vals[c], err = p.cellNum(rec, c, t.get(row, c)); err != nil {
				return nil, err
			}
		}
		q := Request{Stage: bi, TTFTS: math.NaN(), E2ES: math.NaN()}
		if math.IsNaN(vals["request_start"]) {
			return nil, p.errf(rec, "request_start", "missing")
		}
		if q.SendS, err = p.instant(rec, "request_start", vals["request_start"]); err != nil {
			return nil, err
		}
		if q.InputTokens, err = p.tokenValue(rec, "prompt_tokens", vals["prompt_tokens"]); err != nil {
			return nil, err
		}
		if q.OutputTokens, err = p.tokenValue(rec, "output_tokens", vals["output_tokens"]); err != nil {
			return nil, err
		}
		if q.TTFTS, err = p.duration(rec, "first_token_iteration", vals["first_token_iteration"]-q.SendS); err != nil {
			return nil, err
		}
		last := vals["last_token_iteration"]
		if math.IsNaN(last) {
			last = vals["request_end"]
		}
		if q.E2ES, err = p.duration(rec, "last_token_iteration", last-q.SendS); err != nil {
			return nil, err
		}
		q.Error = t.get(row, "error")
		if s := t.get(row, "status"); q.Error == "" && s != "" && s != "successful" {
			q.Error = s
		}
		run.Requests = append(run.Requests, q)
	}
	if len(run.Requests) == 0 {
		return nil, p.errf(0, "", "no rows")
	}
	return run, nil
}
