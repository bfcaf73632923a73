package measured

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
)

// parser holds one file being imported and makes its errors.
type parser struct {
	format, name string
	data         []byte
	maxLine      int
}

func (p *parser) errf(record int, field, format string, args ...any) *ImportError {
	return &ImportError{Format: p.format, Name: p.name, Record: record, Field: field, Reason: fmt.Sprintf(format, args...)}
}

// jsonErr turns a decoding error of record into an *ImportError; prefix is
// the path of the decoded value within the record ("" for the record).
func (p *parser) jsonErr(record int, prefix string, err error) *ImportError {
	var ie *ImportError
	if errors.As(err, &ie) {
		return ie
	}
	join := func(f string) string {
		switch {
		case prefix == "":
			return f
		case f == "":
			return prefix
		}
		return prefix + "." + f
	}
	var te *json.UnmarshalTypeError
	var se *json.SyntaxError
	switch {
	case errors.As(err, &te):
		want := te.Type.String()
		switch te.Type.Kind() {
		case reflect.Float32, reflect.Float64, reflect.Int, reflect.Int64, reflect.Int32, reflect.Uint, reflect.Uint64:
			want = "a number"
		case reflect.String:
			want = "a string"
		case reflect.Slice, reflect.Array:
			want = "a list"
		case reflect.Struct, reflect.Map:
			want = "an object"
		case reflect.Bool:
			want = "true or false"
		}
		if te.Type == reflect.TypeFor[num]() {
			want = "a number"
		}
		switch te.Type.Kind() {
		case reflect.Int, reflect.Int64, reflect.Int32, reflect.Uint, reflect.Uint64:
			if strings.HasPrefix(te.Value, "number") {
				want = "a whole number in range"
			}
		}
		return p.errf(record, join(te.Field), "%s is not %s", te.Value, want)
	case errors.As(err, &se):
		if strings.Contains(se.Error(), "unexpected end") {
			return p.errf(record, prefix, "JSON ends early")
		}
		return p.errf(record, prefix, "invalid JSON at byte %d: %v", se.Offset, se)
	case errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF):
		return p.errf(record, prefix, "JSON ends early")
	}
	return p.errf(record, prefix, "%v", err)
}

// unmarshal decodes one record (a JSON value) into v.
func (p *parser) unmarshal(record int, prefix string, raw []byte, v any) error {
	if err := json.Unmarshal(raw, v); err != nil {
		return p.jsonErr(record, prefix, err)
	}
	return nil
}

// jsonValues calls fn for each top-level JSON value of the file (one for a
// JSON file, one per line for JSON Lines, whatever the layout), numbered
// from 1. Python's NaN literal reads as null (see pyJSON).
func (p *parser) jsonValues(fn func(i int, raw json.RawMessage) error) error {
	dec := json.NewDecoder(bytes.NewReader(pyJSON(trimBOM(p.data))))
	i := 0
	for {
		var raw json.RawMessage
		err := dec.Decode(&raw)
		if err == io.EOF {
			break
		}
		i++
		if err != nil {
			return p.jsonErr(i, "", err)
		}
		if err := fn(i, raw); err != nil {
			return err
		}
	}
	if i == 0 {
		return p.errf(0, "", "no JSON value")
	}
	return nil
}

// lines calls fn for each non-blank line, numbered from 1 by line.
func (p *parser) lines(fn func(line int, b []byte) error) error {
	data := trimBOM(p.data)
	n := 0
	for len(data) > 0 {
		n++
		b := data
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			b, data = data[:i], data[i+1:]
		} else {
			data = nil
		}
		if len(b) > p.maxLine {
			return &ImportError{Format: p.format, Name: p.name, Record: n, Reason: fmt.Sprintf("line longer than %d MiB", p.maxLine>>20), Err: ErrTooLarge}
		}
		b = bytes.TrimSpace(b)
		if len(b) == 0 {
			continue
		}
		if err := fn(n, b); err != nil {
			return err
		}
	}
	return nil
}

// csvTable is a CSV file's header (lower-cased, trimmed) and rows.
type csvTable struct {
	col  map[string]int
	rows [][]string
}

