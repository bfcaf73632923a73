package workload

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"strings"
)

// jsonObject is one JSONL line, with the parse position for errors.
type jsonObject struct {
	name string
	line int
	m    map[string]json.RawMessage
}

func parseJSONL(r io.Reader, format, name string) ([]rawRecord, error) {
	lr := newLineReader(r, name)
	var raws []rawRecord
	for {
		b, err := lr.nextNonBlank()
		if errors.Is(err, io.EOF) {
			return raws, nil
		}
		if err != nil {
			return nil, err
		}
		if lr.line == 1 {
			b = bytes.TrimPrefix(b, []byte("\ufeff"))
		}
		o := jsonObject{name: name, line: lr.line}
		if err := json.Unmarshal(b, &o.m); err != nil || o.m == nil {
			reason := "not a JSON object"
			if err != nil {
				reason += ": " + err.Error()
			}
			return nil, parseErr(name, lr.line, "", reason)
		}
		var rec rawRecord
		switch format {
		case FormatMooncake:
			rec, err = o.mooncake()
		case FormatJSONL:
			rec, err = o.generic()
		default:
			rec, err = o.llmServingSim()
		}
		if err != nil {
			return nil, err
		}
		raws = append(raws, rec)
	}
}

func (o jsonObject) err(field, reason string) error { return parseErr(o.name, o.line, field, reason) }

// pick returns the key, among aliases, that the object has; "" when none.
// Two of them is an error.
func (o jsonObject) pick(aliases ...string) (string, error) {
	found := ""
	for _, a := range aliases {
		if _, ok := o.m[a]; ok {
			if found != "" {
				return "", o.err(a, fmt.Sprintf("ambiguous: both %s and %s are present", found, a))
			}
			found = a
		}
	}
	return found, nil
}

// missing is the error for a required key that is absent.
func (o jsonObject) missing(aliases ...string) error {
	if len(aliases) == 1 {
		return o.err(aliases[0], "missing")
	}
	return o.err(aliases[0], "missing (want one of "+strings.Join(aliases, ", ")+")")
}

// number returns the literal of a JSON number, or a reason it is not one.
func (o jsonObject) number(key string) (string, error) {
	raw := bytes.TrimSpace(o.m[key])
	switch {
	case len(raw) == 0 || string(raw) == "null":
		return "", o.err(key, "is null, want a number")
	case raw[0] == '"':
		return "", o.err(key, quoteShort(string(raw))+" is a string, want a number")
	case raw[0] == '-' || (raw[0] >= '0' && raw[0] <= '9'):
		return string(raw), nil
	}
	return "", o.err(key, quoteShort(string(raw))+" is not a number")
}

// count reads a required token count (>= 1) under any of aliases.
func (o jsonObject) count(aliases ...string) (int, error) {
	key, err := o.pick(aliases...)
	if err != nil {
		return 0, err
	}
	if key == "" {
		return 0, o.missing(aliases...)
	}
	return o.countAt(key)
}

func (o jsonObject) countAt(key string) (int, error) {
	lit, err := o.number(key)
	if err != nil {
		return 0, err
	}
	n, reason := parseCount(lit, 1)
	if reason != "" {
		return 0, o.err(key, reason)
	}
	return n, nil
}

// seconds reads a time stamp under key, times scale, in seconds.
func (o jsonObject) seconds(key string, scale float64) (float64, error) {
	lit, err := o.number(key)
	if err != nil {
		return 0, err
	}
	t, reason := parseSeconds(lit, scale)
	if reason != "" {
		return 0, o.err(key, reason)
	}
	return t, nil
}

// ids decodes a list of integers under key; present is false when the key
// is absent or null.
func (o jsonObject) ids(key string) (ids []int64, present bool, err error) {
	raw, ok := o.m[key]
	if !ok || string(bytes.TrimSpace(raw)) == "null" {
		return nil, false, nil
	}
	if err := json.Unmarshal(raw, &ids); err != nil {
		return nil, true, o.err(key, "is not a list of integers")
	}
	if ids == nil {
		ids = []int64{}
	}
	return ids, true, nil
}

