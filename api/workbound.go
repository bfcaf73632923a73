package api

import (
	"fmt"
	"math"

	"github.com/headroom-sim/headroom/internal/adapter/measured"
	"github.com/headroom-sim/headroom/internal/study/scenario"
)

// The work of a simulation grows with the tokens it simulates, rejected
// requests included (each prompt token is hashed into the prefix cache
// before the request is admitted or refused, each output token is a decode
// step's share), not with its request count alone: 20 000 requests of
// 16M-token prompts cost minutes although every one is rejected. Each run
// is bounded by an estimate made before it starts.

// OverLimitError is work beyond a configured bound, naming the field of
// the input that sets it (422).
type OverLimitError struct{ Field, Reason string }

func (e *OverLimitError) Error() string { return e.Field + ": " + e.Reason }
func (e *OverLimitError) Unwrap() error { return ErrOverLimit }

// PrefixField names the field under prefix (plan.FieldPrefixer).
func (e *OverLimitError) PrefixField(prefix string) error {
	return &OverLimitError{Field: prefix + e.Field, Reason: e.Reason}
}

// estimatedTokens is the mean number of tokens a run of sc simulates, and
// its parts: the requests it sends and the tokens of one (prompt, shared
// prefix, the earlier turns a multi-turn request carries, output).
func estimatedTokens(sc *scenario.Scenario, res *scenario.Resolved) (total float64, requests int, perRequest float64) {
	w := res.Config.Workload
	requests = sc.EstimatedRequests(w)
	if len(w.Trace) > 0 {
		n := min(requests, len(w.Trace))
		for _, r := range w.Trace[:n] {
			total += float64(r.InputTokens + r.OutputTokens)
		}
		return total, n, total / float64(max(n, 1))
	}
	ws := &sc.Workload
	in, out := ws.InputTokens.ExpectedValue(nil), ws.OutputTokens.ExpectedValue(nil)
	if p := ws.SharedPrefix; p != nil {
		in += float64(p.PrefixTokens)
	}
	if mt := ws.MultiTurn; mt != nil && mt.Turns > 1 {
		// Turn t carries the t-1 turns before it: (turns-1)/2 on average.
		in += float64(mt.Turns-1) / 2 * (in + out)
	}
	perRequest = in + out
	return float64(requests) * perRequest, requests, perRequest
}

// checkTokens refuses a run of more than limit estimated tokens; key is
// the configuration key of the limit, hint what to do instead.
func checkTokens(sc *scenario.Scenario, res *scenario.Resolved, limit int64, key, hint string) error {
	total, n, per := estimatedTokens(sc, res)
	if total <= float64(limit) {
		return nil
	}
	return &OverLimitError{Field: "workload", Reason: fmt.Sprintf(
		"about %.3g simulated tokens (%d requests × %.0f tokens each, prompts and outputs), more than %s allows (%d)%s",
		total, n, per, key, limit, hint)}
}

// runTokens is the tokens replaying a measured run simulates once.
func runTokens(run *measured.Run) float64 {
	var total float64
	for _, q := range run.Requests {
		total += float64(max(q.InputTokens, 0) + max(q.OutputTokens, 0))
	}
	if len(run.Requests) == 0 && run.Aggregate != nil {
		a := run.Aggregate
		total = float64(replayRequests(run)) * (math.Max(a.MeanInputTokens, 0) + math.Max(a.MeanOutputTokens, 0))
	}
	return total
}
