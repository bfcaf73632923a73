// Package stepreport explains one engine step: for a scenario's model, GPU,
// parallel layout, precision and engine settings, and a batch (sequences
// decoding one token at a KV length, prefill chunks after cached tokens),
// every kernel of the step with its predicted time, what bounds it
// (compute, memory, link, launch/CPU), where its time comes from (a kernel
// table's measurement, an interpolation between measured shapes, or the
// fitted formula) and, where the table holds the exact shape, the measured
// time beside the prediction; then the totals per op kind and per bound, the
// GPU and CPU time, the CPU time async scheduling hides, the step's wall
// time and the throughput and TPOT it implies.
//
// The scenario resolves as for a simulation (scenario.Resolve), and the
// step-time model is the one the simulator runs (sim.Config.StepModel), so
// the explanation is of the step a simulation would take. `headroom
// steptime` and POST /v1/steptime print its Report.
//
// Reading order: stepreport.go (the request, Explain and the Report),
// batch.go (the batch's checks against the engine and the KV cache).
package stepreport
