package measured

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"math"
	"path"
	"strings"
)

// llmperf's token_benchmark_ray.py writes, next to the summary,
// <model>_<in>_<out>_individual_responses.json: a JSON array with one
// object per request, in the order the responses completed,
//
//	{"error_code": null | n, "error_msg": "", "ttft_s": s, "end_to_end_latency_s": s,
//	 "inter_token_latency_s": s, "request_output_throughput_token_per_s": x,
//	 "number_total_tokens": n, "number_output_tokens": n, "number_input_tokens": n}
//
// with no send times. llmperf keeps num_concurrent_requests requests in
// flight (the summary says how many), each client sending its next request
// when the last one finished; the sends are reconstructed that way (see
// closedLoopSends): one after another when the file is read alone, on as
// many lanes as the summary's num_concurrent_requests when the folder is
// read (LoadDir). inter_token_latency_s is not a chunk gap and no chunk
// times are recorded. Array elements are records.

type llmperfResponse struct {
	ErrorCode    json.RawMessage `json:"error_code"`
	ErrorMsg     *string         `json:"error_msg"`
	TTFT         num             `json:"ttft_s"`
	E2E          num             `json:"end_to_end_latency_s"`
	OutputTokens num             `json:"number_output_tokens"`
	InputTokens  num             `json:"number_input_tokens"`
}

func sniffLLMPerfResponses(s *shape) bool {
	return s.kind == kindJSONArray && s.top("ttft_s", "end_to_end_latency_s") && s.anyTop("number_output_tokens", "error_code")
}

func parseLLMPerfResponses(p *parser) (*Run, error) {
	var list []json.RawMessage
	if err := p.unmarshal(0, "", pyJSON(trimBOM(p.data)), &list); err != nil {
		return nil, err
	}
	if len(list) == 0 {
		return nil, p.errf(0, "", "no responses")
	}
	run := &Run{}
	for i, raw := range list {
		rec := i + 1
		var r llmperfResponse
		if err := p.unmarshal(rec, "", raw, &r); err != nil {
			return nil, err
		}
		run.ignoreJSON("", raw, tagsOf(r))
		q := Request{TTFTS: math.NaN(), E2ES: math.NaN()}
		var err error
		if q.InputTokens, err = p.tokens(rec, "number_input_tokens", r.InputTokens); err != nil {
			return nil, err
		}
		if q.OutputTokens, err = p.tokens(rec, "number_output_tokens", r.OutputTokens); err != nil {
			return nil, err
		}
		if code := strings.TrimSpace(string(r.ErrorCode)); code != "" && code != "null" {
			q.Error = "error " + strings.Trim(code, `"`)
		}
		if r.ErrorMsg != nil && strings.TrimSpace(*r.ErrorMsg) != "" {
			q.Error = strings.TrimSpace(strings.TrimPrefix(q.Error+": "+strings.TrimSpace(*r.ErrorMsg), ": "))
		}
		if q.Error == "" {
			if q.TTFTS, err = p.duration(rec, "ttft_s", r.TTFT.finite()); err != nil {
				return nil, err
			}
			if q.E2ES, err = p.duration(rec, "end_to_end_latency_s", r.E2E.finite()); err != nil {
				return nil, err
			}
			if q.TTFTS > q.E2ES {
				return nil, p.errf(rec, "ttft_s", "%v s is after the end of the response (%v s)", q.TTFTS, q.E2ES)
			}
		}
		run.Requests = append(run.Requests, q)
	}
	closedLoopSends(run.Requests, 1)
	run.note("send times are not in the file: reconstructed as llmperf sends, each client its next request when the last completes, in completion order, on 1 client (read the folder with its *_summary.json to use num_concurrent_requests); replay the load as a closed loop, not from these")
	return run, nil
}

// closedLoopSends gives requests, in completion order, send times as c
// clients that each send a request when their last one finished: each
// request goes to the client that is free first.
func closedLoopSends(reqs []Request, c int) {
	c = min(max(c, 1), max(len(reqs), 1)) // more clients than requests: each sends one
	free := make([]float64, c)
	for i := range reqs {
		k := 0
		for j := 1; j < c; j++ {
			if free[j] < free[k] {
				k = j
			}
		}
		reqs[i].SendS = free[k]
		if e := reqs[i].E2ES; !math.IsNaN(e) {
			free[k] += e
		}
	}
}

// llmperfPair is an llmperf result in a folder: the individual responses
// and the summary of one run (same prefix).
type llmperfPair struct{ responses, summary string }

// llmperfRuns lists the llmperf runs in dir.
func llmperfRuns(fsys fs.FS, dir string) []llmperfPair {
	ents, err := fs.ReadDir(fsys, dir)
	if err != nil {
		return nil
	}
	var out []llmperfPair
	for _, e := range ents {
		if prefix, ok := strings.CutSuffix(e.Name(), "_individual_responses.json"); ok && !e.IsDir() {
			sum := path.Join(dir, prefix+"_summary.json")
			if !fileExists(fsys, sum) {
				sum = ""
			}
			out = append(out, llmperfPair{path.Join(dir, e.Name()), sum})
		}
	}
	return out
}

// loadLLMPerf reads an llmperf run: its responses, with the summary's
// concurrency for the send times and the summary as the aggregate.
func loadLLMPerf(fsys fs.FS, pr llmperfPair) (*Run, error) {
	run, err := importFile(fsys, pr.responses, "llmperf")
	if err != nil {
		return nil, err
	}
	if pr.summary == "" {
		return run, nil
	}
	sum, err := importFile(fsys, pr.summary, "llmperf-summary")
	if err != nil {
		return nil, err
	}
	run.Model, run.Aggregate = sum.Model, sum.Aggregate
	c := max(sum.Aggregate.Concurrency, 1)
	for i := range run.Requests {
		run.Requests[i].SendS = 0
	}
	closedLoopSends(run.Requests, c)
	run.Engine.Extra = append([]string{fmt.Sprintf("send times are not in the file: reconstructed as llmperf sends, in completion order, on the summary's %d concurrent clients; replay the load as a closed loop, not from these", c)},
		sum.Engine.Extra...)
	run.Name = strings.TrimSuffix(path.Base(pr.responses), "_individual_responses.json")
	if err := (&parser{format: run.Format, name: pr.responses}).check(run); err != nil {
		return nil, err
	}
	return run, nil
}
