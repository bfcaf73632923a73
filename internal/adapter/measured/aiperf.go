package measured

import (
	"encoding/json"
	"math"
	"strings"
)

// AIPerf (ai-dynamo/aiperf) writes profile_export.jsonl: one record per
// request, {"metadata": {…}, "metrics": {name: {"value": v, "unit": u}},
// "error": null | {"code", "type", "message"}}. Two generations of
// metadata field names exist: the older writes timestamp_ns (request start,
// epoch ns) and credit_phase, the newer request_start_ns, request_end_ns
// and benchmark_phase (plus was_cancelled). Metrics used: ttft and
// request_latency (start to last response), inter_chunk_latency (the list
// of gaps between streamed chunks), input_sequence_length and
// output_sequence_length (output plus reasoning tokens; else
// output_token_count + reasoning_token_count). Values are converted by
// their unit. Warm-up records are skipped. A record without ttft but with
// request_latency (not streamed) gets TTFT = E2E. Lines are records.

type aiperfRecord struct {
	Metadata struct {
		TimestampNS    num    `json:"timestamp_ns"`
		RequestStartNS num    `json:"request_start_ns"`
		CreditPhase    string `json:"credit_phase"`
		BenchmarkPhase string `json:"benchmark_phase"`
		WasCancelled   bool   `json:"was_cancelled"`
	} `json:"metadata"`
	Metrics map[string]aiperfValue `json:"metrics"`
	Error   *struct {
		Code    num    `json:"code"`
		Type    string `json:"type"`
		Message string `json:"message"`
	} `json:"error"`
}

type aiperfValue struct {
	Value json.RawMessage `json:"value"`
	Unit  string          `json:"unit"`
}

// aiperfUsed are the per-request metrics the reader uses.
var aiperfUsed = keys("ttft", "request_latency", "inter_chunk_latency", "input_sequence_length", "output_sequence_length",
	"output_token_count", "reasoning_token_count", "min_request_timestamp")

func sniffAIPerf(s *shape) bool {
	return s.objects() && s.top("metadata", "metrics") && !s.anyTop("benchmarks")
}

