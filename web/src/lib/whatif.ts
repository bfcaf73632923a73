// The What-if view's inputs: one scenario's knobs, the POST /v1/simulate
// body they make, the same question as `headroom simulate` (or, with a
// setting pinned as A, `headroom compare`), and the side-by-side's rows.

import { command, flagArgs, setArgs } from "./cli";
import type { FieldMap } from "./problems";
import { decode, encode, flag, num, prune, str, type FieldDef, type State } from "./query";

export const whatifFields: readonly FieldDef[] = [
  { key: "model", def: "llama-3.1-8b" },
  { key: "gpu", def: "h100-sxm" },
  { key: "tp", def: "1" },
  { key: "replicas", def: "1" },
  { key: "gpu_memory_utilization", def: "0.9" },
  { key: "max_num_seqs", def: "" },
  { key: "max_num_batched_tokens", def: "" },
  { key: "chunked_prefill", def: true },
  { key: "prefix_caching", def: true },
  { key: "load", def: "rate" },
  { key: "rate_rps", def: "10" },
  { key: "concurrency", def: "32" },
  { key: "requests", def: "1000" },
  { key: "input_tokens", def: "512" },
  { key: "output_tokens", def: "256" },
  // The setting pinned as A, as its own query string.
  { key: "a", def: "" },
];

/** The settings compared side by side (every field but the pin). */
export const settingFields = whatifFields.filter((f) => f.key !== "a");

export const whatifFieldMap: FieldMap = [
  ["model", "model"],
  ["gpu", "gpu"],
  ["tp", "tp"],
  ["replicas", "replicas"],
  ["engine.gpu_memory_utilization", "gpu_memory_utilization"],
  ["engine.max_num_seqs", "max_num_seqs"],
  ["engine.max_num_batched_tokens", "max_num_batched_tokens"],
  ["engine.enable_chunked_prefill", "chunked_prefill"],
  ["engine.enable_prefix_caching", "prefix_caching"],
  ["workload.arrival.rate_rps", "rate_rps"],
  ["workload.arrival.concurrency", "concurrency"],
  ["workload.requests", "requests"],
  ["workload.input_tokens", "input_tokens"],
  ["workload.output_tokens", "output_tokens"],
  ["workload", "load"],
];

/** scenario is the POST /v1/simulate body (with the time series the charts need). */
export function scenario(s: State): Record<string, unknown> {
  const closed = str(s, "load") === "concurrency";
  return prune({
    model: str(s, "model").trim(),
    gpu: str(s, "gpu").trim(),
    tp: num(str(s, "tp")),
    replicas: num(str(s, "replicas")),
    engine: {
      gpu_memory_utilization: num(str(s, "gpu_memory_utilization")),
      max_num_seqs: num(str(s, "max_num_seqs")),
      max_num_batched_tokens: num(str(s, "max_num_batched_tokens")),
      enable_chunked_prefill: flag(s, "chunked_prefill") ? undefined : false,
      enable_prefix_caching: flag(s, "prefix_caching") ? undefined : false,
    },
    workload: {
      requests: num(str(s, "requests")),
      arrival: closed ? { type: "closed_loop", concurrency: num(str(s, "concurrency")) } : { type: "poisson", rate_rps: num(str(s, "rate_rps")) },
      input_tokens: num(str(s, "input_tokens")) === undefined ? undefined : { type: "fixed", value: num(str(s, "input_tokens")) },
      output_tokens: num(str(s, "output_tokens")) === undefined ? undefined : { type: "fixed", value: num(str(s, "output_tokens")) },
    },
    report: { timeseries: true },
  });
}

/** scenarioArgs are the simulate flags of a setting. */
function scenarioArgs(s: State): string[] {
  const argv = [...flagArgs("model", str(s, "model")), ...flagArgs("gpu", str(s, "gpu"))];
  if (str(s, "tp").trim() !== "1") argv.push(...flagArgs("tp", str(s, "tp")));
  if (str(s, "replicas").trim() !== "1") argv.push(...flagArgs("replicas", str(s, "replicas")));
  if (str(s, "load") === "concurrency") argv.push(...flagArgs("concurrency", str(s, "concurrency")));
  else argv.push(...flagArgs("rate-rps", str(s, "rate_rps")));
  if (str(s, "requests").trim() !== "1000") argv.push(...flagArgs("requests", str(s, "requests")));
  if (str(s, "input_tokens").trim() !== "512") argv.push(...flagArgs("input-tokens", str(s, "input_tokens")));
  if (str(s, "output_tokens").trim() !== "256") argv.push(...flagArgs("output-tokens", str(s, "output_tokens")));
  argv.push(...engineSets(s));
  return argv;
}

/** engineSets are the engine settings that differ from vLLM's defaults, as --set pairs. */
function engineSets(s: State): string[] {
  const out: string[] = [];
  if (str(s, "gpu_memory_utilization").trim() !== "0.9") out.push(...setArgs("engine.gpu_memory_utilization", str(s, "gpu_memory_utilization")));
  out.push(...setArgs("engine.max_num_seqs", str(s, "max_num_seqs")));
  out.push(...setArgs("engine.max_num_batched_tokens", str(s, "max_num_batched_tokens")));
  if (!flag(s, "chunked_prefill")) out.push("--set", "engine.enable_chunked_prefill=false");
  if (!flag(s, "prefix_caching")) out.push("--set", "engine.enable_prefix_caching=false");
  return out;
}

