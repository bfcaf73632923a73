package engine_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"strings"
	"testing"

	"github.com/headroom-sim/headroom/internal/testkit/refdata"
	"github.com/headroom-sim/headroom/sim/engine"
)

// proposeNgram is vLLM's n-gram (prompt lookup) proposer, ported line by
// line from vllm/v1/spec_decode/ngram_proposer.py
// (_find_longest_matched_ngram_and_propose_tokens): the longest suffix of
// tokens, between nmin and nmax tokens long, that occurred earlier (the
// latest such occurrence, found with KMP over the reversed sequence), and
// the up to k tokens that followed it.
func proposeNgram(tokens []int32, nmin, nmax, k int, lps []int32) []int32 {
	total := len(tokens)
	if total < nmin {
		return nil
	}
	rev := func(i int) int32 { return tokens[total-1-i] }
	clear(lps[:nmax])
	longest, position, prev := 0, 0, 0
	for i := 1; i < total; {
		switch {
		case rev(prev) == rev(i):
			prev++
			if prev >= longest {
				longest, position = prev, i
			}
			if i < nmax {
				lps[i] = int32(prev)
			}
			if prev == nmax {
				prev = int(lps[nmax-1])
			}
			i++
		case prev != 0:
			prev = int(lps[prev-1])
		default:
			i++
		}
	}
	if longest < nmin {
		return nil
	}
	start := total - 1 - position + longest
	k = min(k, total-start)
	return tokens[start : start+k]
}

func TestProposeNgram(t *testing.T) {
	lps := make([]int32, 8)
	for _, c := range []struct {
		tokens     []int32
		nmin, nmax int
		k          int
		want       []int32
	}{
		// "1 2 3 4 … 1 2 3" → the 3-gram 1 2 3 occurred before 4 5.
		{[]int32{1, 2, 3, 4, 5, 9, 1, 2, 3}, 2, 3, 2, []int32{4, 5}},
		{[]int32{1, 2, 3, 4, 5, 9, 1, 2, 3}, 2, 3, 8, []int32{4, 5, 9, 1, 2, 3}},
		// Of two occurrences as long, the earliest wins (vLLM: "we want
		// to get the target n-gram of the earliest position"): 7 8 was
		// followed by 1, then by 2.
		{[]int32{7, 8, 1, 7, 8, 2, 7, 8}, 2, 2, 1, []int32{1}},
		// No 2-gram repeats.
		{[]int32{1, 2, 3, 4, 5}, 2, 3, 3, nil},
		// Shorter than nmin.
		{[]int32{1}, 2, 3, 3, nil},
	} {
		got := proposeNgram(c.tokens, c.nmin, c.nmax, c.k, lps)
		if fmt.Sprint(got) != fmt.Sprint(c.want) {
			t.Errorf("proposeNgram(%v, %d, %d, %d) = %v, want %v", c.tokens, c.nmin, c.nmax, c.k, got, c.want)
		}
	}
}

// ngramStats replays speculative decoding with vLLM's n-gram proposer over
// real conversations: each request's prompt and answer token ids, drafts
// proposed from the prompt and the answer so far, accepted while they
// match the answer (greedy verification), then the bonus token.
type ngramStats struct {
	steps, drafts int64   // decode steps, steps with a proposal
	accepted      []int64 // drafts accepted at each position
}

func replayNgram(t *testing.T, path string, k, nmin, nmax int) ngramStats {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	st := ngramStats{accepted: make([]int64, k)}
	lps := make([]int32, nmax)
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<26)
	for sc.Scan() {
		var rec struct {
			In  []int32 `json:"input_tok_ids"`
			Out []int32 `json:"output_tok_ids"`
		}
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			t.Fatal(err)
		}
		seq := append(append(make([]int32, 0, len(rec.In)+len(rec.Out)), rec.In...), rec.Out...)
		// The prefill samples the first answer token; each step after it
		// verifies the drafts proposed from the sequence so far.
		for g := 1; g < len(rec.Out); {
			d := proposeNgram(seq[:len(rec.In)+g], nmin, nmax, k, lps)
			st.steps++
			a := 0
			if len(d) > 0 {
				st.drafts++
				for a < len(d) && g+a < len(rec.Out) && d[a] == rec.Out[g+a] {
					st.accepted[a]++
					a++
				}
			}
			g += a + 1
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return st
}

// TestNgramDefaultsMeasured recomputes the n-gram method's default
// acceptance (engine.NgramAcceptance) from the 300 ShareGPT conversations
// of the LLMServingSim reference run, tokenised for Llama-3.1-8B, with
// vLLM's default prompt_lookup_min = prompt_lookup_max = 5: the table in
// the code must be what the data give.
func TestNgramDefaultsMeasured(t *testing.T) {
	if testing.Short() {
		t.Skip("replays 300 conversations per k")
	}
	path := refdata.Path(t, "measured/llmservingsim/workloads/sharegpt-llama-3.1-8b-300-sps10.jsonl")
	var table strings.Builder
	for k := 1; k <= engine.MaxMeasuredNgramTokens; k++ {
		st := replayNgram(t, path, k, engine.NgramPromptLookup, engine.NgramPromptLookup)
		proposal := round3(float64(st.drafts) / float64(st.steps))
		per := make([]float64, k)
		for i, a := range st.accepted {
			per[i] = round3(float64(a) / float64(st.drafts))
		}
		fmt.Fprintf(&table, "\t{%v, []float64{%s}},\n", proposal, strings.Trim(strings.Join(strings.Fields(fmt.Sprint(per)), ", "), "[]"))
		want := engine.NgramAcceptance(k)
		if want.ProposalRate != proposal || fmt.Sprint(want.PerPosition) != fmt.Sprint(per) {
			t.Errorf("k=%d: measured proposal rate %v, per-position %v; the table has %v, %v", k, proposal, per, want.ProposalRate, want.PerPosition)
		}
	}
	if t.Failed() {
		t.Logf("measured table:\n%s", table.String())
	}
}

func round3(x float64) float64 { return math.Round(x*1000) / 1000 }

// BenchmarkNgramPropose times the proposer's scan per context token, the
// CPU cost the simulator charges an n-gram step (engine.NgramNSPerToken):
// a 2,048-token context of natural-language-like token ids.
func BenchmarkNgramPropose(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 2))
	tokens := make([]int32, 2048)
	for i := range tokens {
		tokens[i] = int32(r.IntN(2000)) // Zipf-free but repeating ids
	}
	lps := make([]int32, 5)
	for b.Loop() {
		proposeNgram(tokens, 5, 5, 5, lps)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(tokens)), "ns/token")
}
