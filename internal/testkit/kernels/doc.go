// Package kernels checks the step-time model against measured kernel and
// static-batch times and fits the model's per-family coefficients to them.
//
// It reads four public data sets (see ../shared/data/README.md beside the checkout):
//
//   - Vidur's per-operation kernel times (profiling/vidur/{a100,h100}/…/mlp.csv):
//     one transformer layer's QKV and O projections, gate/up and down
//     projections, norms, rotary embedding, activation and residual add, by
//     token count and tensor-parallel degree;
//   - Vidur's FlashAttention prefill and decode times
//     (profiling/vidur/a100-attention-tp2/attention.csv);
//   - Vidur's NCCL all-reduce times (profiling/vidur/network/*/all_reduce.csv);
//   - Splitwise's static-batch prefill, per-token decode and end-to-end times
//     (measured/splitwise-perf-model/perf_model.csv).
//
// The readers take an io.Reader; Load reads the files from an fs.FS. Nothing
// here runs at simulation time: the package is used by tests and by whoever
// refits sim/steptime's DefaultProfile (docs/steptime.md).
package kernels
