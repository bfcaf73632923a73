// The Step view's inputs: the POST /v1/steptime body, the same question as
// `headroom steptime` flags, where the server's field problems go, and the
// answer's parts the view shows.

import { command, flagArgs } from "./cli";
import type { FieldMap } from "./problems";
import { flag, num, prune, str, type FieldDef, type State } from "./query";

export const stepFields: readonly FieldDef[] = [
  { key: "model", def: "llama-3.1-8b" },
  { key: "gpu", def: "h100-sxm" },
  { key: "tp", def: "1" },
  { key: "dp", def: "1" },
  { key: "expert_parallel", def: false },
  { key: "backend", def: "table" },
  { key: "decode_seqs", def: "64" },
  { key: "kv_len", def: "2048" },
  { key: "prefill_tokens", def: "0" },
  { key: "prefill_context_tokens", def: "0" },
  { key: "prefill_chunks", def: "" },
  { key: "max_num_seqs", def: "" },
];

export const stepFieldMap: FieldMap = [
  ["model", "model"],
  ["gpu", "gpu"],
  ["tp", "tp"],
  ["dp", "dp"],
  ["expert_parallel", "expert_parallel"],
  ["steptime.backend", "backend"],
  ["batch.decode_seqs", "decode_seqs"],
  ["batch.kv_len", "kv_len"],
  ["batch.prefill_tokens", "prefill_tokens"],
  ["batch.prefill_context_tokens", "prefill_context_tokens"],
  ["batch.prefill_chunks", "prefill_chunks"],
  ["batch", "decode_seqs"],
  ["engine.max_num_seqs", "max_num_seqs"],
];

export function stepBody(s: State): Record<string, unknown> {
  return prune({
    model: str(s, "model").trim(),
    gpu: str(s, "gpu").trim(),
    tp: num(str(s, "tp")),
    dp: num(str(s, "dp")),
    expert_parallel: flag(s, "expert_parallel") || undefined,
    steptime: { backend: str(s, "backend") || undefined },
    engine: { max_num_seqs: num(str(s, "max_num_seqs")) },
    batch: {
      decode_seqs: num(str(s, "decode_seqs")),
      kv_len: num(str(s, "kv_len")),
      prefill_tokens: num(str(s, "prefill_tokens")),
      prefill_context_tokens: num(str(s, "prefill_context_tokens")),
      prefill_chunks: num(str(s, "prefill_chunks")),
    },
  });
}

export function stepCLI(s: State): string {
  const argv = ["headroom", "steptime", ...flagArgs("model", str(s, "model")), ...flagArgs("gpu", str(s, "gpu"))];
  if (str(s, "tp").trim() !== "1") argv.push(...flagArgs("tp", str(s, "tp")));
  if (str(s, "dp").trim() !== "1") argv.push(...flagArgs("dp", str(s, "dp")));
  if (flag(s, "expert_parallel")) argv.push("--expert-parallel");
  argv.push(...flagArgs("steptime", str(s, "backend")));
  const nz = (k: string) => (str(s, k).trim() === "0" ? "" : str(s, k));
  argv.push(...flagArgs("batch-decode", nz("decode_seqs")), ...flagArgs("kv-len", nz("kv_len")));
  argv.push(...flagArgs("prefill-tokens", nz("prefill_tokens")), ...flagArgs("prefill-context", nz("prefill_context_tokens")));
  argv.push(...flagArgs("prefill-chunks", str(s, "prefill_chunks")), ...flagArgs("max-num-seqs", str(s, "max_num_seqs")));
  return command(argv);
}

export interface Kernel {
  op: string;
  name: string;
  calls: number;
  shape: string;
  time_us: number;
  per_call_us: number;
  share_ratio: number;
  bound: string;
  source: string;
  measured_us?: number;
}

export interface StepReport {
  model: string;
  gpu: string;
  tp: number;
  dp: number;
  gpus: number;
  backend: string;
  profile_source?: string;
  kernel_db?: { system: string; source: string };
  batch: { decode_seqs: number; kv_len: number; prefill_tokens: number; tokens: number; sampled: number };
  kernels: Kernel[];
  ops: { op: string; time_us: number; share_ratio: number; bound: string }[];
  bounds: { bound: string; time_us: number; share_ratio: number }[];
  gpu_ms: number;
  cpu_ms: number;
  cpu_hidden_ms: number;
  step_ms: number;
  frontend_ms: number;
  tokens_per_s: number;
  output_tokens_per_s: number;
  tpot_ms?: number;
  notes?: string[];
}

/** kernelRows are the kernels in op order, each with where its segment starts (µs), for the stacked bar. */
export function kernelRows(r: StepReport): (Kernel & { start_us: number; end_us: number })[] {
  const order = new Map(r.ops.map((o, i) => [o.op, i]));
  const ks = [...r.kernels].sort((a, b) => (order.get(a.op) ?? 99) - (order.get(b.op) ?? 99));
  let at = 0;
  return ks.map((k) => {
    const row = { ...k, start_us: at, end_us: at + k.time_us };
    at += k.time_us;
    return row;
  });
}
