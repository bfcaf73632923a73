// Package workload describes the requests a simulation serves: the
// `workload:` section of a scenario (Spec), the token-length distributions
// of prompts and outputs (LengthSpec, LengthSampler), the arrival process
// (ArrivalSpec, Interarrival), load stages, shared prefixes, multi-turn
// sessions, and real request traces (TraceSpec, ParseTrace).
//
// The package is pure: parsers take an io.Reader and a name used in error
// messages, never a path; randomness comes from a *rand.Rand handed in (the
// caller keeps one stream per use, so that adding a feature does not
// reshuffle the draws of another); nothing reads the clock.
//
// Trace formats (ParseTrace; each format's exact columns are documented on
// its Format constant):
//
//   - azure: Azure LLM inference trace 2023 CSV (TIMESTAMP, ContextTokens,
//     GeneratedTokens), timestamps as "2023-11-16 18:15:46.6805900".
//   - mooncake: Mooncake FAST'25 JSONL (timestamp in ms, input_length,
//     output_length, hash_ids: one id per 512-token prompt block).
//   - burstgpt: BurstGPT CSV; failed requests (Response tokens 0) are
//     skipped and counted in Trace.SkippedFailed.
//   - csv, jsonl: generic, with arrival seconds and token counts under a few
//     common names.
//   - llmservingsim: the LLMServingSim workload JSONL (arrival_time_ns,
//     input_toks or input_tok_ids, output_toks; input_tok_ids hashed per
//     16-token block for prefix caching).
//
// Every trace error is a *ParseError that starts with the name and, where it
// applies, the 1-based line and the field: `trace.csv:17: field
// input_tokens: "abc" is not an integer`. Lines longer than MaxLineBytes are
// refused. Records come back sorted by arrival (stable), with the first
// arrival at 0 s.
//
// Reading order: spec.go (the section), length.go and sampler.go (lengths),
// arrival.go (arrival processes), profile.go (rate profiles and the
// bound on stages), then trace.go, lines.go,
// csvtrace.go, jsonltrace.go and column.go (trace and length-file parsers),
// errors.go.
package workload