func (o jsonObject) mooncake() (rawRecord, error) {
	var rec rawRecord
	if _, ok := o.m["timestamp"]; !ok {
		return rec, o.missing("timestamp")
	}
	var err error
	if rec.t, err = o.seconds("timestamp", 1e-3); err != nil {
		return rec, err
	}
	if rec.in, err = o.count("input_length"); err != nil {
		return rec, err
	}
	if rec.out, err = o.count("output_length"); err != nil {
		return rec, err
	}
	ids, ok, err := o.ids("hash_ids")
	if err != nil {
		return rec, err
	}
	if ok {
		want := (rec.in + MooncakeBlockTokens - 1) / MooncakeBlockTokens
		if len(ids) != want {
			return rec, o.err("hash_ids", fmt.Sprintf("has %d ids for %d input tokens, want %d (one per %d-token block)", len(ids), rec.in, want, MooncakeBlockTokens))
		}
		rec.hashIDs = ids
	}
	return rec, nil
}

func (o jsonObject) generic() (rawRecord, error) {
	var rec rawRecord
	key, err := o.pick(arrivalAliases...)
	if err != nil {
		return rec, err
	}
	if key == "" {
		return rec, o.missing(arrivalAliases...)
	}
	if rec.t, err = o.seconds(key, 1); err != nil {
		return rec, err
	}
	if rec.in, err = o.count(inputAliases...); err != nil {
		return rec, err
	}
	rec.out, err = o.count(outputAliases...)
	return rec, err
}

func (o jsonObject) llmServingSim() (rawRecord, error) {
	var rec rawRecord
	var err error
	switch {
	case o.m["arrival_time_ns"] != nil:
		rec.t, err = o.seconds("arrival_time_ns", 1e-9)
	case o.m["arrival_time"] != nil:
		rec.t, err = o.seconds("arrival_time", 1)
	default:
		err = o.missing("arrival_time_ns", "arrival_time")
	}
	if err != nil {
		return rec, err
	}
	if rec.in, err = o.countOrIDs("input_toks", "input_tok_ids"); err != nil {
		return rec, err
	}
	if ids, ok, _ := o.ids("input_tok_ids"); ok {
		// The prompt's content, for prefix caching: requests that share
		// leading blocks of token ids share that prefix.
		rec.hashIDs = HashTokenBlocks(ids, LLMServingSimBlockTokens)
	}
	rec.out, err = o.countOrIDs("output_toks", "output_tok_ids")
	return rec, err
}

// HashTokenBlocks hashes each full block of token ids (FNV-1a over every
// id's eight little-endian bytes, halved to stay positive): one id per
// block, for TraceRecord.HashIDs; nil without a full block. A last
// partial block has none.
func HashTokenBlocks(ids []int64, block int) []int64 {
	if block <= 0 || len(ids) < block {
		return nil
	}
	out := make([]int64, 0, len(ids)/block)
	for i := 0; i+block <= len(ids); i += block {
		h := fnv.New64a()
		var b [8]byte
		for _, id := range ids[i : i+block] {
			for k := range b {
				b[k] = byte(id >> (8 * k))
			}
			h.Write(b[:])
		}
		out = append(out, int64(h.Sum64()>>1))
	}
	return out
}

// countOrIDs reads a token count from countKey or, when absent, as the
// length of the list idsKey; both present must agree.
func (o jsonObject) countOrIDs(countKey, idsKey string) (int, error) {
	ids, haveIDs, err := o.ids(idsKey)
	if err != nil {
		return 0, err
	}
	if _, ok := o.m[countKey]; !ok {
		if !haveIDs {
			return 0, o.err(countKey, "missing (want "+countKey+" or "+idsKey+")")
		}
		if len(ids) == 0 {
			return 0, o.err(idsKey, "is empty, want >= 1 token")
		}
		if len(ids) > MaxTokens {
			return 0, o.err(idsKey, fmt.Sprintf("has more than %d ids", MaxTokens))
		}
		return len(ids), nil
	}
	n, err := o.countAt(countKey)
	if err != nil {
		return 0, err
	}
	if haveIDs && len(ids) != n {
		return 0, o.err(countKey, fmt.Sprintf("is %d but %s has %d ids", n, idsKey, len(ids)))
	}
	return n, nil
}
