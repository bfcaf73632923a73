#!/usr/bin/env bash
# Regenerates docs/accuracy.md and docs/figures/accuracy-silicon.svg: every measured run under
# ../shared/data/measured replayed through the simulator with the default step-time
# model and the built-in kernel tables. The closed-loop table's 823 runs take minutes on two cores
# (the progress bar on stderr says how far it is).
#   docs/gen-accuracy.sh [DATA_DIR]
# HEADROOM_DOCS_OUT writes them to another folder (go run ./cmd/headroom-fit --check does).
set -euo pipefail
cd "$(dirname "$0")/.."
data=${1:-../shared/data/measured}
out=${HEADROOM_DOCS_OUT:-docs}
mkdir -p "$out/figures"
body=$(mktemp)
open=$(mktemp)
trap 'rm -f "$body" "$open"' EXIT
start=$(date +%s)
go run ./cmd/headroom validate --runs-from "$data" --output markdown \
  --plot "$out/figures/accuracy-silicon.svg" --progress >"$body"
# The residency runs do not name their GPU (one H100 SXM, the data's README says).
go run ./cmd/headroom validate --runs-from "$data/residency-vllm-h100-qwen3-14b" --gpu h100-sxm \
  --output markdown >"$open"
echo "replayed in $(( $(date +%s) - start )) s" >&2
{
cat <<'HEAD'
# Accuracy against real vLLM runs

Every measured run in the reference data (`../shared/data/measured`, beside the checkout) is replayed
through the simulator with the **default** step-time model: the built-in kernel tables of the GPU
(`steptime.backend: table`; the fitted formulas where a table does not cover a shape), the host costs
of `sim/steptime/profiles/host.json`, and the KV-cache size from the memory model (not a logged count).
No run is calibrated on its own (`headroom calibrate` does that: [calibration.md](calibration.md)).
Three kinds of run:

- **Runs replayed request by request** (eight runs): four vLLM 0.19 runs from LLMServingSim (300
  ShareGPT requests at about 10 req/s; RTX 4090 with Llama-3.1-8B, KV-bound; RTX PRO 6000 with
  Llama-3.1-8B, Qwen3-32B at TP 2 over PCIe, and Qwen3-30B-A3B with two data-parallel ranks and
  expert parallelism) and four vLLM 0.11 runs from inference-sim on an 80 GB H100-class GPU (guidellm
  sweeps: synchronous, throughput and constant-rate stages; CodeLlama-34B and Llama-2-7B). Each is
  replayed with its exact arrival times, prompt and output lengths (and, where recorded, prompt token
  ids, so prefix-cache hits are exact) and engine settings, and compared on the mean, p50, p90 and p99
  of TTFT, TPOT and E2E as the engine's own timestamps give them (LLMServingSim: `first_token_ts −
  queued_ts`; inference-sim: the OpenTelemetry request spans). The bar: every quantile of E2E and
  TPOT within 15%, of TTFT within 30%.
- **Runs replayed stage by stage from their summaries** (three runs, 21 stages): inference-perf's
  KubeCon NA 2025 demos (`inference-perf-kubecon`): Llama-3.1-8B-Instruct on one H100 80GB,
  `max_num_seqs` 128, `max_model_len` 512, served by vLLM 0.11 with EAGLE-3 speculative decoding
  (`vllm+eagle`), by vLLM 0.11 with bitsandbytes quantisation (`vllm+quantization`) and by vLLM 0.9
  with the V0 engine (`vllm+v0_engine`); seven constant-rate stages of 60 s from 1 req/s up,
  shared-prefix prompts of 192 tokens, 64 output tokens. Each run's `manifests.yaml` gives the model,
  the GPU and the server's flags, `config.yaml` the load. The tool writes only per-stage summaries,
  so each stage is replayed from the load it states and compared on the client-side TTFT and E2E
  quantiles it wrote (its `time_per_output_token` is per stream chunk and is left out); the same bars.
- **Closed-loop runs** (`aiconfigurator-silicon`, 823 runs, one per row of AIConfigurator's table):
  aiperf closed loops with fixed lengths (`--concurrency C`, random prompts of `isl` tokens, `osl`
  output tokens forced) on H100, H200, B200 and B300 systems, vLLM 0.12–0.19, at TP 1–8 with attention
  data parallelism and expert parallelism as each row records them; the table has only the client's
  mean TTFT and mean TPOT of each run. Each row is simulated as the benchmark ran: a closed loop of
  `batch_size × attention_dp_size` users, 20 requests per user after 2 per user of warm-up (left out
  of the figures, as aiperf's `--warmup-request-count` leaves them out), fixed lengths, the row's
  model at the row's precision (fp4 rows of MiniMax-M2.5 serve NVIDIA's NVFP4 export, a catalog model
  of its own), the MoE tokens routed as random prompts route (`steptime.moe_routing: random`). The
  bars: over all runs, median absolute error of the mean TTFT ≤ 20% and of the mean TPOT ≤ 8%; for
  every (model, GPU), ≤ 35% and ≤ 20%; for every (model, GPU, layout) of at least five runs, a TPOT
  signed median within ±15%. Signed medians say which way a group is off (positive: predicted slower
  than measured); [steptime.md](steptime.md#what-vllm-does-in-a-moe-or-parallel-step) says which
  mechanism each layout's figure rests on and why the ones that miss miss.

## What was fitted on what

The figures below are scored on every run above. The defaults they use were fitted as follows, so
the closed-loop figures are partly in-sample:

| default | fitted on | overlap with the runs scored here |
|---|---|---|
| kernel tables and the fitted kernel profiles (`sim/steptime/profiles/<system>.json`) | AIConfigurator's isolated kernel timings of H100, H200, B200, B300 and RTX PRO 6000 systems (`internal/study/kernelfit`, [steptime.md](steptime.md)) | none: no serving run |
| host costs (`sim/steptime/profiles/host.json`: the engine's CPU time per step and per sequence, the API server's per step; the request path's other stages are sourced, not fitted: [request-path.md](request-path.md)) | every family of measured runs at once, each family weighing the same (`calibrate.FitHostFamilies`): the mean TTFT and TPOT of 104 of the 823 closed-loop runs (`calibrate.HostSplit` puts every other run of each (model, GPU) group, sorted by run name, in a fit half of 414 runs; the fit took every fourth of that half), the nine residency open-loop runs, the three inference-perf stepped runs and the eight request-level runs | those 104 closed-loop runs (one in eight) and every open-loop, stepped and request-level run: those families' figures here are in-sample; [host-costs.md](host-costs.md) scores each family with fits that did not see it |
| the memory model's three constants ([memory-model.md](memory-model.md)) | the vLLM-logged KV block counts of five start-ups | the four inference-sim runs and the RTX 4090 run (their block counts, not their latencies) |

`go test ./internal/study/accuracy` enforces both sets of bars on these runs (it skips with `-short`
and without the reference data); the figures that miss today are listed, each with its ceiling and
the reason it misses, in `knownMisses` and `knownRunMisses` of
`internal/study/accuracy/measured_test.go`, and the test fails when one of them gets worse or starts
to meet its bar.

Regenerate: `docs/gen-accuracy.sh` (runs `go run ./cmd/headroom validate --runs-from
../shared/data/measured --output markdown --plot docs/figures/accuracy-silicon.svg`).

![Predicted against measured mean TTFT and TPOT of the closed-loop runs, log-log, one colour per model, with the y = x line and the ±20% band](figures/accuracy-silicon.svg)

HEAD
cat "$body"
cat <<'OPEN'

## Open-loop runs: vLLM 0.23 on one H100 (residency traces)

The nine Poisson runs of `residency-vllm-h100-qwen3-14b` (Qwen3-14B, 2-10 req/s, one to five
tenants), replayed request by request on `--gpu h100-sxm` (the runs do not name it). Their bars
(`TestOpenLoopRunsMeetTheBars`): TTFT p50 and ITL p50 within 10% at every rate, TPOT mean within 5%.

OPEN
sed 's/^### /#### Open loops: /; s/^## /### Open loops: /' "$open"
cat <<'FAM'

## Host costs: fitted on one family, checked on the others

Generated from `internal/study/calibrate/testdata/host-families.json`; how it was fitted, and why
the joint fit is the default: [host-costs.md](host-costs.md).

FAM
sed -n '/^<!-- BEGIN GENERATED/,/^<!-- END GENERATED/p' docs/host-costs.md | sed '1d;$d'
cat <<'TAIL'

## Reading the tables

- "Runs" counts the runs that simulated; a run that did not is listed under "Runs that did not
  simulate" with the reason, and a row whose model or GPU the catalog does not know is skipped
  (the headline counts both).
- The per-layout table splits each (model, GPU) by TP, attention DP and the experts' split
  (`moe_tp × moe_ep` over the TP × DP GPUs); its signed medians show which layouts carry a group's
  error. The worst-runs tables give each run's id as the table has it, to find the row.
- `headroom calibrate` fits the step-time coefficients to the user's own runs and removes most of a
  GPU's systematic error; see [calibration.md](calibration.md).
TAIL
} > "$out/accuracy.md"
echo "wrote $out/accuracy.md and $out/figures/accuracy-silicon.svg" >&2
