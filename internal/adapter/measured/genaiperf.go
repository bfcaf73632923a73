package measured

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strings"
)

// GenAI-Perf (triton-inference-server/perf_analyzer, genai-perf) keeps
// perf_analyzer's raw export, profile_export.json:
//
//	{"experiments": [{"experiment": {"mode": "concurrency"|"request_rate", "value": N},
//	                  "requests": [{"timestamp": ns, "request_inputs": {"payload": "<request JSON>"},
//	                                "response_timestamps": [ns, …],
//	                                "response_outputs": [{"response": "data: {…}\n\n"}, …]}],
//	                  "window_boundaries": [ns, ns]}],
//	 "version": "", "service_kind": "openai", "endpoint": "v1/chat/completions"}
//
// Clocks are epoch nanoseconds. Each response is one streamed chunk
// (server-sent event); as genai-perf does, the final "[DONE]" and chunks
// without text (the role-only first chunk, a usage-only last chunk) are
// dropped before timing: TTFT runs to the first chunk with text, E2E to the
// last. Token counts are not in the file (genai-perf tokenizes the text):
// they come from a usage object when the server sent one, else the output
// count is the number of text chunks and the input count 0, and a note
// says so. Records are requests, numbered across the file; fields are
// JSON paths.

type genaiExport struct {
	Experiments []struct {
		Experiment struct {
			Mode  string `json:"mode"`
			Value num    `json:"value"`
		} `json:"experiment"`
		Requests []json.RawMessage `json:"requests"`
	} `json:"experiments"`
	ServiceKind string `json:"service_kind"`
	Endpoint    string `json:"endpoint"`
}

type genaiRequest struct {
	Timestamp     num `json:"timestamp"`
	RequestInputs struct {
		Payload json.RawMessage `json:"payload"`
	} `json:"request_inputs"`
	ResponseTimestamps []num                        `json:"response_timestamps"`
	ResponseOutputs    []map[string]json.RawMessage `json:"response_outputs"`
}

func sniffGenAIPerf(s *shape) bool {
	return s.kind == kindJSONObject && s.anyTop("experiments")
}

func parseGenAIPerf(p *parser) (*Run, error) {
	var ex genaiExport
	if err := p.unmarshal(0, "", pyJSON(trimBOM(p.data)), &ex); err != nil {
		return nil, err
	}
	run := &Run{}
	run.ignoreJSON("", p.data, tagsOf(ex))
	if len(ex.Experiments) == 0 {
		return nil, p.errf(0, "experiments", "empty")
	}
	if ex.ServiceKind != "" || ex.Endpoint != "" {
		run.note("service_kind %s, endpoint %s", ex.ServiceKind, ex.Endpoint)
	}
	reqNo, counted, noInput := 0, 0, 0
	var exps struct {
		Experiments []json.RawMessage `json:"experiments"`
	}
	if json.Unmarshal(pyJSON(trimBOM(p.data)), &exps) == nil {
		for _, e := range exps.Experiments {
			run.ignoreJSON("experiments[].", e, keys("experiment", "requests"))
		}
	}
	for ei, e := range ex.Experiments {
		st := StageInfo{Index: ei, Strategy: e.Experiment.Mode}
		switch e.Experiment.Mode {
		case "concurrency":
			st.Concurrency = count(e.Experiment.Value.finite())
		case "request_rate":
			st.RateRPS = positive(e.Experiment.Value.finite())
		}
		run.Stages = append(run.Stages, st)
		for ri, raw := range e.Requests {
			reqNo++
			path := fmt.Sprintf("experiments[%d].requests[%d]", ei, ri)
			q, model, usage, err := genaiRequestOf(p, reqNo, path, raw)
			if err != nil {
				return nil, err
			}
			run.ignoreJSON("experiments[].requests[].", raw, tagsOf(genaiRequest{}))
			if run.Model == "" {
				run.Model = model
			}
			if !usage {
				counted++
				if q.InputTokens == 0 {
					noInput++
				}
			}
			q.Stage = ei
			run.Requests = append(run.Requests, q)
		}
	}
	if counted > 0 {
		run.note("%d requests without a usage object: output tokens counted as text chunks (genai-perf tokenizes the text; chunks may hold several tokens), %d with input tokens unknown (0)", counted, noInput)
	}
	return run, nil
}

