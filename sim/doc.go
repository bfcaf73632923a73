// Package sim is Headroom's discrete-event simulator of vLLM-style LLM
// serving: replicas (serving instances, each an API server in front of
// its data-parallel engine ranks) behind a router (or a prefill and a
// decode pool, disaggregated), each rank an engine with a paged KV cache
// (prefix caching with block hashes, reference counts and LRU eviction), a
// vLLM V1 scheduler (running requests first, chunked prefill under a token
// budget, preemption by recompute or swap) or the older prefill-first V0
// policy, and a physics step-time model (package steptime).
//
// The core is pure and deterministic: time is an integer nanosecond clock,
// events are ordered by (time, kind, sequence number), randomness comes
// from seeded streams, one per subsystem, and Run takes a context and a
// limit on events. File and network I/O live in the callers.
//
// Reading order: config.go (what a run needs), stepmodel.go (the
// step-time model of one engine rank, built from the config), longest.go
// (the longest request a run holds, for max_model_len), timecheck.go
// (every time checked against the int64 nanosecond clock, and toTime, the
// one float to Time conversion), sizecheck.go (the users and engine ranks
// a run keeps, bounded before it allocates them), events.go (the event
// queue), simulate.go (the event loop, routing, step start and end),
// driver.go (clients and arrivals), instance.go (one serving endpoint: an
// API server in front of its data-parallel engine ranks), frontend.go
// (that API server's event loop: requests in, tokens out), rank.go (one
// engine rank and its V1/V0 scheduler), waitqueue.go (its waiting queue, a
// backlog parked as compact records), kvcache.go and blockindex.go (blocks
// and prefix cache), request.go (and the pool finished requests' structs
// go back to), accounting.go (every request issued ends once, or is
// reported unfinished), autoscale.go (replicas started, drained and
// billed by an autoscaling policy during the run), metrics.go, report.go
// and assemble.go (what a run reports), speculative.go (speculative
// decoding: drafts, verification, acceptance) and speculative_cost.go
// (what a speculative step adds: the rejection sampler and the
// proposer). Disaggregated serving (a
// prefill pool handing KV caches to a decode pool) is disagg.go (the path
// of a request), pdpool.go (the pools at run time), kvtransfer.go (the
// link) and pdreport.go, hooked into the files above where a request is
// delivered, a step is scheduled or ends, and the report is assembled.
// handsim_test.go is a harness for runs small enough to work out by hand
// (a fixed step time); the *_test.go files beside it check each mechanism
// step by step with it.
//
// Sub-packages, all below this one: engine (settings and vLLM defaults),
// memory (start-up KV block count), steptime (step-time model), workload
// (distributions and traces), stats (quantiles and histograms). Everything
// that builds on the simulator (the scenario schema, replay, calibration,
// planning) lives in internal/study, and the translators of outside formats
// in internal/adapter; see internal/doc.go for the whole map.
package sim
