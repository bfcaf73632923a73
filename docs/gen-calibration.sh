#!/usr/bin/env bash
# Regenerates docs/calibration.md: fit the step-time profile on one real run (or one stage of it) and
# predict the others.
#   docs/gen-calibration.sh [DATA_DIR]
# HEADROOM_DOCS_OUT writes it to another folder (go run ./cmd/headroom-fit --check does).
set -euo pipefail
cd "$(dirname "$0")/.."
data=${1:-../shared/data/measured}
out=${HEADROOM_DOCS_OUT:-docs}
is=$data/inference-sim-eval-ground-truth
ls_=$data/llmservingsim
bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT
go build -o "$bin/headroom" ./cmd/headroom
h=$bin/headroom
{
cat <<'HEAD'
# Calibration: fit on one run, predict the others

`headroom calibrate` fits the step-time model to your own benchmark result and says how well the fit
predicts other runs. Here it fits the first half of the RTX PRO 6000 run shipped in `testdata/` (by
send time) and predicts the second, writes the profile, and a simulation uses it:

```sh
headroom calibrate --trace testdata/llmservingsim/RTXPRO6000_Llama-3.1-8B --split 2 --stage 0 --holdout-stages --out rtxpro-profile.json
headroom simulate --gpu rtx-pro-6000 --calibration rtxpro-profile.json
```

**What it fits.** The run is replayed through the simulator (its arrivals, lengths and engine
settings) and the profile's scale factors are fitted with gonum's Nelder-Mead, one per resource
class whose time a run moves together: compute, memory, fixed overheads, plus the fused-MoE experts
for a MoE model and the link for a TP > 1 run (each within 1/4 to 4 of the default). The loss is the
squared log error of the TTFT, TPOT and E2E mean, p50, p90 and p99, with a weak pull towards the
defaults (`--prior`) for factors the run cannot identify; `--max-evaluations` (400) bounds the
simulations.

**What it reads**, with the format detected: vLLM `bench serve --save-result --save-detailed` JSON (and
`benchmark_serving.py` and its forks that write seconds under keys without `_ms`, with `--metadata`'s
`gpu=4xNVIDIA_L40S` and deployment keys, and `vllm bench sweep serve`'s `run=N.json` and
`summary.json`, one stage per run with its serve parameters such as `max_num_seqs`), SGLang
`bench_serving` JSONL (several runs appended: one stage each), GenAI-Perf `profile_export.json` and its
`profile_export_genai_perf.{json,csv}` summaries (values with thousands separators), AIPerf
`profile_export.jsonl` and its summaries (0.10's schema 1.3 included: the CSV's GPU-telemetry section,
the JSON's `models.items` and `phases`), guidellm `benchmarks.json`, inference-perf request records and
its default per-stage reports, LLMServingSim `requests.jsonl` (or a run folder), inference-sim `blis
observe` `trace.csv`, llmperf summaries and `*_individual_responses.json`, and a plain CSV (`send_s`,
`input_tokens`, `output_tokens`, `ttft_ms`, `e2e_ms`, optional `error`, `stage`). What a file
does not record comes from `--model`, `--gpu`, `--tp` and the engine flags, as for `validate`. A
benchmark in which no request completed has no latency statistics (not measured zeros). Files with
only the tools' summaries are fitted to their quantiles, each benchmark replayed from the load its
summary states; the result says which fit it is (`Fitted to` in the table, `basis` — `requests` or
`aggregate` — in the JSON, with each figure's `stage`). `--stage N --holdout-stages` fits one benchmark
of a sweep and predicts the others (the whole run is replayed, as the server saw it, and only the
chosen benchmark's requests are compared); `--split 2` cuts a single-benchmark run in two halves by
send time. The profile file is versioned JSON (GPU, model, TP, engine version, the fitted scales, fit
errors, the source file's SHA-256); scenarios name it in `calibration` (`--calibration FILE`), the API
stores one per `POST /v1/calibrations` ([api.md](api.md)).

**Draft acceptance.** `--fit acceptance` fits a speculative run's draft acceptance instead (the run
must record the server's `--speculative-config`): the step's cost is the simulator's, and the
conditional acceptance rate is bisected until the simulated decode time (E2E P50 − TTFT P50, which
leaves the request path's TTFT error out) matches the measured one; the rate fitted on the means is
reported beside it (they differ when requests accept unevenly, which the simulator does not model).
`--baseline RUN` (same server and load without speculation) corrects the target by the simulator's own
error on it. `--out` writes the `acceptance` block, with its `source`, for `engine.speculative`
([speculative.md](speculative.md)). On the shared EAGLE-3 run (vLLM 0.11, synthetic shared-prefix
prompts; `headroom calibrate --fit acceptance --trace
../shared/data/measured/inference-perf-kubecon/vllm+eagle --stage 0 --holdout-stages --out
eagle-acceptance.json`) the fit on stage 0 is 0 on the medians (the median request accepted nearly
nothing) and 0.071 on the means (mean acceptance length 1.08); at the medians' rate the other stages'
E2E P50 fall within 8% below saturation and the saturation throughput within 1% (`TestEagleBars`,
internal/study/accuracy). vLLM's own counters give the acceptance directly: `--spec-decode-metrics
after.txt [--spec-decode-metrics-before before.txt]` reads the `vllm:spec_decode_num_drafts`,
`…_num_draft_tokens`, `…_num_accepted_tokens` and `…_num_accepted_tokens_per_pos{position}` counters
of a `/metrics` scrape (Prometheus text; the difference of two scrapes bounds them to the run) and
writes `per_position`, no simulation needed. The shared run's per-stage Prometheus summaries do not
carry them.

**The fits below** are on the real runs of the reference data (`../shared/data/measured`). Each table
gives the median absolute percentage error (APE) over those quantiles with the default coefficients
→ after calibration, for the fitted run and for held-out runs or stages; "P99" is the median APE over
the three P99s. The held-out bar: median APE ≤ 5% for E2E and TPOT, ≤ 10% for TTFT and for the P99s.
Fitted on and scored on: in each table the row of role "fitted" is the run (or stage) the
calibration was fitted on, the rows "held out" were not in that fit. The figures left of each arrow
use the defaults: the kernel profiles are fitted to isolated kernel timings (no serving run), but the
host costs (`sim/steptime/profiles/host.json`) to four families of measured runs at once, these eight
runs among them (the request-level family; [accuracy.md](accuracy.md#what-was-fitted-on-what) says
which runs of each family), so the default figures are in-sample for the host costs.

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
} > "$out/calibration.md"
echo "wrote $out/calibration.md" >&2
