package workload

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"strings"
)

// MaxLineBytes is the longest line, without its terminator, that the parsers
// accept. An LLMServingSim workload line with its token ids is about 30 KiB.
const MaxLineBytes = 1 << 20

// lineReader reads lines with their 1-based numbers, refusing long ones.
type lineReader struct {
	br   *bufio.Reader
	name string
	line int // number of the line last returned
	buf  []byte
}

func newLineReader(r io.Reader, name string) *lineReader {
	return &lineReader{br: bufio.NewReaderSize(r, 64<<10), name: name}
}

// next returns the next line without "\n" or "\r\n". The slice is valid
// until the following call. At the end it returns io.EOF; other errors are
// *ParseError.
func (lr *lineReader) next() ([]byte, error) {
	lr.buf = lr.buf[:0]
	for {
		chunk, err := lr.br.ReadSlice('\n')
		lr.buf = append(lr.buf, chunk...)
		if len(lr.buf) > MaxLineBytes+2 { // room for "\r\n"
			return nil, &ParseError{Name: lr.name, Line: lr.line + 1, Err: ErrLineTooLong}
		}
		switch {
		case err == nil:
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF):
			if len(lr.buf) == 0 {
				return nil, io.EOF
			}
		default:
			return nil, &ParseError{Name: lr.name, Line: lr.line + 1, Err: fmt.Errorf("read: %w", err)}
		}
		lr.line++
		b := bytes.TrimSuffix(lr.buf, []byte("\n"))
		b = bytes.TrimSuffix(b, []byte("\r"))
		if len(b) > MaxLineBytes {
			return nil, &ParseError{Name: lr.name, Line: lr.line, Err: ErrLineTooLong}
		}
		return b, nil
	}
}

// nextNonBlank skips lines that hold only white space.
func (lr *lineReader) nextNonBlank() ([]byte, error) {
	for {
		b, err := lr.next()
		if err != nil || len(bytes.TrimSpace(b)) > 0 {
			return b, err
		}
	}
}

// splitCSV splits one CSV line into trimmed fields. Quoted fields are
// understood within the line; a quoted field that spans lines is an error.
func splitCSV(line []byte) ([]string, error) {
	var fields []string
	if bytes.IndexByte(line, '"') < 0 {
		fields = strings.Split(string(line), ",")
	} else {
		cr := csv.NewReader(bytes.NewReader(line))
		cr.FieldsPerRecord = -1
		var err error
		if fields, err = cr.Read(); err != nil {
			var pe *csv.ParseError
			if errors.As(err, &pe) {
				err = pe.Err
			}
			return nil, fmt.Errorf("malformed CSV: %w", err)
		}
	}
	for i := range fields {
		fields[i] = strings.TrimSpace(fields[i])
	}
	return fields, nil
}

// csvTable reads a CSV file with a header line, row by row.
type csvTable struct {
	lr    *lineReader
	names []string       // header names as written
	index map[string]int // lower-case name -> column
}

// readCSVHeader reads the header (the first non-blank line; a UTF-8 byte
// order mark is dropped). An input without one is ErrEmptyTrace.
func readCSVHeader(r io.Reader, name string) (*csvTable, error) {
	lr := newLineReader(r, name)
	b, err := lr.nextNonBlank()
	if errors.Is(err, io.EOF) {
		return nil, &ParseError{Name: name, Err: ErrEmptyTrace}
	}
	if err != nil {
		return nil, err
	}
	b = bytes.TrimPrefix(b, []byte("\ufeff"))
	names, err := splitCSV(b)
	if err != nil {
		return nil, &ParseError{Name: name, Line: lr.line, Err: fmt.Errorf("header: %w", err)}
	}
	t := &csvTable{lr: lr, names: names, index: make(map[string]int, len(names))}
	for i, n := range names {
		k := strings.ToLower(n)
		if _, dup := t.index[k]; dup && k != "" {
			return nil, parseErr(name, lr.line, n, "duplicate column in the header")
		}
		t.index[k] = i
	}
	return t, nil
}

// column finds the one column named by any of aliases (case-insensitive).
// A column that is missing, or present under two of its names, is an error
// naming the header line.
func (t *csvTable) column(aliases ...string) (int, error) {
	found := -1
	for _, a := range aliases {
		i, ok := t.index[strings.ToLower(a)]
		if !ok {
			continue
		}
		if found >= 0 {
			return -1, parseErr(t.lr.name, t.lr.line, a, fmt.Sprintf("ambiguous: both %s and %s are present", t.names[found], t.names[i]))
		}
		found = i
	}
	if found < 0 {
		want := aliases[0]
		if len(aliases) > 1 {
			want = "one of " + strings.Join(aliases, ", ")
		}
		return -1, parseErr(t.lr.name, t.lr.line, aliases[0], fmt.Sprintf("missing column (want %s; the header has %s)", want, quoteShort(strings.Join(t.names, ","))))
	}
	return found, nil
}

// row returns the fields of the next non-blank row, io.EOF at the end.
func (t *csvTable) row() ([]string, error) {
	b, err := t.lr.nextNonBlank()
	if err != nil {
		return nil, err
	}
	fields, err := splitCSV(b)
	if err != nil {
		return nil, &ParseError{Name: t.lr.name, Line: t.lr.line, Err: err}
	}
	if len(fields) != len(t.names) {
		return nil, parseErr(t.lr.name, t.lr.line, "", fmt.Sprintf("has %d fields, the header has %d", len(fields), len(t.names)))
	}
	return fields, nil
}

// quoteShort quotes s for an error message, cut to 64 bytes.
func quoteShort(s string) string {
	if len(s) > 64 {
		return fmt.Sprintf("%q…", s[:64])
	}
	return fmt.Sprintf("%q", s)
}
