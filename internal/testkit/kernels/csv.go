package kernels

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// table is a CSV file with a header row, read whole.
type table struct {
	name string
	col  map[string]int
	rows [][]string
}

func readTable(name string, r io.Reader) (*table, error) {
	cr := csv.NewReader(r)
	cr.ReuseRecord = false
	head, err := cr.Read()
	if err != nil {
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("%s: empty file", name)
		}
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	t := &table{name: name, col: make(map[string]int, len(head))}
	for i, h := range head {
		t.col[strings.TrimSpace(h)] = i
	}
	for {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		t.rows = append(t.rows, rec)
	}
	return t, nil
}

func (t *table) has(col string) bool { _, ok := t.col[col]; return ok }

func (t *table) require(cols ...string) error {
	for _, c := range cols {
		if !t.has(c) {
			return fmt.Errorf("%s: missing column %q", t.name, c)
		}
	}
	return nil
}

// rowError names the file, the 1-based line and the column of a bad cell.
func (t *table) rowError(i int, col string, err error) error {
	return fmt.Errorf("%s: line %d: column %s: %w", t.name, i+2, col, err)
}

func (t *table) str(i int, col string) string {
	j, ok := t.col[col]
	if !ok || j >= len(t.rows[i]) {
		return ""
	}
	return strings.TrimSpace(t.rows[i][j])
}

// float parses a cell; an empty cell gives ok = false.
func (t *table) float(i int, col string) (v float64, ok bool, err error) {
	s := t.str(i, col)
	if s == "" {
		return 0, false, nil
	}
	v, err = strconv.ParseFloat(s, 64)
	if err != nil {
		return 0, false, t.rowError(i, col, err)
	}
	return v, true, nil
}

func (t *table) mustFloat(i int, col string) (float64, error) {
	v, ok, err := t.float(i, col)
	if err != nil {
		return 0, err
	}
	if !ok {
		return 0, t.rowError(i, col, errors.New("empty"))
	}
	return v, nil
}

func (t *table) int(i int, col string) (int, error) {
	s := t.str(i, col)
	v, err := strconv.Atoi(s)
	if err != nil {
		// Some writers emit integers as floats ("4096.0").
		f, ferr := strconv.ParseFloat(s, 64)
		if ferr != nil || f != float64(int(f)) {
			return 0, t.rowError(i, col, err)
		}
		return int(f), nil
	}
	return v, nil
}

func (t *table) bool(i int, col string) (bool, error) {
	s := strings.ToLower(t.str(i, col))
	switch s {
	case "true", "1":
		return true, nil
	case "false", "0":
		return false, nil
	}
	return false, t.rowError(i, col, fmt.Errorf("%q is not a boolean", s))
}
