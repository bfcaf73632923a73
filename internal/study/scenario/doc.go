// Package scenario is Headroom's public input contract: one scenario
// describes what to simulate (model, GPU, engine settings, workload, SLA,
// report options). The CLI reads it from YAML, the API from JSON; both go
// through Decode, which rejects unknown keys naming their full path, and
// Resolve, which looks ids up in a catalog, fills vLLM's defaults, computes
// the KV-cache size, reads referenced files through an injected opener and
// returns a ready-to-run sim.Config.
//
// Reading order: scenario.go (the schema and defaults), decode.go (strict
// decoding), resolve.go (to a sim.Config), disagg.go and
// engineoverrides.go (separate prefill and decode pools, each resolved as
// a scenario of its own, and the KV link between them).
package scenario
