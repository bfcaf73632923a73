import { describe, expect, test } from "vitest";
import { decode, defaults } from "../src/lib/query";
import { deltas, differences, pin, pinned, scenario, whatifCLI, whatifFields } from "../src/lib/whatif";
import { nearest } from "../src/components/Slider";

describe("the What-if scenario", () => {
  test("the defaults are the built-in default scenario, with its time series", () => {
    expect(scenario(defaults(whatifFields))).toEqual({
      model: "llama-3.1-8b",
      gpu: "h100-sxm",
      tp: 1,
      replicas: 1,
      engine: { gpu_memory_utilization: 0.9 },
      workload: { requests: 1000, arrival: { type: "poisson", rate_rps: 10 }, input_tokens: { type: "fixed", value: 512 }, output_tokens: { type: "fixed", value: 256 } },
      report: { timeseries: true },
    });
    expect(whatifCLI(defaults(whatifFields))).toBe("headroom simulate --model llama-3.1-8b --gpu h100-sxm --rate-rps 10 --set report.timeseries=true");
  });

  test("engine switches turned off, a closed loop", () => {
    const s = decode("?max_num_seqs=64&max_num_batched_tokens=2048&chunked_prefill=0&prefix_caching=0&load=concurrency&concurrency=16&tp=2", whatifFields);
    expect(scenario(s).engine).toEqual({ gpu_memory_utilization: 0.9, max_num_seqs: 64, max_num_batched_tokens: 2048, enable_chunked_prefill: false, enable_prefix_caching: false });
    expect((scenario(s).workload as Record<string, unknown>).arrival).toEqual({ type: "closed_loop", concurrency: 16 });
    expect(whatifCLI(s)).toBe(
      "headroom simulate --model llama-3.1-8b --gpu h100-sxm --tp 2 --concurrency 16 --set engine.max_num_seqs=64 --set engine.max_num_batched_tokens=2048 --set engine.enable_chunked_prefill=false --set engine.enable_prefix_caching=false --set report.timeseries=true",
    );
  });
});

describe("A against B", () => {
  const a = decode("?max_num_seqs=8", whatifFields);
  test("pin keeps A in the URL and reads it back", () => {
    const s = { ...defaults(whatifFields), a: pin(a) };
    expect(pinned(s)).toEqual(decode("?max_num_seqs=8", whatifFields.filter((f) => f.key !== "a")));
    expect(pinned(defaults(whatifFields))).toBeNull();
  });

  test("differences list the changed fields by scenario path; the load is one setting", () => {
    const b = decode("?gpu=h200&load=concurrency&concurrency=32", whatifFields);
    expect(differences(a, b)).toEqual([
      { key: "gpu", path: "gpu", a: "h100-sxm", b: "h200" },
      { key: "max_num_seqs", path: "engine.max_num_seqs", a: "8", b: "" },
      { key: "load", path: "workload.arrival", a: "{type: poisson, rate_rps: 10}", b: "{type: closed_loop, concurrency: 32}" },
    ]);
    expect(differences(a, a)).toEqual([]);
    // The closed loop's users do not count while both are open loops.
    expect(differences(decode("?concurrency=9", whatifFields), defaults(whatifFields))).toEqual([]);
  });

  test("with A pinned the command is a compare, B as A's changes (its own workload when the load differs)", () => {
    const b = { ...decode("?rate_rps=20", whatifFields), a: pin(a) };
    expect(whatifCLI(b)).toBe(
      "headroom compare --model llama-3.1-8b --gpu h100-sxm --rate-rps 10 --set engine.max_num_seqs=8 --b-set engine.max_num_seqs=0 --b-set 'workload.arrival={type: poisson, rate_rps: 20}' --keep-workloads",
    );
  });

  test("deltas say which way is better for each figure", () => {
    const ra = { ttft_ms: { p99: 100, p50: 10 }, throughput: { requests_per_s: 10 }, preemptions: 0 };
    const rb = { ttft_ms: { p99: 50, p50: 10.1 }, throughput: { requests_per_s: 12 }, preemptions: 3 };
    const d = Object.fromEntries(deltas(ra, rb).map((x) => [x.name, x]));
    expect(d["ttft_ms.p99"]).toMatchObject({ a: 100, b: 50, deltaPct: -50, verdict: "better" });
    expect(d["ttft_ms.p50"].verdict).toBe("same");
    expect(d["throughput.requests_per_s"]).toMatchObject({ deltaPct: 20, verdict: "better" });
    expect(d["preemptions"]).toMatchObject({ a: 0, b: 3, verdict: "worse" });
    expect(d["preemptions"].deltaPct).toBeUndefined();
    expect(d["tpot_ms.p99"].verdict).toBe("same");
    expect(d["tpot_ms.p99"].a).toBeUndefined();
  });
});

describe("the slider's position", () => {
  const presets = ["", "8", "16", "32", "64"];
  test.each([
    ["", 0],
    ["16", 2],
    ["20", 2],
    ["50", 4],
    ["1000", 4],
    ["abc", 0],
  ])("%j sits at preset %d", (v, i) => {
    expect(nearest(presets, v)).toBe(i);
  });
});
