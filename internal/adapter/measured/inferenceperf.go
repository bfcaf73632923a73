package measured

import (
	"encoding/json"
	"math"
	"strings"
)

// inference-perf (kubernetes-sigs/inference-perf) writes, with
// report.request_lifecycle.per_request enabled, per-request lifecycle
// records: a JSON array (or JSON Lines) of
//
//	{"stage_id": 0, "start_time": s, "end_time": s, "scheduled_time": s,
//	 "request": "<request body>", "response": "<response body>",
//	 "info": {"input_tokens": n, "output_tokens": n, "output_token_times": [s, …]},
//	 "error": null | {"error_type": "…", "error_msg": "…"}}
//
// (request_data / response_data are accepted for request / response).
// Times are the client's time.perf_counter() seconds: only differences
// mean anything. output_token_times holds one stamp per streamed chunk
// (chunks, not tokens): TTFT is the first minus start_time, E2E the last
// (else end_time) minus start_time. Array elements (or lines) are records.

type ipRecord struct {
	StageID   num             `json:"stage_id"`
	StartTime num             `json:"start_time"`
	EndTime   num             `json:"end_time"`
	Request   json.RawMessage `json:"request"`
	ReqData   json.RawMessage `json:"request_data"`
	Info      struct {
		InputTokens      num   `json:"input_tokens"`
		OutputTokens     num   `json:"output_tokens"`
		OutputTokenTimes []num `json:"output_token_times"`
	} `json:"info"`
	Error json.RawMessage `json:"error"`
}

func sniffInferencePerf(s *shape) bool {
	return s.isJSON() && s.top("start_time", "end_time", "info")
}

func parseInferencePerf(p *parser) (*Run, error) {
	run := &Run{}
	stages := map[int]bool{}
	add := func(rec int, raw json.RawMessage) error {
		var r ipRecord
		if err := p.unmarshal(rec, "", raw, &r); err != nil {
			return err
		}
		run.ignoreJSON("", raw, tagsOf(r))
		run.ignoreField("", raw, "info", tagsOf(r.Info))
		q := Request{TTFTS: math.NaN(), E2ES: math.NaN()}
		if !r.StartTime.Set {
			return p.errf(rec, "start_time", "missing")
		}
		var err error
		if q.SendS, err = p.instant(rec, "start_time", r.StartTime.finite()); err != nil {
			return err
		}
		if q.InputTokens, err = p.tokens(rec, "info.input_tokens", r.Info.InputTokens); err != nil {
			return err
		}
		if q.OutputTokens, err = p.tokens(rec, "info.output_tokens", r.Info.OutputTokens); err != nil {
			return err
		}
		var times []float64
		for _, t := range r.Info.OutputTokenTimes {
			d, err := p.duration(rec, "info.output_token_times", t.finite()-q.SendS)
			if err != nil {
				return err
			}
			if !math.IsNaN(d) {
				times = append(times, d)
			}
		}
		if len(times) > 0 {
			q.TTFTS, q.E2ES = times[0], times[len(times)-1]
			if len(times) > 1 {
				q.ChunkTimesS = times[1:]
			}
		} else if r.EndTime.Set && q.OutputTokens > 0 {
			// Not streamed: the whole response came at end_time.
			if q.E2ES, err = p.duration(rec, "end_time", r.EndTime.finite()-q.SendS); err != nil {
				return err
			}
			q.TTFTS = q.E2ES
		}
		if len(r.Error) > 0 && string(r.Error) != "null" {
			var e struct {
				Type string `json:"error_type"`
				Msg  string `json:"error_msg"`
			}
			var s string
			switch {
			case json.Unmarshal(r.Error, &s) == nil:
				q.Error = s
			case json.Unmarshal(r.Error, &e) == nil:
				q.Error = strings.Trim(e.Type+": "+e.Msg, ": ")
			default:
				q.Error = string(r.Error)
			}
			if q.Error == "" {
				q.Error = "error"
			}
		}
		if r.StageID.Set {
			st, err := p.tokenValue(rec, "stage_id", r.StageID.V)
			if err != nil || st > 1<<20 {
				return p.errf(rec, "stage_id", "%v is not a stage index", r.StageID.V)
			}
			q.Stage = st
			stages[st] = true
		}
		if run.Model == "" {
			run.Model = requestModel(firstRaw(r.Request, r.ReqData))
		}
		run.Requests = append(run.Requests, q)
		return nil
	}
	data := trimBOM(p.data)
	if first := firstByte(data); first == '[' {
		var list []json.RawMessage
		if err := p.unmarshal(0, "", pyJSON(data), &list); err != nil {
			return nil, err
		}
		for i, raw := range list {
			if err := add(i+1, raw); err != nil {
				return nil, err
			}
		}
	} else if err := p.lines(func(line int, b []byte) error { return add(line, pyJSON(b)) }); err != nil {
		return nil, err
	}
	if len(run.Requests) == 0 {
		return nil, p.errf(0, "", "no requests")
	}
	if len(stages) > 1 {
		for i := range run.Requests {
			if stages[run.Requests[i].Stage] {
				run.Stages = append(run.Stages, StageInfo{Index: run.Requests[i].Stage})
				delete(stages, run.Requests[i].Stage)
			}
		}
	}
	run.note("times are the client's perf_counter: send times are relative, output_token_times are per streamed chunk")
	return run, nil
}

// requestModel is the "model" of a request body given as a JSON object or
// a JSON string holding one.
func requestModel(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		raw = json.RawMessage(s)
	}
	var body struct {
		Model string `json:"model"`
	}
	if json.Unmarshal(raw, &body) != nil {
		return ""
	}
	return body.Model
}

func firstRaw(rs ...json.RawMessage) json.RawMessage {
	for _, r := range rs {
		if len(r) > 0 && string(r) != "null" {
			return r
		}
	}
	return nil
}

// firstByte is the first non-space byte of b (0 when none).
func firstByte(b []byte) byte {
	for _, c := range b {
		switch c {
		case ' ', '\t', '\r', '\n':
			continue
		}
		return c
	}
	return 0
}
