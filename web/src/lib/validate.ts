// The Validate view: an uploaded benchmark run (a file, or a folder's
// files with their paths), the fields that fill what it does not record,
// the forms of POST /v1/inspect, /v1/validate and /v1/calibrations they
// make, the same questions as `headroom validate` / `headroom calibrate`,
// and the predicted-against-measured rows the chart draws.

import { command, flagArgs, shellQuote } from "./cli";
import type { FieldMap } from "./problems";
import { str, type FieldDef, type State } from "./query";

export const validateFields: readonly FieldDef[] = [
  { key: "model", def: "" },
  { key: "gpu", def: "" },
  { key: "tp", def: "" },
  { key: "max_num_seqs", def: "" },
  { key: "max_num_batched_tokens", def: "" },
  { key: "max_model_len", def: "" },
  // "" = as the run records it (else vLLM's default), "true" or "false".
  { key: "enable_chunked_prefill", def: "" },
  { key: "enable_prefix_caching", def: "" },
  { key: "format", def: "" },
  { key: "calibration", def: "" },
];

/** The fields POST /v1/calibrations takes (the others are validate's). */
const calibrationKeys = ["format", "model", "gpu", "tp", "max_num_seqs", "max_num_batched_tokens", "max_model_len"];

export const validateFieldMap: FieldMap = validateFields.map((f) => [f.key, f.key] as const).concat([
  ["file", "file"],
  ["files", "file"],
]);

/** Upload is one file of the run with its path in the folder (or its name). */
export interface Upload {
  path: string;
  file: Blob;
}

/** form is the multipart body: the fields that are set, then the files (each named by its path). */
export function form(s: State, files: readonly Upload[], keys: readonly string[] = validateFields.map((f) => f.key)): FormData {
  const fd = new FormData();
  for (const k of keys) {
    const v = str(s, k).trim();
    if (v !== "") fd.append(k, v);
  }
  for (const u of files) fd.append("file", u.file, u.path);
  return fd;
}

export function calibrationForm(s: State, files: readonly Upload[]): FormData {
  return form(s, files, calibrationKeys);
}

/** runName is what the CLI reads: the file, or the folder the files share. */
export function runName(files: readonly Upload[]): string {
  if (files.length === 0) return "RESULT_FILE";
  if (files.length === 1) return files[0].path.split("/").pop() || files[0].path;
  const tops = new Set(files.map((f) => f.path.split("/")[0]));
  return tops.size === 1 && files.every((f) => f.path.includes("/")) ? [...tops][0] : ".";
}

const flags: Record<string, string> = {
  model: "model",
  gpu: "gpu",
  tp: "tp",
  max_num_seqs: "max-num-seqs",
  max_num_batched_tokens: "max-num-batched-tokens",
  max_model_len: "max-model-len",
  format: "format",
};

function runFlags(s: State, keys: readonly string[]): string[] {
  const argv: string[] = [];
  for (const k of keys) if (flags[k]) argv.push(...flagArgs(flags[k], str(s, k)));
  for (const k of ["enable_chunked_prefill", "enable_prefix_caching"]) {
    if (keys.includes(k) && str(s, k) !== "") argv.push(`--${k.replace(/_/g, "-")}=${str(s, k)}`);
  }
  return argv;
}

/** validateCLI is `headroom validate --run …` with the fields as flags (a calibration id as the file it downloads to). */
export function validateCLI(s: State, files: readonly Upload[]): string {
  const argv = ["headroom", "validate", "--run", runName(files), ...runFlags(s, validateFields.map((f) => f.key))];
  if (str(s, "calibration")) argv.push("--calibration", `calibration-${str(s, "calibration")}.json`);
  return command(argv);
}

/** calibrateCLI is `headroom calibrate --trace …`. */
export function calibrateCLI(s: State, files: readonly Upload[]): string {
  return command(["headroom", "calibrate", "--trace", runName(files), ...runFlags(s, calibrationKeys), "--out", "calibration.json"]);
}

/** curlForm are the -F arguments of an upload (the folder's files keep their paths; at most `most` listed). */
export function curlForm(s: State, files: readonly Upload[], keys: readonly string[], most = 12): [string, string][] {
  const out: [string, string][] = [];
  for (const k of keys) {
    const v = str(s, k).trim();
    if (v !== "") out.push([k, v]);
  }
  const shown = files.slice(0, most);
  for (const u of shown) out.push(["file", files.length > 1 ? `@${u.path};filename=${u.path}` : `@${u.path}`]);
  if (files.length > most) out.push(["file", `@… (${files.length - most} more files)`]);
  if (files.length === 0) out.push(["file", "@RESULT_FILE"]);
  return out;
}

export { calibrationKeys, shellQuote };

export interface Metric {
  name: string;
  measured: number;
  predicted: number;
  error_pct: number;
}

export interface Comparison {
  run: string;
  stage?: number;
  basis: string;
  model: string;
  gpu: string;
  engine_version: string;
  requests: number;
  logged_blocks: number;
  predicted_blocks: number;
  metrics: Metric[] | null;
  notes?: string[];
  closed_loop?: { concurrency: number; input_tokens: number; output_tokens: number };
  error?: string;
}

export interface ValidationReport {
  run: string;
  format: string;
  comparisons: Comparison[];
  notes?: string[];
}

export interface PointRow {
  part: string;
  metric: string;
  /** ttft, tpot, e2e or throughput: the chart's colour. */
  kind: string;
  measured: number;
  predicted: number;
  error_pct: number;
}

/** latencyRows are the latency figures of every part, for the predicted-against-measured chart (ms). */
export function latencyRows(r: ValidationReport): PointRow[] {
  const out: PointRow[] = [];
  for (const c of r.comparisons) {
    for (const m of c.metrics ?? []) {
      const kind = m.name.split(".")[0];
      if (!kind.endsWith("_ms") || !(m.measured > 0) || !(m.predicted > 0)) continue;
      out.push({ part: c.run, metric: m.name, kind: kind.replace(/_ms$/, "").toUpperCase(), measured: m.measured, predicted: m.predicted, error_pct: m.error_pct });
    }
  }
  return out;
}

/** worst is the largest absolute error of a part's latency figures (%), undefined when none. */
export function worst(c: Comparison): number | undefined {
  const errs = (c.metrics ?? []).filter((m) => m.name.includes("_ms.")).map((m) => Math.abs(m.error_pct));
  return errs.length ? Math.max(...errs) : undefined;
}
