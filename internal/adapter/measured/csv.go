package measured

import (
	"maps"
	"math"
	"slices"
	"strconv"
)

// The plain CSV format ("csv") is Headroom's own per-request table, for
// results from any tool. A header row names the columns, in any order and
// case; one row per request follows:
//
//	send_s        send time, seconds on any clock (send_time_s also accepted)
//	input_tokens  prompt tokens
//	output_tokens generated tokens
//	ttft_ms       send to first token, milliseconds (empty: failed)
//	e2e_ms        send to last token, milliseconds (empty: failed)
//	error         optional; non-empty marks a failed request
//	stage         optional; the benchmark index (Request.Stage)
//
// Example:
//
//	send_s,input_tokens,output_tokens,ttft_ms,e2e_ms,error
//	0.000,512,128,41.2,1650.3,
//	0.105,498,128,,,timeout
//
// Rows are records, numbered from 1 after the header.

func sniffPlainCSV(s *shape) bool {
	return (s.hasColumns("send_s") || s.hasColumns("send_time_s")) &&
		s.hasColumns("input_tokens", "output_tokens", "ttft_ms", "e2e_ms")
}

func parsePlainCSV(p *parser) (*Run, error) {
	t, err := p.readCSV()
	if err != nil {
		return nil, err
	}
	send := t.first("send_s", "send_time_s")
	if send == "" {
		return nil, p.errf(0, "send_s", "missing column")
	}
	for _, c := range []string{"input_tokens", "output_tokens", "ttft_ms", "e2e_ms"} {
		if _, ok := t.col[c]; !ok {
			return nil, p.errf(0, c, "missing column")
		}
	}
	run := &Run{}
	run.ignoreColumns(t, keys("send_s", "send_time_s", "input_tokens", "output_tokens", "ttft_ms", "e2e_ms", "error", "stage"))
	stages := map[int]bool{}
	for i, row := range t.rows {
		rec := i + 1
		v := map[string]float64{}
		for _, c := range []string{send, "input_tokens", "output_tokens", "ttft_ms", "e2e_ms"} {
			if v[c], err = p.cellNum(rec, c, t.get(row, c)); err != nil {
				return nil, err
			}
		}
		q := Request{Error: t.get(row, "error")}
		if math.IsNaN(v[send]) {
			return nil, p.errf(rec, send, "missing")
		}
		if q.SendS, err = p.instant(rec, send, v[send]); err != nil {
			return nil, err
		}
		if q.InputTokens, err = p.tokenValue(rec, "input_tokens", v["input_tokens"]); err != nil {
			return nil, err
		}
		if q.OutputTokens, err = p.tokenValue(rec, "output_tokens", v["output_tokens"]); err != nil {
			return nil, err
		}
		if q.TTFTS, err = p.duration(rec, "ttft_ms", v["ttft_ms"]/1e3); err != nil {
			return nil, err
		}
		if q.E2ES, err = p.duration(rec, "e2e_ms", v["e2e_ms"]/1e3); err != nil {
			return nil, err
		}
		if s := t.get(row, "stage"); s != "" {
			if q.Stage, err = strconv.Atoi(s); err != nil || q.Stage < 0 || q.Stage > 1<<20 {
				return nil, p.errf(rec, "stage", "%q is not a stage index", s)
			}
			stages[q.Stage] = true
		}
		run.Requests = append(run.Requests, q)
	}
	if len(run.Requests) == 0 {
		return nil, p.errf(0, "", "no rows")
	}
	if len(stages) > 1 {
		for _, i := range slices.Sorted(maps.Keys(stages)) {
			run.Stages = append(run.Stages, StageInfo{Index: i})
		}
	}
	return run, nil
}
