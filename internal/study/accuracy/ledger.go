package accuracy

import (
	"fmt"
	"math"
	"slices"
	"strings"
)

// KnownMiss is a figure known to miss its bar: the worst it may get
// (today's figure) and why it misses.
type KnownMiss struct {
	CeilingPct float64
	Reason     string
}

// SlackPct is how many points a known miss may go past its ceiling before
// it counts as worse.
const SlackPct = 2

// Problem is a figure at odds with its bar and the ledger of known misses.
type Problem struct {
	Key    string
	Reason string
}

func (p Problem) String() string { return p.Key + ": " + p.Reason }

// Judge checks figures against their bars and the ledger of known misses.
// Problems, in the figures' order and then the ledger's keys sorted: a
// figure that misses its bar and is not in the ledger; one in the ledger
// that is worse than its ceiling plus SlackPct; one in the ledger that
// now meets its bar (the ledger must stay true); a ledger entry that
// names no figure.
func Judge(figs []Figure, known map[string]KnownMiss) []Problem {
	var out []Problem
	seen := map[string]bool{}
	for _, f := range figs {
		seen[f.Key] = true
		k, listed := known[f.Key]
		switch {
		case math.IsInf(f.ValuePct, 1):
			out = append(out, Problem{f.Key, "no run replayed"})
		case f.Meets() && listed:
			out = append(out, Problem{f.Key, fmt.Sprintf("%.1f%% now meets its %.0f%% bar (n=%d): remove it from knownMisses", f.ValuePct, f.BarPct, f.N)})
		case f.Meets():
		case !listed:
			out = append(out, Problem{f.Key, fmt.Sprintf("%.1f%% is above its %.0f%% bar (n=%d)", f.ValuePct, f.BarPct, f.N)})
		case f.ValuePct > k.CeilingPct+SlackPct:
			out = append(out, Problem{f.Key, fmt.Sprintf("%.1f%% is worse than its known-miss ceiling %.1f%% (+%d points allowed; bar %.0f%%, n=%d)", f.ValuePct, k.CeilingPct, SlackPct, f.BarPct, f.N)})
		}
	}
	var stale []string
	for k := range known {
		if !seen[k] {
			stale = append(stale, k)
		}
	}
	slices.Sort(stale)
	for _, k := range stale {
		out = append(out, Problem{k, "listed in knownMisses but no such figure was measured"})
	}
	return out
}

// Ledger writes, as Go source, the knownMisses table the figures call
// for: every figure that misses its bar with today's value (rounded up to
// a tenth of a point) as its ceiling, keeping the reasons known gives.
func Ledger(figs []Figure, known map[string]KnownMiss) string {
	var b strings.Builder
	b.WriteString("var knownMisses = map[string]accuracy.KnownMiss{\n")
	for _, f := range figs {
		if f.Meets() || math.IsInf(f.ValuePct, 1) {
			continue
		}
		reason := known[f.Key].Reason
		if reason == "" {
			reason = "(say why it misses)"
		}
		fmt.Fprintf(&b, "\t%q: {CeilingPct: %.1f, Reason: %q}, // bar %.0f%%, n=%d\n", f.Key, math.Ceil(f.ValuePct*10-1e-9)/10, reason, f.BarPct, f.N)
	}
	b.WriteString("}\n")
	return b.String()
}