// genaiRequestOf reads one request; usage reports whether the server's
// token counts were found.
func genaiRequestOf(p *parser, rec int, path string, raw json.RawMessage) (q Request, model string, usage bool, err error) {
	var r genaiRequest
	if err := p.unmarshal(rec, path, raw, &r); err != nil {
		return q, "", false, err
	}
	q = Request{TTFTS: math.NaN(), E2ES: math.NaN()}
	if !r.Timestamp.Set {
		return q, "", false, p.errf(rec, path+".timestamp", "missing")
	}
	if q.SendS, err = p.instant(rec, path+".timestamp", r.Timestamp.finite()*1e-9); err != nil {
		return q, "", false, err
	}
	if len(r.ResponseTimestamps) != len(r.ResponseOutputs) && len(r.ResponseOutputs) > 0 {
		return q, "", false, p.errf(rec, path+".response_outputs", "has %d entries, response_timestamps has %d", len(r.ResponseOutputs), len(r.ResponseTimestamps))
	}
	model = requestModel(r.RequestInputs.Payload)
	var times []float64
	chunks := 0
	for i, t := range r.ResponseTimestamps {
		text, u, done := true, (*genaiUsage)(nil), false
		if i < len(r.ResponseOutputs) {
			text, u, done = genaiResponse(r.ResponseOutputs[i])
		}
		if u != nil {
			usage = true
			q.InputTokens, q.OutputTokens = u.prompt, u.completion
		}
		if done || !text {
			continue
		}
		at, err := p.duration(rec, fmt.Sprintf("%s.response_timestamps[%d]", path, i), t.finite()*1e-9-q.SendS)
		if err != nil {
			return q, "", false, err
		}
		if !math.IsNaN(at) {
			times = append(times, at)
			chunks++
		}
	}
	if !usage {
		q.OutputTokens = chunks
	}
	if len(times) == 0 {
		q.Error = "no response"
		return q, model, usage, nil
	}
	q.TTFTS, q.E2ES = times[0], times[len(times)-1]
	if len(times) > 1 {
		q.ChunkTimesS = times[1:]
	}
	return q, model, usage, nil
}

type genaiUsage struct{ prompt, completion int }

// genaiResponse reads one response output: whether it carries text, the
// usage it reports, and whether it is the end marker. Unparseable responses
// count as text.
func genaiResponse(out map[string]json.RawMessage) (text bool, usage *genaiUsage, done bool) {
	if raw, ok := out["text_output"]; ok { // Triton's generate endpoint
		var s string
		return json.Unmarshal(raw, &s) != nil || s != "", nil, false
	}
	raw, ok := out["response"]
	if !ok {
		return true, nil, false
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return true, nil, false
	}
	events := 0
	for _, line := range strings.Split(s, "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		data, isEvent := strings.CutPrefix(line, "data:")
		if !isEvent && events == 0 && !strings.HasPrefix(line, "{") {
			continue
		}
		events++
		data = strings.TrimSpace(data)
		if data == "[DONE]" {
			done = true
			continue
		}
		var ev genaiEvent
		if json.Unmarshal(bytes.TrimSpace([]byte(data)), &ev) != nil {
			text = true
			continue
		}
		if u := ev.Usage; u != nil && u.Completion.Set {
			usage = &genaiUsage{count(u.Prompt.finite()), count(u.Completion.finite())}
		}
		for _, c := range ev.Choices {
			if c.Text != "" || c.Delta.Content != "" || c.Delta.ReasoningContent != "" || c.Message.Content != "" {
				text = true
			}
		}
	}
	return text, usage, done && !text
}

// genaiEvent is the part of an OpenAI streamed chunk (or whole response)
// that tells whether it carries text, and its usage.
type genaiEvent struct {
	Choices []struct {
		Text  string `json:"text"`
		Delta struct {
			Content          string `json:"content"`
			ReasoningContent string `json:"reasoning_content"`
		} `json:"delta"`
		Message struct {
			Content string `json:"content"`
		} `json:"message"`
	} `json:"choices"`
	Usage *struct {
		Prompt     num `json:"prompt_tokens"`
		Completion num `json:"completion_tokens"`
	} `json:"usage"`
}
