package measured

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// `vllm bench sweep serve` starts a server for each combination of its
// --serve-params and runs `vllm bench serve` against it; each run's result
// (run=N.json, and the list of them in summary.json) is the bench result
// with run_number and the serve parameters of that server merged in at the
// top level, under the keys the parameter file used (max_num_seqs, or
// max-num-seqs; dotted keys reach into JSON arguments). The parameters
// Headroom models are read into the stage's Engine (and TP); others are
// kept in the stage's label.

// serve is the serve parameters of one result object.
type serve struct {
	engine Engine
	tp, dp int
	label  string
}

func (s *serve) empty() bool {
	return s.tp == 0 && s.dp == 0 && s.engine.equal(&Engine{})
}

// serveKey normalises a serve parameter name: "--max-num-seqs" and
// "max-num-seqs" are "max_num_seqs".
func serveKey(k string) string {
	return strings.ReplaceAll(strings.TrimLeft(k, "-"), "-", "_")
}

// serveParams reads the serve parameters of a result object (keys).
func serveParams(p *parser, record int, keys map[string]json.RawMessage, used map[string]bool) (serve, error) {
	var s serve
	var parts []string
	names := slices.Sorted(maps.Keys(keys))
	for _, k := range names {
		raw := keys[k]
		key := serveKey(k)
		neg := false
		if b, ok := strings.CutPrefix(key, "no_"); ok && boolServeKeys[b] {
			key, neg = b, true
		}
		set := func(dst *int) error {
			var v num
			if err := p.unmarshal(record, k, raw, &v); err != nil {
				return err
			}
			n, err := p.tokens(record, k, v)
			if err != nil || n > 1<<24 {
				return p.errf(record, k, "%v is not a whole number in range", v.V)
			}
			*dst = n
			return nil
		}
		var err error
		switch key {
		case "run_number":
			var v num
			if err := p.unmarshal(record, k, raw, &v); err != nil {
				return s, err
			}
			parts = append(parts, fmt.Sprintf("run %v", v.V))
			used[k] = true
			continue
		case "max_num_seqs":
			err = set(&s.engine.MaxNumSeqs)
		case "max_num_batched_tokens":
			err = set(&s.engine.MaxNumBatchedTokens)
		case "max_model_len":
			err = set(&s.engine.MaxModelLen)
		case "block_size":
			err = set(&s.engine.BlockSize)
		case "tensor_parallel_size", "tp":
			err = set(&s.tp)
		case "data_parallel_size", "dp":
			err = set(&s.dp)
		case "gpu_memory_utilization":
			var v num
			if err := p.unmarshal(record, k, raw, &v); err != nil {
				return s, err
			}
			if f := v.finite(); !(f > 0 && f <= 1) {
				return s, p.errf(record, k, "%v is not a fraction in (0, 1]", v.V)
			}
			s.engine.GPUMemoryUtilization = v.V
		case "enable_prefix_caching", "enable_chunked_prefill", "async_scheduling":
			b, err := jsonBool(p, record, k, raw)
			if err != nil {
				return s, err
			}
			b = b != neg
			switch key {
			case "enable_prefix_caching":
				s.engine.EnablePrefixCaching = boolp(b)
			case "enable_chunked_prefill":
				s.engine.EnableChunkedPrefill = boolp(b)
			default:
				s.engine.AsyncScheduling = boolp(b)
			}
		case "kv_cache_dtype", "dtype":
			var v string
			if err := p.unmarshal(record, k, raw, &v); err != nil {
				return s, err
			}
			if key == "dtype" {
				s.engine.DType = v
			} else {
				s.engine.KVCacheDType = v
			}
		default:
			continue
		}
		if err != nil {
			return s, err
		}
		used[k] = true
		parts = append(parts, fmt.Sprintf("%s=%s", key, strings.TrimSpace(string(raw))))
	}
	s.label = strings.Join(parts, " ")
	return s, nil
}

// boolServeKeys are the boolean flags vLLM also accepts as --no-<flag>.
var boolServeKeys = map[string]bool{"enable_prefix_caching": true, "enable_chunked_prefill": true, "async_scheduling": true}

