package measured

import (
	"os"
	"reflect"
	"strings"
	"testing"
)

// The constructed scrape: the counters summed, the other metrics
// skipped, per-position acceptance over the proposals.
func TestReadSpecDecodeCounts(t *testing.T) {
	f, err := os.Open("testdata/vllm-metrics/spec-decode.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	c, err := ReadSpecDecodeCounts(f, "spec-decode.txt")
	if err != nil {
		t.Fatal(err)
	}
	want := &SpecDecodeCounts{Drafts: 2000, DraftTokens: 8000, AcceptedTokens: 260, AcceptedPerPosition: []float64{180, 50, 20, 10}}
	if !reflect.DeepEqual(c, want) {
		t.Fatalf("counts %+v, want %+v", c, want)
	}
	per, err := c.PerPosition(4)
	if err != nil || !reflect.DeepEqual(per, []float64{0.09, 0.025, 0.01, 0.005}) {
		t.Errorf("per position %v, %v", per, err)
	}
	if _, err := c.PerPosition(5); err == nil || !strings.Contains(err.Error(), "4 positions counted, for num_speculative_tokens 5") {
		t.Errorf("k 5: %v", err)
	}
	half := &SpecDecodeCounts{Drafts: 1000, DraftTokens: 4000, AcceptedTokens: 100, AcceptedPerPosition: []float64{80, 15, 4, 1}}
	d, err := c.Sub(half)
	if err != nil || !reflect.DeepEqual(d, &SpecDecodeCounts{Drafts: 1000, DraftTokens: 4000, AcceptedTokens: 160, AcceptedPerPosition: []float64{100, 35, 16, 9}}) {
		t.Errorf("difference %+v, %v", d, err)
	}
	if _, err := half.Sub(c); err == nil || !strings.Contains(err.Error(), "went down") {
		t.Errorf("a later scrape with smaller counts: %v", err)
	}
}

func TestReadSpecDecodeCountsErrors(t *testing.T) {
	for _, c := range []struct{ name, text, inErr string }{
		{"no counters", "vllm:num_requests_running 1\n", "no vllm:spec_decode_* counters"},
		{"not a sample", "vllm:spec_decode_num_drafts_total\n", "is not a metric sample"},
		{"no value", "vllm:spec_decode_num_drafts_total{a=\"b\"}\n", "want a value"},
		{"bad value", "vllm:spec_decode_num_drafts_total x\n", `value "x" is not a number`},
		{"negative", "vllm:spec_decode_num_drafts_total -1\n", "not a count"},
		{"NaN", "vllm:spec_decode_num_drafts_total NaN\n", "not a count"},
		{"unclosed labels", `vllm:spec_decode_num_drafts_total{engine="0" 1` + "\n", "unclosed labels"},
		{"bad label", `vllm:spec_decode_num_drafts_total{engine=0} 1` + "\n", `label "engine=0"`},
		{"no position", `vllm:spec_decode_num_accepted_tokens_per_pos_total{engine="0"} 1` + "\n", `position ""`},
		{"position too far", `vllm:spec_decode_num_accepted_tokens_per_pos_total{position="64"} 1` + "\n", `position "64"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := ReadSpecDecodeCounts(strings.NewReader(c.text), "m.txt")
			if err == nil || !strings.Contains(err.Error(), c.inErr) {
				t.Errorf("error %v, want one with %q", err, c.inErr)
			}
		})
	}
	rising := &SpecDecodeCounts{Drafts: 10, AcceptedPerPosition: []float64{2, 3}}
	if _, err := rising.PerPosition(2); err == nil || !strings.Contains(err.Error(), "accepted only after every draft before it") {
		t.Errorf("rising rates: %v", err)
	}
	none := &SpecDecodeCounts{AcceptedPerPosition: []float64{0}}
	if _, err := none.PerPosition(1); err == nil || !strings.Contains(err.Error(), "no proposals") {
		t.Errorf("no proposals: %v", err)
	}
}

// FuzzReadSpecDecodeCounts: any input gives counts or an error, never a
// panic, and counts that read are finite, non-negative and within the
// position bound.
func FuzzReadSpecDecodeCounts(f *testing.F) {
	b, err := os.ReadFile("testdata/vllm-metrics/spec-decode.txt")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(string(b))
	f.Add(`vllm:spec_decode_num_accepted_tokens_per_pos_total{a="x,y",position="1"} 3 1700000000` + "\n")
	f.Add("# only a comment\n\n")
	f.Fuzz(func(t *testing.T, s string) {
		c, err := ReadSpecDecodeCounts(strings.NewReader(s), "fuzz")
		if err != nil {
			return
		}
		if len(c.AcceptedPerPosition) > MaxSpecPositions {
			t.Fatalf("%d positions", len(c.AcceptedPerPosition))
		}
		for _, v := range append([]float64{c.Drafts, c.DraftTokens, c.AcceptedTokens}, c.AcceptedPerPosition...) {
			if !(v >= 0) {
				t.Fatalf("count %v", v)
			}
		}
		_, _ = c.PerPosition(len(c.AcceptedPerPosition))
	})
}
