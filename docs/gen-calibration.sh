#!/usr/bin/env bash
# Regenerates docs/calibration.md: fit the step-time profile on one real run (or one stage of it) and
# predict the others.
#   docs/gen-calibration.sh [DATA_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
data=${1:-../shared/data/measured}
is=$data/inference-sim-eval-ground-truth
ls_=$data/llmservingsim
go build -o /tmp/headroom-calibration-doc ./cmd/headroom
h=/tmp/headroom-calibration-doc
{
cat <<'HEAD'
# Calibration: fit on one run, predict the others

`headroom calibrate --trace RUN [--holdout RUN…]` replays a measured run through the simulator and fits
the step-time coefficients (GEMM, bandwidth and attention efficiencies, per-step and per-sequence CPU
overheads, and the all-reduce link for TP > 1 runs) with Nelder-Mead, minimising the squared log error of
the TTFT, TPOT and E2E mean, p50, p90 and p99; a weak prior keeps coefficients the run cannot
identify near the defaults. Each table gives the median absolute percentage error (APE) over those
quantiles with the default coefficients → after calibration, for the fitted run and for held-out runs
or stages; "P99" is the median APE over the three P99s. The held-out bar: median APE ≤ 5% for E2E and
TPOT, ≤ 10% for TTFT and for the P99s.

For multi-benchmark runs (`--stage N --holdout-stages`) the whole run is replayed, as the server saw
it, and only the chosen benchmark's requests are compared. `--split 2` cuts a single-benchmark run in
two halves by send time.

Regenerate: `docs/gen-calibration.sh`.

HEAD
echo "## H100, vLLM 0.11: fit on one run, predict three others"
echo
$h calibrate --trace "$is/jan20-codellama-train-1" --holdout "$is/jan20-codellama-prefill-1" --holdout "$is/jan20-prefill-llama7b-tp1-1" --holdout "$is/jan21-llama7b-train-1" --output markdown
echo "## H100, vLLM 0.11: fit on the synchronous stage, predict the throughput and constant-rate stages"
echo
$h calibrate --trace "$is/jan20-codellama-prefill-1" --stage 0 --holdout-stages --output markdown
$h calibrate --trace "$is/jan20-prefill-llama7b-tp1-1" --stage 0 --holdout-stages --output markdown
echo "## H100, vLLM 0.11, Llama-2-7B: fit on the first half, predict the second"
echo
$h calibrate --trace "$is/jan21-llama7b-train-1" --split 2 --stage 0 --holdout-stages --output markdown
echo "## RTX PRO 6000, vLLM 0.19: fit on Llama-3.1-8B, predict Qwen3-32B (TP 2) and Qwen3-30B-A3B (DP 2 + EP)"
echo
$h calibrate --trace "$ls_/RTXPRO6000_Llama-3.1-8B" --holdout "$ls_/RTXPRO6000_Qwen3-32B" --holdout "$ls_/RTXPRO6000_Qwen3-30B-A3B-Instruct-2507" --output markdown
echo "## RTX 4090, vLLM 0.19: fit on the first half, predict the second"
echo
$h calibrate --trace "$ls_/RTX4090_Llama-3.1-8B" --split 2 --stage 0 --holdout-stages --output markdown
} > docs/calibration.md
echo "wrote docs/calibration.md"