/** pinned reads the setting pinned as A (null when none). */
export function pinned(s: State): State | null {
  const a = str(s, "a");
  return a ? decode(a, settingFields) : null;
}

/** pin writes a setting as the value of the "a" key. */
export function pin(s: State): string {
  return encode(s, settingFields) || "?";
}

/** whatifCLI is `headroom simulate`, or with A pinned `headroom compare` (B as --b-set changes). */
export function whatifCLI(s: State): string {
  const a = pinned(s);
  if (!a) return command(["headroom", "simulate", ...scenarioArgs(s), "--set", "report.timeseries=true"]);
  const argv = ["headroom", "compare", ...scenarioArgs(a)];
  for (const d of differences(a, s)) {
    argv.push("--b-set", `${d.path}=${d.b !== "" ? d.b : d.key === "gpu_memory_utilization" ? "0.9" : "0"}`);
  }
  if (differences(a, s).some((d) => d.path.startsWith("workload"))) argv.push("--keep-workloads");
  return command(argv);
}

export interface SettingDiff {
  key: string;
  /** The scenario field the setting is. */
  path: string;
  a: string;
  b: string;
}

const paths: Record<string, string> = {
  model: "model",
  gpu: "gpu",
  tp: "tp",
  replicas: "replicas",
  gpu_memory_utilization: "engine.gpu_memory_utilization",
  max_num_seqs: "engine.max_num_seqs",
  max_num_batched_tokens: "engine.max_num_batched_tokens",
  chunked_prefill: "engine.enable_chunked_prefill",
  prefix_caching: "engine.enable_prefix_caching",
  requests: "workload.requests",
  input_tokens: "workload.input_tokens.value",
  output_tokens: "workload.output_tokens.value",
};

/** arrival is a setting's load as the YAML of workload.arrival. */
export function arrival(s: State): string {
  return str(s, "load") === "concurrency"
    ? `{type: closed_loop, concurrency: ${str(s, "concurrency").trim()}}`
    : `{type: poisson, rate_rps: ${str(s, "rate_rps").trim()}}`;
}

function shown(s: State, key: string): string {
  const v = s[key];
  if (typeof v === "boolean") return String(v);
  return String(v ?? "").trim();
}

/** differences lists the settings that differ between A and B; the load is one setting, workload.arrival. */
export function differences(a: State, b: State): SettingDiff[] {
  const out: SettingDiff[] = [];
  for (const [key, path] of Object.entries(paths)) {
    const x = shown(a, key);
    const y = shown(b, key);
    if (x !== y) out.push({ key, path, a: x, b: y });
  }
  if (arrival(a) !== arrival(b)) out.push({ key: "load", path: "workload.arrival", a: arrival(a), b: arrival(b) });
  return out;
}

/** The report figures the side-by-side lists, with which way is better. */
export const compared: ReadonlyArray<{ name: string; label: string; better: "lower" | "higher" }> = [
  { name: "ttft_ms.p50", label: "TTFT p50", better: "lower" },
  { name: "ttft_ms.p99", label: "TTFT p99", better: "lower" },
  { name: "tpot_ms.p50", label: "TPOT p50", better: "lower" },
  { name: "tpot_ms.p99", label: "TPOT p99", better: "lower" },
  { name: "itl_ms.p99", label: "ITL p99", better: "lower" },
  { name: "e2e_ms.p50", label: "E2E p50", better: "lower" },
  { name: "e2e_ms.p99", label: "E2E p99", better: "lower" },
  { name: "queue_ms.p99", label: "queue p99", better: "lower" },
  { name: "throughput.requests_per_s", label: "throughput", better: "higher" },
  { name: "throughput.output_tokens_per_s", label: "output tokens", better: "higher" },
  { name: "kv_cache.peak_usage_ratio", label: "KV cache peak use", better: "lower" },
  { name: "preemptions", label: "preemptions", better: "lower" },
];

/** figure reads a dotted report path. */
export function figure(rep: unknown, path: string): number | undefined {
  let v: unknown = rep;
  for (const k of path.split(".")) {
    if (v === null || typeof v !== "object") return undefined;
    v = (v as Record<string, unknown>)[k];
  }
  return typeof v === "number" ? v : undefined;
}

export interface MetricDelta {
  name: string;
  label: string;
  a?: number;
  b?: number;
  /** (b − a) / a × 100, undefined when a is 0 or missing. */
  deltaPct?: number;
  /** Whether B is better, worse or about the same (within 2 %). */
  verdict: "better" | "worse" | "same";
}

/** deltas compares two reports figure by figure. */
export function deltas(a: unknown, b: unknown): MetricDelta[] {
  return compared.map((m) => {
    const x = figure(a, m.name);
    const y = figure(b, m.name);
    const d: MetricDelta = { name: m.name, label: m.label, a: x, b: y, verdict: "same" };
    if (x !== undefined && y !== undefined && x !== 0) {
      d.deltaPct = ((y - x) / Math.abs(x)) * 100;
      if (Math.abs(d.deltaPct) >= 2) {
        const up = d.deltaPct > 0;
        d.verdict = up === (m.better === "higher") ? "better" : "worse";
      }
    } else if (x !== undefined && y !== undefined && x !== y) {
      d.verdict = (y > x) === (m.better === "higher") ? "better" : "worse";
    }
    return d;
  });
}