func parseAIPerf(p *parser) (*Run, error) {
	run := &Run{}
	warmup, unstreamed := 0, 0
	err := p.lines(func(line int, b []byte) error {
		var r aiperfRecord
		if err := p.unmarshal(line, "", pyJSON(b), &r); err != nil {
			return err
		}
		run.ignoreJSON("", b, tagsOf(r))
		run.ignoreField("", b, "metadata", tagsOf(r.Metadata))
		for name := range r.Metrics {
			if !aiperfUsed(name) {
				run.ignore("metrics.", name)
			}
		}
		phase := firstNonEmpty(r.Metadata.BenchmarkPhase, r.Metadata.CreditPhase)
		if strings.EqualFold(phase, "warmup") {
			warmup++
			return nil
		}
		q := Request{TTFTS: math.NaN(), E2ES: math.NaN()}
		// The send time: the record's start stamp, else the
		// min_request_timestamp metric (the same instant).
		start := r.Metadata.RequestStartNS
		if !start.Set {
			start = r.Metadata.TimestampNS
		}
		send := start.finite() * 1e-9
		if math.IsNaN(send) {
			v, err := aiperfScalar(p, line, r.Metrics, "min_request_timestamp")
			if err != nil {
				return err
			}
			send = v
		}
		if math.IsNaN(send) {
			return p.errf(line, "metadata.request_start_ns", "missing (and no timestamp_ns)")
		}
		var err error
		if q.SendS, err = p.instant(line, "metadata.request_start_ns", send); err != nil {
			return err
		}
		if q.TTFTS, err = aiperfDuration(p, line, r.Metrics, "ttft"); err != nil {
			return err
		}
		if q.E2ES, err = aiperfDuration(p, line, r.Metrics, "request_latency"); err != nil {
			return err
		}
		in, err := aiperfScalar(p, line, r.Metrics, "input_sequence_length")
		if err != nil {
			return err
		}
		if q.InputTokens, err = p.tokenValue(line, "metrics.input_sequence_length.value", in); err != nil {
			return err
		}
		out, err := aiperfScalar(p, line, r.Metrics, "output_sequence_length")
		if err != nil {
			return err
		}
		if math.IsNaN(out) {
			o, err := aiperfScalar(p, line, r.Metrics, "output_token_count")
			if err != nil {
				return err
			}
			rt, err := aiperfScalar(p, line, r.Metrics, "reasoning_token_count")
			if err != nil {
				return err
			}
			if !math.IsNaN(o) || !math.IsNaN(rt) {
				out = zeroNaN(o) + zeroNaN(rt)
			}
		}
		if q.OutputTokens, err = p.tokenValue(line, "metrics.output_sequence_length.value", out); err != nil {
			return err
		}
		if v, ok := r.Metrics["inter_chunk_latency"]; ok && !math.IsNaN(q.TTFTS) {
			scale, ok := unitSeconds(v.Unit)
			if !ok {
				return p.errf(line, "metrics.inter_chunk_latency.unit", "%q is not a time unit", v.Unit)
			}
			var gaps []num
			if err := p.unmarshal(line, "metrics.inter_chunk_latency.value", v.Value, &gaps); err != nil {
				return err
			}
			g := make([]float64, 0, len(gaps))
			for _, x := range gaps {
				d, err := p.duration(line, "metrics.inter_chunk_latency.value", x.finite()*scale)
				if err != nil {
					return err
				}
				g = append(g, zeroNaN(d))
			}
			q.ChunkTimesS = chunkTimes(q.TTFTS, g)
		}
		if math.IsNaN(q.TTFTS) && !math.IsNaN(q.E2ES) && r.Error == nil {
			q.TTFTS = q.E2ES // not streamed: the first token came with the response
			unstreamed++
		}
		switch {
		case r.Error != nil:
			q.Error = strings.TrimSpace(strings.Trim(r.Error.Type+": "+r.Error.Message, ": "))
			if q.Error == "" {
				q.Error = "error"
			}
		case r.Metadata.WasCancelled:
			q.Error = "cancelled"
		}
		run.Requests = append(run.Requests, q)
		return nil
	})
	if err != nil {
		return nil, err
	}
	if unstreamed > 0 {
		run.note("%d requests without ttft (not streamed): TTFT set to the request latency", unstreamed)
	}
	if warmup > 0 {
		run.note("%d warm-up records skipped", warmup)
	}
	if len(run.Requests) == 0 {
		return nil, p.errf(0, "", "no profiling records")
	}
	return run, nil
}

// aiperfScalar is a metric's value converted to seconds (time units) or
// as is (other units); NaN when absent or null.
func aiperfScalar(p *parser, line int, m map[string]aiperfValue, name string) (float64, error) {
	v, ok := m[name]
	if !ok || len(v.Value) == 0 {
		return math.NaN(), nil
	}
	var n num
	if err := p.unmarshal(line, "metrics."+name+".value", v.Value, &n); err != nil {
		return 0, err
	}
	x := n.finite()
	if s, ok := unitSeconds(v.Unit); ok {
		x *= s
	}
	return x, nil
}

// aiperfDuration is a time metric in seconds, checked.
func aiperfDuration(p *parser, line int, m map[string]aiperfValue, name string) (float64, error) {
	if v, ok := m[name]; ok && len(v.Value) > 0 && string(v.Value) != "null" {
		if _, ok := unitSeconds(v.Unit); !ok {
			return 0, p.errf(line, "metrics."+name+".unit", "%q is not a time unit", v.Unit)
		}
	}
	x, err := aiperfScalar(p, line, m, name)
	if err != nil {
		return 0, err
	}
	return p.duration(line, "metrics."+name+".value", x)
}

func zeroNaN(v float64) float64 {
	if math.IsNaN(v) {
		return 0
	}
	return v
}
