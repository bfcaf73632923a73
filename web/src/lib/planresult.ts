// The parts of a plan job's result (plan.PlanResult) the view shows.

export interface PoolShape {
  gpu: string;
  tp: number;
  replicas: number;
}

export interface DisaggShape {
  prefill: PoolShape;
  decode: PoolShape;
}

export interface Candidate {
  gpu: string;
  tp: number;
  replicas: number;
  disaggregation?: DisaggShape;
  gpus: number;
  cost_per_hour_usd: number;
  cost_per_million_output_tokens_usd: number;
  meets_sla: boolean;
  ttft_p99_ms: number;
  tpot_p99_ms: number;
  e2e_p99_ms: number;
  pareto_latency_ms: number;
  throughput_rps: number;
  output_tokens_per_s: number;
  headroom: number;
  headroom_capped?: boolean;
  headroom_limiting?: string;
  qualifies: boolean;
  recommended: boolean;
  pareto: boolean;
  lost_on?: string;
  why_not?: string;
  stopped_early?: boolean;
}

export interface Recommendation {
  gpu: string;
  tp: number;
  replicas: number;
  disaggregation?: DisaggShape;
  gpu_name: string;
  gpus: number;
  cost_per_hour_usd: number;
  cost_per_million_output_tokens_usd: number;
  sustained_load: number;
  headroom: number;
  headroom_capped?: boolean;
  limiting_metric: string;
  sentence: string;
}

export interface RunnerUp {
  label: string;
  cost_per_hour_usd?: number;
  lost_on: string;
  why: string;
}

export interface Pruned {
  gpu: string;
  tp: number;
  disaggregation?: DisaggShape;
  reason: string;
}

export interface WindowOutcome {
  replicas: number;
  serving_min: number;
  requests: number;
  sla_attainment: number;
  latency_ms: number;
  sla_met: boolean;
}

export interface DayWindow {
  start_s: number;
  duration_s: number;
  rate_rps: number;
  replicas_needed: number;
  replicas_with_headroom: number;
  autoscaled: WindowOutcome;
  static: WindowOutcome;
}

export interface DayRun {
  replicas: number;
  cost_per_day_usd: number;
  sla_attainment: number;
  windows_meeting_sla: number;
  latency_ms: number;
}

export interface DayPlan {
  duration_s: number;
  window_s: number;
  peak_rate_rps: number;
  windows: DayWindow[];
  autoscaled: DayRun;
  static: DayRun;
  savings_per_day_usd: number;
  savings_pct: number;
  binding_metric: string;
  binding_limit_ms?: number;
  summary: string;
}

export interface PlanResult {
  dimension: string;
  target_load: number;
  required_headroom: number;
  recommendation: Recommendation | null;
  summary: string;
  runners_up: RunnerUp[] | null;
  candidates: Candidate[] | null;
  missed: Candidate[] | null;
  pruned: Pruned[] | null;
  pareto_metric: string;
  pareto_limit_ms?: number;
  notes: string[] | null;
  day?: DayPlan;
  simulations: number;
}

/** label names a configuration as the CLI does: "h100-sxm TP2×3". */
export function label(c: { gpu: string; tp: number; replicas?: number; disaggregation?: DisaggShape }): string {
  const d = c.disaggregation;
  if (d) return `prefill ${d.prefill.gpu} TP${d.prefill.tp}×${d.prefill.replicas} + decode ${d.decode.gpu} TP${d.decode.tp}×${d.decode.replicas}`;
  return c.replicas ? `${c.gpu} TP${c.tp}×${c.replicas}` : `${c.gpu} TP${c.tp}`;
}

/** status sorts a candidate for the chart's legend. */
export function status(c: Candidate): "recommended" | "qualifies" | "short of the headroom" | "misses the SLA" {
  if (c.recommended) return "recommended";
  if (c.qualifies) return "qualifies";
  if (c.meets_sla) return "short of the headroom";
  return "misses the SLA";
}
