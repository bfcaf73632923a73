package workload

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"time"
)

// Column names of the CSV formats (matched case-insensitively).
var (
	arrivalAliases = []string{"arrival_s", "timestamp_s", "arrival_time"}
	inputAliases   = []string{"input_tokens", "prompt_tokens", "input_toks"}
	outputAliases  = []string{"output_tokens", "completion_tokens", "output_toks"}
)

// csvColumns is where a CSV trace keeps its three values.
type csvColumns struct{ arrival, in, out int }

func (t *csvTable) columns(arrival, in, out []string) (csvColumns, error) {
	var c csvColumns
	var err error
	if c.arrival, err = t.column(arrival...); err != nil {
		return c, err
	}
	if c.in, err = t.column(in...); err != nil {
		return c, err
	}
	c.out, err = t.column(out...)
	return c, err
}

// eachRow calls fn with every row and its line number until the end.
func (t *csvTable) eachRow(fn func(fields []string, line int) error) error {
	for {
		fields, err := t.row()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		if err := fn(fields, t.lr.line); err != nil {
			return err
		}
	}
}

// counts parses the input and output token counts of a row (both >= 1).
func (t *csvTable) counts(fields []string, c csvColumns, line int) (in, out int, err error) {
	in, reason := parseCount(fields[c.in], 1)
	if reason != "" {
		return 0, 0, parseErr(t.lr.name, line, t.names[c.in], reason)
	}
	out, reason = parseCount(fields[c.out], 1)
	if reason != "" {
		return 0, 0, parseErr(t.lr.name, line, t.names[c.out], reason)
	}
	return in, out, nil
}

func parseAzure(r io.Reader, name string) ([]rawRecord, error) {
	t, err := readCSVHeader(r, name)
	if err != nil {
		return nil, err
	}
	c, err := t.columns([]string{"TIMESTAMP"}, []string{"ContextTokens"}, []string{"GeneratedTokens"})
	if err != nil {
		return nil, err
	}
	var raws []rawRecord
	var baseSec, baseNsec int64 // the first row's time: others are kept relative to it, in ns
	err = t.eachRow(func(f []string, line int) error {
		sec, nsec, reason := parseAzureTime(f[c.arrival])
		if reason != "" {
			return parseErr(name, line, t.names[c.arrival], reason)
		}
		if len(raws) == 0 {
			baseSec, baseNsec = sec, nsec
		}
		if d := sec - baseSec; d > maxAzureSpanS || d < -maxAzureSpanS {
			return parseErr(name, line, t.names[c.arrival], fmt.Sprintf("%s is more than %d years from the first row", quoteShort(f[c.arrival]), maxAzureSpanS/(365*86400)))
		}
		in, out, err := t.counts(f, c, line)
		if err != nil {
			return err
		}
		ns := (sec-baseSec)*1e9 + (nsec - baseNsec)
		raws = append(raws, rawRecord{t: float64(ns) / 1e9, in: in, out: out})
		return nil
	})
	return raws, err
}

// maxAzureSpanS bounds the distance between Azure time stamps, so that it
// fits in int64 nanoseconds (about 285 years).
const maxAzureSpanS int64 = 9_000_000_000

// parseAzureTime parses "2023-11-16 18:15:46.6805900" (also with "T", any
// number of fraction digits, and an optional "Z" or "+hh:mm" zone) into
// Unix seconds and nanoseconds. time.Parse is used as a pure function.
func parseAzureTime(s string) (sec, nsec int64, reason string) {
	bad := quoteShort(s) + ` is not a time like "2023-11-16 18:15:46.6805900"`
	s = strings.TrimSpace(s)
	if len(s) < 19 {
		return 0, 0, bad
	}
	date, rest := s[:19], s[19:]
	if date[10] == 'T' {
		date = date[:10] + " " + date[11:]
	}
	tm, err := time.Parse("2006-01-02 15:04:05", date)
	if err != nil {
		return 0, 0, bad
	}
	if strings.HasPrefix(rest, ".") {
		rest = rest[1:]
		digits := 0
		for digits < len(rest) && rest[digits] >= '0' && rest[digits] <= '9' {
			if digits < 9 {
				nsec = nsec*10 + int64(rest[digits]-'0')
			}
			digits++
		}
		if digits == 0 {
			return 0, 0, bad
		}
		for i := digits; i < 9; i++ {
			nsec *= 10
		}
		rest = rest[digits:]
	}
	sec = tm.Unix()
	switch {
	case rest == "" || rest == "Z":
	case len(rest) == 6 && (rest[0] == '+' || rest[0] == '-') && rest[3] == ':':
		off, err := time.Parse("15:04", rest[1:])
		if err != nil {
			return 0, 0, bad
		}
		d := int64(off.Hour()*3600 + off.Minute()*60)
		if rest[0] == '+' {
			d = -d
		}
		sec += d
	default:
		return 0, 0, bad
	}
	return sec, nsec, ""
}

func parseBurstGPT(r io.Reader, name string) ([]rawRecord, int, error) {
	t, err := readCSVHeader(r, name)
	if err != nil {
		return nil, 0, err
	}
	c, err := t.columns([]string{"Timestamp"}, []string{"Request tokens"}, []string{"Response tokens"})
	if err != nil {
		return nil, 0, err
	}
	var raws []rawRecord
	skipped := 0
	err = t.eachRow(func(f []string, line int) error {
		sec, reason := parseSeconds(f[c.arrival], 1)
		if reason != "" {
			return parseErr(name, line, t.names[c.arrival], reason)
		}
		out, reason := parseCount(f[c.out], 0)
		if reason != "" {
			return parseErr(name, line, t.names[c.out], reason)
		}
		if out == 0 { // a failed request
			skipped++
			return nil
		}
		in, _, err := t.counts(f, c, line)
		if err != nil {
			return err
		}
		raws = append(raws, rawRecord{t: sec, in: in, out: out})
		return nil
	})
	return raws, skipped, err
}

func parseGenericCSV(r io.Reader, name string) ([]rawRecord, error) {
	t, err := readCSVHeader(r, name)
	if err != nil {
		return nil, err
	}
	c, err := t.columns(arrivalAliases, inputAliases, outputAliases)
	if err != nil {
		return nil, err
	}
	var raws []rawRecord
	err = t.eachRow(func(f []string, line int) error {
		sec, reason := parseSeconds(f[c.arrival], 1)
		if reason != "" {
			return parseErr(name, line, t.names[c.arrival], reason)
		}
		in, out, err := t.counts(f, c, line)
		if err != nil {
			return err
		}
		raws = append(raws, rawRecord{t: sec, in: in, out: out})
		return nil
	})
	return raws, err
}
