// Package scenario is Headroom's public input contract: one scenario
// describes what to simulate (model, GPU, engine settings, workload, SLA,
// report options). The CLI reads it from YAML, the API from JSON; both go
// through Decode, which rejects unknown keys naming their full path, and
// Resolve, which looks ids up in a catalog, fills vLLM's defaults, computes
// the KV-cache size, reads referenced files through an injected opener and
// returns a ready-to-run sim.Config.
//
// The schema is documented in docs/scenario.md, which TestScenarioDocIsTheSchema
// keeps in step with the decoder.
//
// Reading order: scenario.go (the schema and defaults), decode.go (strict
// decoding), override.go (`--set path=value`), resolve.go (to a
// sim.Config), speculative.go (the drafter of speculative decoding),
// autoscale.go (the autoscaler and its cold start), disagg.go and
// engineoverrides.go (separate prefill and decode pools, each resolved as
// a scenario of its own, and the KV link between them), capacity.go (the
// capacity question of `headroom capacity` and POST /v1/capacity).
package scenario
