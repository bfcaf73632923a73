// Package api is Headroom's REST API server (cmd/headroom-server, which
// `headroom serve` runs): the
// catalogs, the capacity answer and the simulator over HTTP, with a job
// manager for long runs, Prometheus metrics and an OpenAPI document.
//
// Reading order:
//
//   - config.go: the configuration (koanf: defaults → YAML file →
//     HEADROOM_* environment → flags; unknown keys are errors);
//     statedir.go the user's state directory, where the calibration
//     store lives by default.
//   - server.go: New, the routes, the middleware (metrics, access log,
//     panic recovery, authentication, body limit) and the drain and
//     graceful shutdown in Serve; auth.go the optional bearer token.
//   - budget.go: the one CPU budget every simulation takes a slot of;
//     admission.go admits synchronous simulations (429 beyond
//     simulate.max_concurrent) and answers them at their time limit;
//     workbound.go bounds each run's estimated tokens before it starts;
//     uploads.go reads bodies within body_read_timeout before any slot is
//     taken, and holds calibration uploads within their byte budget.
//   - engine.go: the Engine interface the handlers call, and Domain, its
//     implementation over catalogs, scenario and sim; store.go keeps the
//     catalog that POST /v1/models extends (and persists: atomic writes,
//     loaded entry by entry).
//   - dto.go: request and response bodies; their `binding` tags are both
//     the run-time rules and the published schema. validate.go adds the
//     cross-field rules, bind.go decodes strictly and words the failures.
//   - problem.go: RFC 9457 problems; every error has a kind (input,
//     not found, infeasible, limit, internal, or the protocol's own), and
//     kindRules and problemFor are the one place that maps errors to
//     kinds and kinds to HTTP statuses (a simulator fault is a logged 500).
//   - catalog_handlers.go, run_handlers.go, job_handlers.go,
//     ops_handlers.go: thin handlers with their swag annotations;
//     GET /v1/jobs/{id} also answers a result as its SVG chart (Accept:
//     image/svg+xml, drawn by internal/adapter/plot).
//   - jobs.go: the job manager, generic over kinds (a registry of
//     runners), with a bounded worker pool, a bounded queue, results kept
//     encoded within a per-job and a total size, and a TTL for finished
//     jobs; timeseries.go coarsens long report time series.
//   - planner_jobs.go: the sweep, plan, curve, maxload and compare kinds
//     over internal/study/plan: each a params DTO, the planner's own check
//     of the question at submission (plan.Runner.Check and its kin) and a
//     runner whose result is the planner's.
//   - steptime.go: POST /v1/steptime, one engine step explained
//     (internal/study/stepreport), its DTO and thin handler; the kernel
//     databases it and every simulation read come from Domain's provider
//     (the built-in tables, and directories under kernel_db_dir).
//   - runupload.go: benchmark runs as uploaded (one result file, or the
//     files of a run folder with their paths), read in memory;
//     replay_handlers.go: POST /v1/inspect and POST /v1/validate (`headroom
//     inspect` and `headroom validate` over an upload) and the validate kind.
//   - rateprofile_handlers.go: POST /v1/rate-profile, a rate profile (and
//     a trace's lengths) from an uploaded file, for a scenario inline.
//   - calibration_handlers.go: POST/GET/DELETE /v1/calibrations and the
//     calibrate kind (a benchmark file imported by internal/adapter/measured, fitted by
//     internal/study/calibrate); calibrations.go is their store (bbolt, or memory),
//     which scenarios' calibration ids resolve through; boltfile.go opens
//     its file, a damaged one an error, never a fault.
//   - metrics.go: the Prometheus series.
//   - webapp.go: the web planner at / (built from ../web into webapp/,
//     embedded), which asks only the public /v1 API.
//
// The OpenAPI document is generated into ../openapi by swag from the
// annotations (openapi/generate.sh) and embedded from there.
//
//	@title						Headroom API
//	@version					1
//	@description				Capacity planning and simulation for LLM inference serving: GPU and model catalogs, vLLM's memory/KV-cache answer, and a discrete-event simulator of vLLM-style serving. Names and units are those of the CLI's JSON reports. Every error is an RFC 9457 application/problem+json document.
//	@license.name				see the repository
//	@BasePath					/
//	@schemes					http
//	@produce					json
//	@accept						json
//	@securityDefinitions.apikey	BearerToken
//	@in							header
//	@name						Authorization
//	@description				With auth_token configured, every route but /healthz, /readyz and the web planner's pages and assets (GET /, /plan, /whatif, /validate, /step, /assets/*) needs "Authorization: Bearer <token>" (401 without it).
package api
