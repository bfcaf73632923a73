package measured

import "math"

// The llmservingsim format is an LLMServingSim bench requests.jsonl on its
// own (LoadLLMServingSim reads the whole run directory, with meta.json's
// engine settings): one JSON object per line with request_id, input_toks,
// output_toks, arrival_time (epoch seconds at the frontend) and the
// engine's monotonic-clock stamps queued_ts, scheduled_ts, first_token_ts,
// last_token_ts. The two clocks are aligned by taking send times from
// arrival_time (relative to the first request) and latencies within the
// engine clock: TTFT = first_token_ts − queued_ts, E2E = last_token_ts −
// queued_ts, as the bench's own summary reports them. Lines are records.

func sniffLLMServingSim(s *shape) bool {
	return s.objects() && s.top("arrival_time") && s.anyTop("first_token_ts", "queued_ts")
}

func parseLLMServingSimJSONL(p *parser) (*Run, error) {
	run := &Run{ServerSide: true}
	err := p.lines(func(line int, b []byte) error {
		var q llmsRequest
		if err := p.unmarshal(line, "", pyJSON(b), &q); err != nil {
			return err
		}
		run.ignoreJSON("", b, tagsOf(q))
		if q.Arrival == nil {
			return p.errf(line, "arrival_time", "is missing")
		}
		req := q.request()
		var err error
		if req.SendS, err = p.instant(line, "arrival_time", *q.Arrival); err != nil {
			return err
		}
		if req.InputTokens, err = p.tokenValue(line, "input_toks", float64(q.InputToks)); err != nil {
			return err
		}
		if req.OutputTokens, err = p.tokenValue(line, "output_toks", float64(q.OutputToks)); err != nil {
			return err
		}
		if req.TTFTS, err = p.duration(line, "first_token_ts", req.TTFTS); err != nil {
			return err
		}
		if req.E2ES, err = p.duration(line, "last_token_ts", req.E2ES); err != nil {
			return err
		}
		run.Requests = append(run.Requests, req)
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(run.Requests) == 0 {
		return nil, p.errf(0, "", "no requests")
	}
	run.note("engine-side timestamps: TTFT and E2E measured from queued_ts (no network)")
	return run, nil
}

// request converts one requests.jsonl line (shared by LoadLLMServingSim).
func (q *llmsRequest) request() Request {
	req := Request{InputTokens: q.InputToks, OutputTokens: q.OutputToks, TTFTS: math.NaN(), E2ES: math.NaN()}
	if q.Arrival != nil {
		req.SendS = *q.Arrival
	}
	if q.Queued != nil && q.FirstToken != nil && q.LastToken != nil {
		req.TTFTS = *q.FirstToken - *q.Queued
		req.E2ES = *q.LastToken - *q.Queued
	} else {
		req.Error = "no engine timestamps"
	}
	return req
}