// readCSV reads the whole file as CSV; rows are numbered from 1 after the
// header in errors.
func (p *parser) readCSV() (*csvTable, error) {
	if err := p.lines(func(int, []byte) error { return nil }); err != nil {
		return nil, err // line limit
	}
	cr := csv.NewReader(bytes.NewReader(trimBOM(p.data)))
	cr.FieldsPerRecord = -1
	cr.ReuseRecord = false
	head, err := cr.Read()
	if err != nil {
		return nil, p.errf(0, "", "CSV header: %v", err)
	}
	t := &csvTable{col: map[string]int{}}
	for i, h := range head {
		t.col[strings.ToLower(strings.TrimSpace(h))] = i
	}
	for {
		rec, err := cr.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, p.errf(len(t.rows)+1, "", "CSV: %v", err)
		}
		if len(rec) == 1 && strings.TrimSpace(rec[0]) == "" {
			continue
		}
		t.rows = append(t.rows, rec)
	}
	return t, nil
}

// get is row's value in column c ("" when the column or cell is missing).
func (t *csvTable) get(row []string, c string) string {
	i, ok := t.col[c]
	if !ok || i >= len(row) {
		return ""
	}
	return strings.TrimSpace(row[i])
}

// first is the first of the names that is a column.
func (t *csvTable) first(names ...string) string {
	for _, n := range names {
		if _, ok := t.col[n]; ok {
			return n
		}
	}
	return ""
}

