// The Plan view's inputs: their query-string schema, the plan job's params
// they make (POST /v1/jobs, kind plan), the same question as `headroom
// plan` flags, and where the server's field problems go.

import { command, flagArgs, setArgs } from "./cli";
import type { FieldMap } from "./problems";
import { bucketsYAML, parseBuckets, parseProfile, profileYAML } from "./profile";
import { list, num, prune, str, type FieldDef, type State } from "./query";

/** The plan example of docs/planning.md: the view's defaults. */
export const planFields: readonly FieldDef[] = [
  { key: "model", def: "llama-3.1-70b" },
  { key: "gpus", def: ["h100-sxm", "h200", "a100-80gb", "l40s", "b200"] },
  { key: "tps", def: ["1", "2", "4", "8"] },
  { key: "load", def: "rate" },
  { key: "rate_rps", def: "4" },
  { key: "concurrency", def: "16" },
  { key: "profile", def: "" },
  { key: "profile_end_s", def: "" },
  // A trace's lengths (weight:min:max buckets), used with its profile.
  { key: "input_buckets", def: "" },
  { key: "output_buckets", def: "" },
  { key: "requests", def: "1000" },
  { key: "input_tokens", def: "512" },
  { key: "output_tokens", def: "256" },
  { key: "ttft_p99_ms", def: "2000" },
  { key: "tpot_p99_ms", def: "60" },
  { key: "e2e_p99_ms", def: "" },
  { key: "headroom", def: "1.3" },
  { key: "max_replicas", def: "16" },
  { key: "max_num_seqs", def: "" },
  { key: "gpu_memory_utilization", def: "" },
  { key: "target_utilization", def: "" },
];

/** The TP degrees offered. */
export const tpChoices = ["1", "2", "4", "8"];

/** Where each field of the plan job's params is set on the page. */
export const planFieldMap: FieldMap = [
  ["scenario.model", "model"],
  ["scenario.gpu", "gpus"],
  ["scenario.workload.arrival.rate_rps", "rate_rps"],
  ["scenario.workload.arrival.concurrency", "concurrency"],
  ["scenario.workload.rate_profile_end_s", "profile_end_s"],
  ["scenario.workload.rate_profile", "profile"],
  ["scenario.workload.requests", "requests"],
  ["scenario.workload.input_tokens.buckets", "profile"],
  ["scenario.workload.output_tokens.buckets", "profile"],
  ["scenario.workload.input_tokens", "input_tokens"],
  ["scenario.workload.output_tokens", "output_tokens"],
  ["scenario.workload", "load"],
  ["scenario.sla.ttft_ms", "ttft_p99_ms"],
  ["scenario.sla.tpot_ms", "tpot_p99_ms"],
  ["scenario.sla.e2e_ms", "e2e_p99_ms"],
  ["scenario.sla", "ttft_p99_ms"],
  ["scenario.engine.max_num_seqs", "max_num_seqs"],
  ["scenario.engine.gpu_memory_utilization", "gpu_memory_utilization"],
  ["gpus", "gpus"],
  ["tps", "tps"],
  ["headroom", "headroom"],
  ["max_replicas", "max_replicas"],
  ["target_utilization", "target_utilization"],
];

function p99(text: string): { p99: number | string } | undefined {
  const v = num(text);
  return v === undefined ? undefined : { p99: v };
}

/** tps reads the TP list as numbers (text that is not a number stays as typed). */
function tpList(s: State): (number | string)[] {
  return list(s, "tps").map((t) => num(t) ?? t);
}

