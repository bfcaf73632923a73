package workload

import (
	"fmt"
	"io"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// Trace formats (TraceSpec.Format, ParseTrace).
const (
	// FormatAzure is the Azure LLM inference trace (2023 release; the 2024
	// one has the same columns): CSV with the header
	// TIMESTAMP,ContextTokens,GeneratedTokens (any order, any case) and
	// timestamps "2006-01-02 15:04:05.fffffff" with any number of fraction
	// digits (nanoseconds kept, more digits cut), no zone unless a trailing
	// "Z" or "+hh:mm" is given.
	FormatAzure = "azure"
	// FormatMooncake is the Mooncake trace JSONL: {"timestamp": ms,
	// "input_length": n, "output_length": n, "hash_ids": [...]}; hash_ids is
	// optional and, when given, holds one id per MooncakeBlockTokens-token
	// block of the prompt (ceil(input_length/512) of them). Other keys are
	// ignored.
	FormatMooncake = "mooncake"
	// FormatBurstGPT is the BurstGPT CSV: Timestamp (seconds), Model,
	// Request tokens, Response tokens, Total tokens, Log Type (only
	// Timestamp, Request tokens and Response tokens are read). Rows with
	// Response tokens 0 are requests that failed: they are skipped and
	// counted in Trace.SkippedFailed.
	FormatBurstGPT = "burstgpt"
	// FormatCSV is a generic CSV with a header: arrival seconds in
	// arrival_s, timestamp_s or arrival_time; input_tokens, prompt_tokens or
	// input_toks; output_tokens, completion_tokens or output_toks (names in
	// any case; other columns ignored; two names of one column is an error).
	FormatCSV = "csv"
	// FormatJSONL is generic JSONL, one object a line with the key names of
	// FormatCSV (exact case). Other keys are ignored.
	FormatJSONL = "jsonl"
	// FormatLLMServingSim is the workload JSONL of LLMServingSim
	// (casys-kaist/LLMServingSim `workloads/`, also read by its vLLM bench):
	// {"input_toks": n, "output_toks": n, "arrival_time_ns": ns,
	// "input_tok_ids": [...], "output_tok_ids": [...]}. Arrival is
	// arrival_time_ns (nanoseconds) or, when that is absent, arrival_time
	// (seconds, as in the bench's requests.jsonl). Input length is
	// input_toks or, when that is absent, the number of input_tok_ids;
	// output length likewise from output_toks or output_tok_ids. When both
	// a count and its id list are given they must agree. Other keys are
	// ignored.
	FormatLLMServingSim = "llmservingsim"
)

// MooncakeBlockTokens is the prompt block size of Mooncake hash_ids.
const MooncakeBlockTokens = 512

// LLMServingSimBlockTokens is the block size an LLMServingSim workload's
// input_tok_ids are hashed in (HashTokenBlocks): vLLM's default KV block,
// so that a shared prefix is seen to the block the engine can reuse.
const LLMServingSimBlockTokens = 16

// TraceHashTokens is the tokens each TraceRecord.HashIDs entry of format
// covers: MooncakeBlockTokens, LLMServingSimBlockTokens, 0 for a format
// without prompt content.
func TraceHashTokens(format string) int {
	switch format {
	case FormatMooncake:
		return MooncakeBlockTokens
	case FormatLLMServingSim:
		return LLMServingSimBlockTokens
	}
	return 0
}

// maxAbsTimestamp bounds raw timestamps (in seconds; 1e15 s is 30 million
// years), so that differences stay finite.
const maxAbsTimestamp = 1e15

// TraceFormats lists the formats ParseTrace reads.
func TraceFormats() []string {
	return []string{FormatAzure, FormatMooncake, FormatBurstGPT, FormatCSV, FormatJSONL, FormatLLMServingSim}
}

func isTraceFormat(f string) bool { return slices.Contains(TraceFormats(), f) }

// TraceRecord is one request of a trace.
type TraceRecord struct {
	// ArrivalS is seconds since the first request of the trace (>= 0).
	ArrivalS     float64 `json:"arrival_s"`
	InputTokens  int     `json:"input_tokens"`  // >= 1
	OutputTokens int     `json:"output_tokens"` // >= 1
	// HashIDs (mooncake and llmservingsim, nil otherwise) has one id per
	// TraceHashTokens(format)-token block of the prompt (Mooncake's
	// hash_ids; an LLMServingSim line's input_tok_ids hashed by
	// HashTokenBlocks); requests that share their leading ids share that
	// prefix.
	HashIDs []int64 `json:"hash_ids,omitempty"`
	// Stage labels the record (e.g. the benchmark of a multi-benchmark
	// run) so results can be reported per label; 0 by default.
	Stage int `json:"stage,omitempty"`
}

// Trace is a parsed trace with what the parser dropped.
type Trace struct {
	Records []TraceRecord `json:"records"`
	// SkippedFailed counts rows the format marks as failed requests and
	// the parser skipped (BurstGPT rows with Response tokens 0).
	SkippedFailed int `json:"skipped_failed"`
}

// ParseTrace reads a trace in format (one of TraceFormats) from r; name is
// used in errors. Records are sorted by arrival (stable) and the first
// arrival is subtracted, so ArrivalS starts at 0. Every token count is >= 1
// (BurstGPT failures excepted, see FormatBurstGPT). Errors are *ParseError;
// an input without records is ErrEmptyTrace.
func ParseTrace(r io.Reader, format, name string) ([]TraceRecord, error) {
	t, err := ParseTraceDetailed(r, format, name)
	return t.Records, err
}

// ParseTraceInOrder is ParseTrace with the records in the file's order,
// not sorted by arrival: for a reader that pairs them with another file
// line by line (an LLMServingSim run's requests.jsonl and its workload).
// ArrivalS is from the earliest arrival (>= 0).
func ParseTraceInOrder(r io.Reader, format, name string) ([]TraceRecord, error) {
	raws, _, err := parseRaw(r, format, name)
	if err != nil {
		return nil, err
	}
	if len(raws) == 0 {
		return nil, &ParseError{Name: name, Err: ErrEmptyTrace}
	}
	t0 := raws[0].t
	for _, r := range raws {
		t0 = math.Min(t0, r.t)
	}
	return records(raws, t0), nil
}

// ParseTraceDetailed is ParseTrace that also reports skipped rows.
func ParseTraceDetailed(r io.Reader, format, name string) (Trace, error) {
	raws, skipped, err := parseRaw(r, format, name)
	if err != nil {
		return Trace{}, err
	}
	if len(raws) == 0 {
		e := &ParseError{Name: name, Err: ErrEmptyTrace}
		if skipped > 0 {
			e.Err = fmt.Errorf("%w (%d failed requests skipped)", ErrEmptyTrace, skipped)
		}
		return Trace{SkippedFailed: skipped}, e
	}
	return Trace{Records: finish(raws), SkippedFailed: skipped}, nil
}

// parseRaw reads the records of format in the file's order, with the
// rows the format marks as failed and skipped.
func parseRaw(r io.Reader, format, name string) (raws []rawRecord, skipped int, err error) {
	switch format {
	case FormatAzure:
		raws, err = parseAzure(r, name)
	case FormatBurstGPT:
		raws, skipped, err = parseBurstGPT(r, name)
	case FormatCSV:
		raws, err = parseGenericCSV(r, name)
	case FormatMooncake, FormatJSONL, FormatLLMServingSim:
		raws, err = parseJSONL(r, format, name)
	default:
		err = &ParseError{Name: name, Err: fmt.Errorf("%w %q (want one of %s)", ErrUnknownFormat, format, strings.Join(TraceFormats(), ", "))}
	}
	return raws, skipped, err
}

// rawRecord is a record before sorting, with its time in seconds from an
// arbitrary origin.
type rawRecord struct {
	t       float64
	in, out int
	hashIDs []int64
}

// finish sorts the records by time (stable) and makes times relative to the
// first.
func finish(raws []rawRecord) []TraceRecord {
	sort.SliceStable(raws, func(i, j int) bool { return raws[i].t < raws[j].t })
	return records(raws, raws[0].t)
}

// records converts raws, in their order, with times from t0.
func records(raws []rawRecord, t0 float64) []TraceRecord {
	out := make([]TraceRecord, len(raws))
	for i, r := range raws {
		out[i] = TraceRecord{ArrivalS: r.t - t0, InputTokens: r.in, OutputTokens: r.out, HashIDs: r.hashIDs}
	}
	return out
}

// parseCount parses a token count written as an integer (or a float with
// an integral value, as some exports write them) in [min, MaxTokens]; the
// reason is empty on success.
func parseCount(s string, minimum int) (int, string) {
	s = strings.TrimSpace(s)
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		f, ferr := strconv.ParseFloat(s, 64)
		if ferr != nil || math.IsNaN(f) || math.IsInf(f, 0) || f != math.Trunc(f) {
			return 0, quoteShort(s) + " is not an integer"
		}
		if math.Abs(f) > MaxTokens {
			return 0, fmt.Sprintf("%s exceeds %d", quoteShort(s), MaxTokens)
		}
		n = int64(f)
	}
	switch {
	case n < int64(minimum):
		return 0, fmt.Sprintf("must be >= %d, got %d", minimum, n)
	case n > MaxTokens:
		return 0, fmt.Sprintf("%d exceeds %d", n, MaxTokens)
	}
	return int(n), ""
}

// parseSeconds parses a finite time stamp scaled by scale (e.g. 1e-3 for
// milliseconds) to seconds; the reason is empty on success.
func parseSeconds(s string, scale float64) (float64, string) {
	s = strings.TrimSpace(s)
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, quoteShort(s) + " is not a number"
	}
	f *= scale
	if math.Abs(f) > maxAbsTimestamp {
		return 0, fmt.Sprintf("%s is out of range (|t| <= %g s)", quoteShort(s), maxAbsTimestamp)
	}
	return f, ""
}
