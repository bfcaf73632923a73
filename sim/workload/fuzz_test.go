package workload

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

const fuzzName = "fuzz.trace"

// FuzzParseTrace: for every format, parsing never panics, every error is a
// *ParseError that starts with the name, and a successful parse gives
// records with tokens >= 1 and sorted arrivals from 0.
func FuzzParseTrace(f *testing.F) {
	formats := TraceFormats()
	for _, fx := range fixtures {
		if seed := headLines(readFixture(f, fx.file), 1024); len(seed) > 0 {
			f.Add(uint8(slices.Index(formats, fx.format)), seed)
		}
	}
	// The LLMServingSim workload lines are ~10 KiB of token ids: a short one.
	f.Add(uint8(slices.Index(formats, FormatLLMServingSim)), []byte(`{"input_toks": 3, "output_toks": 2, "arrival_time_ns": 46926808, "input_tok_ids": [5971, 2927, 220], "output_tok_ids": [11, 12]}`+"\n"+
		`{"output_toks": 2, "arrival_time_ns": 6926808, "input_tok_ids": [5971, 2927, 220]}`+"\n"))
	for i := range formats {
		f.Add(uint8(i), []byte(""))
		f.Add(uint8(i), []byte("arrival_s,input_tokens,output_tokens\n1,2,3\n0,1,1\n"))
		f.Add(uint8(i), []byte(`{"timestamp": 5, "arrival_s": 1, "arrival_time_ns": 9, "input_length": 513, "input_tokens": 2, "input_toks": 2, "output_length": 1, "output_tokens": 1, "output_toks": 1, "hash_ids": [1, 2]}`+"\n"))
	}
	f.Fuzz(func(t *testing.T, formatIdx uint8, data []byte) {
		format := formats[int(formatIdx)%len(formats)]
		tr, err := ParseTraceDetailed(bytes.NewReader(data), format, fuzzName)
		if err != nil {
			var pe *ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("error %v is a %T, want *ParseError", err, err)
			}
			if !strings.HasPrefix(err.Error(), fuzzName+":") {
				t.Fatalf("error %q does not start with the name", err)
			}
			if tr.Records != nil {
				t.Fatalf("records returned with error %v", err)
			}
			return
		}
		checkRecords(t, tr.Records)
		for i, r := range tr.Records {
			want := -1 // no hash ids in this format
			switch format {
			case FormatMooncake:
				want = (r.InputTokens + MooncakeBlockTokens - 1) / MooncakeBlockTokens
			case FormatLLMServingSim:
				// The prompt's full blocks of token ids, when it lists them.
				want = r.InputTokens / LLMServingSimBlockTokens
			}
			if r.HashIDs != nil && len(r.HashIDs) != want {
				t.Fatalf("record %d: %d hash ids for %d tokens (%s)", i, len(r.HashIDs), r.InputTokens, format)
			}
		}
		if tr.SkippedFailed != 0 && format != FormatBurstGPT {
			t.Fatalf("%s skipped %d rows", format, tr.SkippedFailed)
		}
	})
}

// FuzzParseLengthColumn: never panics, errors start with the name, values
// are in [1, MaxTokens].
func FuzzParseLengthColumn(f *testing.F) {
	etalon := readFixture(f, "etalon_sharegpt.csv")
	for _, col := range []string{"num_prefill_tokens", "NUM_DECODE_TOKENS", "pd_ratio", "missing"} {
		f.Add(col, etalon)
	}
	f.Add("n", []byte("n\n1\n2.0\n\n\"3\"\n"))
	f.Add("b", []byte("a,b\r\n1,0\r\n"))
	f.Fuzz(func(t *testing.T, column string, data []byte) {
		vals, err := ParseLengthColumn(bytes.NewReader(data), column, fuzzName)
		if err != nil {
			var pe *ParseError
			if !errors.As(err, &pe) || !strings.HasPrefix(err.Error(), fuzzName+":") {
				t.Fatalf("error %q (%T) is not a *ParseError starting with the name", err, err)
			}
			return
		}
		if len(vals) == 0 {
			t.Fatal("no values and no error")
		}
		for i, v := range vals {
			if v < 1 || v > MaxTokens {
				t.Fatalf("value %d = %d", i, v)
			}
		}
	})
}

// FuzzLengthSampler: a spec that validates builds a sampler whose samples
// are within its clamps, and ExpectedValue is finite and within them too.
func FuzzLengthSampler(f *testing.F) {
	f.Add(uint8(0), 5, 0, 0, 0.0, 0.0, 1.0, 1, 2)
	f.Add(uint8(1), 0, 1, 100, 0.0, 0.0, 1.0, 1, 2)
	f.Add(uint8(2), 0, 10, 20, 15.0, 30.0, 1.0, 1, 2)
	f.Add(uint8(3), 0, 0, 0, 1e9, 1e12, 1.0, 1, 2)
	f.Add(uint8(4), 0, 3, 9, 0.0, 0.0, 1.0, 1, 2)
	f.Add(uint8(5), 0, 0, 0, 0.0, 0.0, 1e-300, 1, MaxTokens)
	f.Add(uint8(3), 0, 0, 0, 1e-320, 1.0, 1.0, 1, 2)   // issue 23: NaN tokens
	f.Add(uint8(5), 0, 0, 0, 0.0, 0.0, 1e308, 1, 1000) // issue 23: +Inf tokens
	f.Fuzz(func(t *testing.T, typ uint8, value, lo, hi int, mean, sd, weight float64, bmin, bmax int) {
		s := LengthSpec{Type: lengthTypes[int(typ)%len(lengthTypes)], Value: value, Min: lo, Max: hi, Mean: mean, Stddev: sd}
		switch s.Type {
		case LengthEmpirical:
			s.File, s.Column = "f.csv", "c"
		case LengthBuckets:
			s.Min, s.Max = 0, 0
			s.Buckets = []Bucket{{Weight: weight, Min: bmin, Max: bmax}, {Weight: 0, Min: 1, Max: 1}}
		}
		emp := []int{value, lo, hi, bmin, bmax}
		smp, err := NewLengthSampler(s, "x", emp)
		if err != nil {
			var fe *FieldError
			if !errors.As(err, &fe) || !strings.HasPrefix(fe.Field, "x.") {
				t.Fatalf("error %v is not a *FieldError under x", err)
			}
			return
		}
		low, high := s.bounds()
		if s.Type == LengthUniform {
			low, high = s.Min, s.Max
		}
		if s.Type == LengthBuckets {
			low, high = bmin, bmax
		}
		r := rand.New(rand.NewPCG(1, 1))
		for range 100 {
			if v := smp.Sample(r); v < 1 || v < low || v > high {
				t.Fatalf("%+v: sample %d outside [%d, %d]", s, v, low, high)
			}
		}
		if ev := s.ExpectedValue(emp); !(ev >= float64(low)-1e-6*float64(low)) || !(ev <= float64(high)*(1+1e-9)) {
			t.Fatalf("%+v: ExpectedValue %g outside [%d, %d]", s, ev, low, high)
		}
	})
}

// headLines returns the whole lines of b that fit in limit bytes: small
// seeds keep the fuzzer's minimisation of new inputs quick.
func headLines(b []byte, limit int) []byte {
	if len(b) <= limit {
		return b
	}
	return b[:bytes.LastIndexByte(b[:limit], '\n')+1]
}