/** planScenario is the scenario the plan holds every candidate to. */
export function planScenario(s: State): Record<string, unknown> {
  const load = str(s, "load");
  const workload: Record<string, unknown> = {
    input_tokens: num(str(s, "input_tokens")) === undefined ? undefined : { type: "fixed", value: num(str(s, "input_tokens")) },
    output_tokens: num(str(s, "output_tokens")) === undefined ? undefined : { type: "fixed", value: num(str(s, "output_tokens")) },
  };
  if (load === "profile") {
    workload.rate_profile = parseProfile(str(s, "profile"));
    workload.rate_profile_end_s = num(str(s, "profile_end_s"));
    for (const k of ["input", "output"] as const) {
      const b = str(s, k + "_buckets");
      if (b) workload[k + "_tokens"] = { type: "buckets", buckets: parseBuckets(b) };
    }
  } else {
    workload.requests = num(str(s, "requests"));
    workload.arrival =
      load === "concurrency"
        ? { type: "closed_loop", concurrency: num(str(s, "concurrency")) }
        : { type: "poisson", rate_rps: num(str(s, "rate_rps")) };
  }
  const gpus = list(s, "gpus");
  return prune({
    model: str(s, "model").trim(),
    // The plan replaces gpu with each candidate; the scenario needs one.
    gpu: gpus[0] ?? "h100-sxm",
    engine: {
      max_num_seqs: num(str(s, "max_num_seqs")),
      gpu_memory_utilization: num(str(s, "gpu_memory_utilization")),
    },
    workload,
    sla: {
      ttft_ms: p99(str(s, "ttft_p99_ms")),
      tpot_ms: p99(str(s, "tpot_p99_ms")),
      e2e_ms: p99(str(s, "e2e_p99_ms")),
    },
  });
}

/** planParams are the plan job's params (PlanParams). */
export function planParams(s: State): Record<string, unknown> {
  const tps = tpList(s);
  const isDefaultTPs = tps.length === 0 || tps.join(",") === tpChoices.join(",");
  const gpus = list(s, "gpus");
  return prune({
    scenario: planScenario(s),
    // None checked: the whole catalog (the API's default).
    gpus: gpus.length ? gpus : undefined,
    tps: isDefaultTPs ? undefined : tps,
    headroom: num(str(s, "headroom")),
    max_replicas: num(str(s, "max_replicas")),
    target_utilization: str(s, "load") === "profile" ? num(str(s, "target_utilization")) : undefined,
  });
}

/** planCLI is `headroom plan` with the flags that ask the same. */
export function planCLI(s: State): string {
  const argv = ["headroom", "plan", ...flagArgs("model", str(s, "model"))];
  const load = str(s, "load");
  if (load === "profile") {
    argv.push(...setArgs("workload.rate_profile", profileYAML(parseProfile(str(s, "profile")))));
    argv.push(...setArgs("workload.rate_profile_end_s", str(s, "profile_end_s")));
    for (const k of ["input", "output"] as const) {
      const b = str(s, k + "_buckets");
      if (b) argv.push("--set", `workload.${k}_tokens=${bucketsYAML(parseBuckets(b))}`);
    }
    argv.push(...flagArgs("target-utilization", str(s, "target_utilization")));
  } else {
    if (load === "concurrency") argv.push(...flagArgs("concurrency", str(s, "concurrency")));
    else argv.push(...flagArgs("rate-rps", str(s, "rate_rps")));
    if (str(s, "requests").trim() !== "1000") argv.push(...flagArgs("requests", str(s, "requests")));
  }
  const traced = (k: string) => load === "profile" && str(s, k + "_buckets") !== "";
  if (str(s, "input_tokens").trim() !== "512" && !traced("input")) argv.push(...flagArgs("input-tokens", str(s, "input_tokens")));
  if (str(s, "output_tokens").trim() !== "256" && !traced("output")) argv.push(...flagArgs("output-tokens", str(s, "output_tokens")));
  argv.push(...setArgs("sla.ttft_ms.p99", str(s, "ttft_p99_ms")));
  argv.push(...setArgs("sla.tpot_ms.p99", str(s, "tpot_p99_ms")));
  argv.push(...setArgs("sla.e2e_ms.p99", str(s, "e2e_p99_ms")));
  argv.push(...setArgs("engine.max_num_seqs", str(s, "max_num_seqs")));
  argv.push(...setArgs("engine.gpu_memory_utilization", str(s, "gpu_memory_utilization")));
  const gpus = list(s, "gpus");
  if (gpus.length) argv.push("--gpus", gpus.join(","));
  const tps = list(s, "tps");
  if (tps.length && tps.join(",") !== tpChoices.join(",")) argv.push("--tps", tps.join(","));
  if (str(s, "headroom").trim() !== "1.3") argv.push(...flagArgs("headroom", str(s, "headroom")));
  if (str(s, "max_replicas").trim() !== "16") argv.push(...flagArgs("max-replicas", str(s, "max_replicas")));
  return command(argv);
}