// liftServeParams moves serve parameters that every stage shares into the
// run's Engine and TP (a single run=N.json, or a sweep of repeated runs of
// one server), leaving on the stages only what differs.
func liftServeParams(run *Run) {
	if len(run.Stages) == 0 {
		return
	}
	first := run.Stages[0]
	for _, st := range run.Stages[1:] {
		if st.TP != first.TP || st.DP != first.DP || (st.Engine == nil) != (first.Engine == nil) || (st.Engine != nil && !st.Engine.equal(first.Engine)) {
			return
		}
	}
	if first.Engine != nil {
		run.Engine.merge(first.Engine)
	}
	if first.TP > 0 {
		run.TP = first.TP
	}
	if first.DP > 0 {
		run.DP = first.DP
	}
	for i := range run.Stages {
		run.Stages[i].Engine, run.Stages[i].TP, run.Stages[i].DP = nil, 0, 0
	}
}

// merge writes o's known settings over e's; notes are appended.
func (e *Engine) merge(o *Engine) {
	if o == nil {
		return
	}
	if o.MaxNumSeqs > 0 {
		e.MaxNumSeqs = o.MaxNumSeqs
	}
	if o.MaxNumBatchedTokens > 0 {
		e.MaxNumBatchedTokens = o.MaxNumBatchedTokens
	}
	if o.MaxModelLen > 0 {
		e.MaxModelLen = o.MaxModelLen
	}
	if o.BlockSize > 0 {
		e.BlockSize = o.BlockSize
	}
	if o.GPUMemoryUtilization > 0 {
		e.GPUMemoryUtilization = o.GPUMemoryUtilization
	}
	if o.EnablePrefixCaching != nil {
		e.EnablePrefixCaching = o.EnablePrefixCaching
	}
	if o.EnableChunkedPrefill != nil {
		e.EnableChunkedPrefill = o.EnableChunkedPrefill
	}
	if o.AsyncScheduling != nil {
		e.AsyncScheduling = o.AsyncScheduling
	}
	if o.KVCacheDType != "" {
		e.KVCacheDType = o.KVCacheDType
	}
	if o.DType != "" {
		e.DType = o.DType
	}
	if o.Scheduler != "" {
		e.Scheduler = o.Scheduler
	}
	if o.Speculative != nil {
		e.Speculative = o.Speculative
	}
	e.Extra = append(e.Extra, o.Extra...)
}

// equal reports whether two engines record the same settings.
func (e *Engine) equal(o *Engine) bool {
	bp := func(a, b *bool) bool { return (a == nil) == (b == nil) && (a == nil || *a == *b) }
	return e.MaxNumSeqs == o.MaxNumSeqs && e.MaxNumBatchedTokens == o.MaxNumBatchedTokens && e.MaxModelLen == o.MaxModelLen &&
		e.BlockSize == o.BlockSize && e.GPUMemoryUtilization == o.GPUMemoryUtilization && bp(e.EnablePrefixCaching, o.EnablePrefixCaching) &&
		bp(e.EnableChunkedPrefill, o.EnableChunkedPrefill) && bp(e.AsyncScheduling, o.AsyncScheduling) &&
		e.KVCacheDType == o.KVCacheDType && e.DType == o.DType && e.Scheduler == o.Scheduler &&
		(e.Speculative == nil) == (o.Speculative == nil) && (e.Speculative == nil || *e.Speculative == *o.Speculative) && slices.Equal(e.Extra, o.Extra)
}

// jsonBool is a JSON boolean, or a string that spells one ("true",
// "False": `--metadata` writes every value as a string).
func jsonBool(p *parser, record int, k string, raw json.RawMessage) (bool, error) {
	var str string
	if json.Unmarshal(raw, &str) == nil {
		b, err := strconv.ParseBool(strings.TrimSpace(str))
		if err != nil {
			return false, p.errf(record, k, "%q is not true or false", str)
		}
		return b, nil
	}
	var b bool
	if err := p.unmarshal(record, k, raw, &b); err != nil {
		return false, err
	}
	return b, nil
}
