package workload

import (
	"io"
)

// ParseLengthColumn reads the token lengths of an empirical distribution:
// a CSV file with a header, the column named column (case-insensitive),
// every value an integer >= 1 (an integral float such as "512.0" is
// accepted). name is used in errors, which are *ParseError naming the
// line and the column; a file without values is ErrEmptyTrace.
func ParseLengthColumn(r io.Reader, column, name string) ([]int, error) {
	t, err := readCSVHeader(r, name)
	if err != nil {
		return nil, err
	}
	col, err := t.column(column)
	if err != nil {
		return nil, err
	}
	var values []int
	err = t.eachRow(func(f []string, line int) error {
		n, reason := parseCount(f[col], 1)
		if reason != "" {
			return parseErr(name, line, t.names[col], reason)
		}
		values = append(values, n)
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(values) == 0 {
		return nil, &ParseError{Name: name, Err: ErrEmptyTrace}
	}
	return values, nil
}