// cellNum parses a CSV cell: "" and "nan" are NaN.
func (p *parser) cellNum(record int, field, s string) (float64, error) {
	switch strings.ToLower(s) {
	case "", "nan", "none", "null":
		return math.NaN(), nil
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsInf(v, 0) {
		return 0, p.errf(record, field, "%q is not a number", s)
	}
	return v, nil
}

// num is a JSON number that also accepts null (not set), numeric strings,
// and "inf"/"Infinity" (as Python tools write an unlimited rate).
type num struct {
	V   float64
	Set bool
}

func (n *num) UnmarshalJSON(b []byte) error {
	s := string(bytes.TrimSpace(b))
	if s == "null" {
		*n = num{}
		return nil
	}
	if len(s) > 0 && s[0] == '"' {
		var str string
		if err := json.Unmarshal(b, &str); err != nil {
			return err
		}
		switch strings.ToLower(strings.TrimSpace(str)) {
		case "inf", "infinity", "+inf":
			*n = num{math.Inf(1), true}
			return nil
		case "-inf", "-infinity":
			*n = num{math.Inf(-1), true}
			return nil
		case "", "nan", "none", "null":
			*n = num{}
			return nil
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(str), 64)
		if err != nil || math.IsNaN(v) {
			return &json.UnmarshalTypeError{Value: strconv.Quote(str), Type: reflect.TypeFor[num]()}
		}
		*n = num{v, true}
		return nil
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		what := s
		switch {
		case s == "true" || s == "false":
		case strings.HasPrefix(s, "["):
			what = "a list"
		case strings.HasPrefix(s, "{"):
			what = "an object"
		}
		return &json.UnmarshalTypeError{Value: what, Type: reflect.TypeFor[num]()}
	}
	*n = num{v, true}
	return nil
}

// finite is the number when set and finite, else NaN.
func (n num) finite() float64 {
	if !n.Set || math.IsInf(n.V, 0) || math.IsNaN(n.V) {
		return math.NaN()
	}
	return n.V
}

// maxTokens bounds token counts (a count above it is an error).
const maxTokens = 1 << 30

// tokens checks a token count: unset is 0, otherwise a whole number in
// [0, 2^30].
func (p *parser) tokens(record int, field string, n num) (int, error) {
	if !n.Set {
		return 0, nil
	}
	return p.tokenValue(record, field, n.V)
}

func (p *parser) tokenValue(record int, field string, v float64) (int, error) {
	if math.IsNaN(v) {
		return 0, nil
	}
	if v < 0 || v > maxTokens || v != math.Trunc(v) {
		return 0, p.errf(record, field, "%v is not a token count", v)
	}
	return int(v), nil
}

// duration checks a time span in seconds: finite and not negative (a
// little negative is clock jitter and reads as 0).
func (p *parser) duration(record int, field string, s float64) (float64, error) {
	if math.IsNaN(s) {
		return s, nil
	}
	if math.IsInf(s, 0) || s < -1e-3 || s > 1e7 {
		return 0, p.errf(record, field, "%v s is not a valid duration", s)
	}
	return max(s, 0), nil
}

// instant checks a clock reading in seconds.
func (p *parser) instant(record int, field string, s float64) (float64, error) {
	if math.IsInf(s, 0) || math.Abs(s) > 1e13 {
		return 0, p.errf(record, field, "%v is not a valid time", s)
	}
	return s, nil
}

// unitSeconds is the number of seconds in a time unit as the tools write
// it; ok is false for units that are not times.
func unitSeconds(unit string) (float64, bool) {
	switch strings.ToLower(strings.TrimSpace(unit)) {
	case "ns":
		return 1e-9, true
	case "us", "µs":
		return 1e-6, true
	case "ms":
		return 1e-3, true
	case "s", "sec", "secs", "second", "seconds":
		return 1, true
	}
	return 0, false
}

// pyJSON rewrites Python's non-standard literals (json.dumps writes them
// by default), outside strings: NaN to null, Infinity and -Infinity to
// strings that num reads as infinities (and other types reject).
func pyJSON(b []byte) []byte {
	if !bytes.Contains(b, []byte("NaN")) && !bytes.Contains(b, []byte("Infinity")) {
		return b
	}
	out := make([]byte, 0, len(b)+16)
	inStr, esc := false, false
	for i := 0; i < len(b); i++ {
		c := b[i]
		if inStr {
			out = append(out, c)
			switch {
			case esc:
				esc = false
			case c == '\\':
				esc = true
			case c == '"':
				inStr = false
			}
			continue
		}
		switch {
		case c == '"':
			inStr = true
		case bytes.HasPrefix(b[i:], []byte("NaN")):
			out = append(out, "null"...)
			i += len("NaN") - 1
			continue
		case bytes.HasPrefix(b[i:], []byte("-Infinity")):
			out = append(out, `"-Infinity"`...)
			i += len("-Infinity") - 1
			continue
		case bytes.HasPrefix(b[i:], []byte("Infinity")):
			out = append(out, `"Infinity"`...)
			i += len("Infinity") - 1
			continue
		}
		out = append(out, c)
	}
	return out
}

// chunkTimes turns the gaps between successive chunks (seconds) into
// arrival times after the send, starting from the first chunk at ttft.
func chunkTimes(ttft float64, gaps []float64) []float64 {
	if len(gaps) == 0 {
		return nil
	}
	out := make([]float64, len(gaps))
	t := ttft
	for i, g := range gaps {
		t += g
		out[i] = t
	}
	return out
}

// note adds a line to the run's notes.
func (r *Run) note(format string, args ...any) {
	r.Engine.Extra = append(r.Engine.Extra, fmt.Sprintf(format, args...))
}

// ignore records keys the reader did not use (see Run.Ignored), each with
// prefix.
func (r *Run) ignore(prefix string, keys ...string) {
	for _, k := range keys {
		r.Ignored = append(r.Ignored, prefix+k)
	}
}

// ignoreJSON records the keys of the JSON object raw that used does not
// accept (nil: none is used), each with prefix; raw that is not an object
// records nothing.
func (r *Run) ignoreJSON(prefix string, raw []byte, used func(k string) bool) {
	var m map[string]json.RawMessage
	if json.Unmarshal(pyJSON(raw), &m) != nil {
		return
	}
	for k := range m {
		if used == nil || !used(k) {
			r.Ignored = append(r.Ignored, prefix+k)
		}
	}
}

// keys is a used-key test of a fixed set of names.
func keys(names ...string) func(string) bool {
	set := make(map[string]bool, len(names))
	for _, n := range names {
		set[n] = true
	}
	return func(k string) bool { return set[k] }
}

// maxIgnored bounds the ignored keys a run lists (a file of many distinct
// keys lists the first, sorted, and a count of the rest).
const maxIgnored = 200

// tidyIgnored sorts and de-duplicates the ignored keys.
func (r *Run) tidyIgnored() {
	slices.Sort(r.Ignored)
	r.Ignored = slices.Compact(r.Ignored)
	if n := len(r.Ignored); n > maxIgnored {
		r.Ignored = append(r.Ignored[:maxIgnored], fmt.Sprintf("… and %d more", n-maxIgnored))
	}
}

// tagsOf is a used-key test of the JSON names of a struct's fields (v is
// the struct or a pointer to it): the keys a reader decodes.
func tagsOf(v any) func(string) bool {
	t := reflect.TypeOf(v)
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	set := map[string]bool{}
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		if name != "" && name != "-" {
			set[name] = true
		}
	}
	return func(k string) bool { return set[k] }
}

// ignoreField is ignoreJSON of the object under key of the JSON object raw.
func (r *Run) ignoreField(prefix string, raw []byte, key string, used func(string) bool) {
	var m map[string]json.RawMessage
	if json.Unmarshal(pyJSON(raw), &m) != nil {
		return
	}
	if sub, ok := m[key]; ok {
		r.ignoreJSON(prefix+key+".", sub, used)
	}
}

// ignoreColumns records the CSV columns used does not accept.
func (r *Run) ignoreColumns(t *csvTable, used func(string) bool) {
	for c := range t.col {
		if !used(c) {
			r.ignore("column ", c)
		}
	}
}
