import { describe, expect, test } from "vitest";
import { planCLI, planFields, planParams } from "../src/lib/plan";
import { decode, defaults } from "../src/lib/query";
import { label, status, type Candidate } from "../src/lib/planresult";

describe("the Plan view's question", () => {
  test("the defaults are docs/planning.md's example, as params and as the CLI", () => {
    const s = defaults(planFields);
    expect(planParams(s)).toEqual({
      scenario: {
        model: "llama-3.1-70b",
        gpu: "h100-sxm",
        workload: { input_tokens: { type: "fixed", value: 512 }, output_tokens: { type: "fixed", value: 256 }, requests: 1000, arrival: { type: "poisson", rate_rps: 4 } },
        sla: { ttft_ms: { p99: 2000 }, tpot_ms: { p99: 60 } },
      },
      gpus: ["h100-sxm", "h200", "a100-80gb", "l40s", "b200"],
      headroom: 1.3,
      max_replicas: 16,
    });
    expect(planCLI(s)).toBe("headroom plan --model llama-3.1-70b --rate-rps 4 --set sla.ttft_ms.p99=2000 --set sla.tpot_ms.p99=60 --gpus h100-sxm,h200,a100-80gb,l40s,b200");
  });

  test("a closed loop, other TPs and engine settings", () => {
    const s = decode("?load=concurrency&concurrency=32&tps=2,4&max_num_seqs=128&headroom=1.5&requests=500&input_tokens=2048", planFields);
    const p = planParams(s) as { scenario: { workload: unknown; engine: unknown }; tps: unknown; headroom: unknown };
    expect(p.scenario.workload).toEqual({ input_tokens: { type: "fixed", value: 2048 }, output_tokens: { type: "fixed", value: 256 }, requests: 500, arrival: { type: "closed_loop", concurrency: 32 } });
    expect(p.scenario.engine).toEqual({ max_num_seqs: 128 });
    expect(p.tps).toEqual([2, 4]);
    expect(p.headroom).toBe(1.5);
    expect(planCLI(s)).toBe(
      "headroom plan --model llama-3.1-70b --concurrency 32 --requests 500 --input-tokens 2048 --set sla.ttft_ms.p99=2000 --set sla.tpot_ms.p99=60 --set engine.max_num_seqs=128 --gpus h100-sxm,h200,a100-80gb,l40s,b200 --tps 2,4 --headroom 1.5",
    );
  });

  test("a rate profile goes inline, in params and in the CLI's --set", () => {
    const s = decode("?load=profile&profile=0:2;28800:9;64800:4&profile_end_s=86400&target_utilization=0.6", planFields);
    const p = planParams(s) as { scenario: { workload: Record<string, unknown> }; target_utilization: unknown };
    expect(p.scenario.workload.rate_profile).toEqual([
      { at_s: 0, rate_rps: 2 },
      { at_s: 28800, rate_rps: 9 },
      { at_s: 64800, rate_rps: 4 },
    ]);
    expect(p.scenario.workload.rate_profile_end_s).toBe(86400);
    expect(p.scenario.workload.arrival).toBeUndefined();
    expect(p.target_utilization).toBe(0.6);
    expect(planCLI(s)).toContain("--set 'workload.rate_profile=[{at_s: 0, rate_rps: 2}, {at_s: 28800, rate_rps: 9}, {at_s: 64800, rate_rps: 4}]' --set workload.rate_profile_end_s=86400 --target-utilization 0.6");
  });

  test("no GPU checked asks the whole catalog; no TP checked the default degrees", () => {
    const p = planParams(decode("?gpus=&tps=", planFields)) as Record<string, unknown>;
    expect(p.gpus).toBeUndefined();
    expect(p.tps).toBeUndefined();
  });

  test("text that is not a number is sent as typed, for the server to name", () => {
    const p = planParams(decode("?rate_rps=fast", planFields)) as { scenario: { workload: { arrival: unknown } } };
    expect(p.scenario.workload.arrival).toEqual({ type: "poisson", rate_rps: "fast" });
  });
});

describe("plan results", () => {
  const c = (over: Partial<Candidate>): Candidate => ({
    gpu: "h100-sxm", tp: 2, replicas: 3, gpus: 6, cost_per_hour_usd: 15, cost_per_million_output_tokens_usd: 4, meets_sla: true, ttft_p99_ms: 1,
    tpot_p99_ms: 1, e2e_p99_ms: 1, pareto_latency_ms: 1, throughput_rps: 1, output_tokens_per_s: 1, headroom: 1.5, qualifies: true, recommended: false, pareto: false, ...over,
  });
  test("labels read as the CLI's", () => {
    expect(label(c({}))).toBe("h100-sxm TP2×3");
    expect(label({ gpu: "h100-sxm", tp: 1 })).toBe("h100-sxm TP1");
    expect(label(c({ disaggregation: { prefill: { gpu: "h100-sxm", tp: 1, replicas: 2 }, decode: { gpu: "h200", tp: 1, replicas: 3 } } }))).toBe(
      "prefill h100-sxm TP1×2 + decode h200 TP1×3",
    );
  });
  test("status orders recommended, qualifies, short of the headroom, misses", () => {
    expect(status(c({ recommended: true }))).toBe("recommended");
    expect(status(c({}))).toBe("qualifies");
    expect(status(c({ qualifies: false }))).toBe("short of the headroom");
    expect(status(c({ qualifies: false, meets_sla: false }))).toBe("misses the SLA");
  });
});
