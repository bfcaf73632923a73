package workload

import (
	"bytes"
	"errors"
	"slices"
	"strings"
	"testing"
)

func TestParseLengthColumn(t *testing.T) {
	tests := []struct {
		name, column, input string
		want                []int
	}{
		{"by name", "b", "a,b\n1,2\n3,4\n", []int{2, 4}},
		{"case-insensitive, BOM, CRLF, blank lines", "NUM", "\ufeffx,num\r\n9,5\r\n\r\n9,6\r\n", []int{5, 6}},
		{"integral floats", "n", "n\n12.0\n1e3\n", []int{12, 1000}},
		{"quoted", "n", "s,n\n\"a, b\",\"7\"\n", []int{7}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseLengthColumn(strings.NewReader(tt.input), tt.column, "len.csv")
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, tt.want) {
				t.Fatalf("got %v, want %v", got, tt.want)
			}
		})
	}
}

func TestParseLengthColumnFixture(t *testing.T) {
	got, err := ParseLengthColumn(bytes.NewReader(readFixture(t, "etalon_sharegpt.csv")), "num_decode_tokens", "etalon_sharegpt.csv")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 20 || got[0] != 918 || got[19] != 79 {
		t.Fatalf("got %d values %v", len(got), got)
	}
}

func TestParseLengthColumnErrors(t *testing.T) {
	tests := []struct {
		name, column, input string
		want                string
	}{
		{"no column", "c", "a,b\n1,2\n", `len.csv:1: field c: missing column (want c; the header has "a,b")`},
		{"zero", "b", "a,b\n1,2\n1,0\n", `len.csv:3: field b: must be >= 1, got 0`},
		{"not a number", "b", "a,b\n1,2\n\n1,x\n", `len.csv:4: field b: "x" is not an integer`},
		{"empty cell", "b", "a,b\n1,\n", `len.csv:2: field b: "" is not an integer`},
		{"ragged", "b", "a,b\n1,2,3\n", `len.csv:2: has 3 fields, the header has 2`},
		{"header only", "b", "a,b\n", `len.csv: no records`},
		{"empty", "b", "", `len.csv: no records`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseLengthColumn(strings.NewReader(tt.input), tt.column, "len.csv")
			var pe *ParseError
			if !errors.As(err, &pe) || err.Error() != tt.want {
				t.Fatalf("error %v, want %s", err, tt.want)
			}
		})
	}
}
