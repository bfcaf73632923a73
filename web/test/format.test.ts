import { describe, expect, test } from "vitest";
import * as fmt from "../src/lib/format";

describe("numbers with their units", () => {
  test.each([
    [fmt.ms, 0.456, "0.46 ms"],
    [fmt.ms, 7.6749, "7.67 ms"],
    [fmt.ms, 34.0033, "34.0 ms"],
    [fmt.ms, 193.5995, "194 ms"],
    [fmt.ms, 8777.9, "8,778 ms"],
    [fmt.ms, 65456.57, "65.5 s"],
    [fmt.seconds, 45, "45.0 s"],
    [fmt.seconds, 750, "12.5 min"],
    [fmt.seconds, 86400, "24.0 h"],
    [fmt.rps, 9.1, "9.10 req/s"],
    [fmt.rps, 39.82, "39.8 req/s"],
    [fmt.rps, 236, "236 req/s"],
    [fmt.tokps, 986.83, "987 tok/s"],
    [fmt.usdPerHour, 5.5, "$5.50/h"],
    [fmt.usd, 1.5481, "$1.55"],
    [fmt.times, 2.275, "2.28×"],
    [fmt.pct, 0.9731, "97.3 %"],
    [fmt.signedPct, 19.2, "+19.2 %"],
    [fmt.signedPct, -76.7, "−76.7 %"],
    [fmt.gib, 131.45 * 2 ** 30, "131.45 GiB"],
    [fmt.gib, 512 * 2 ** 20, "512.0 MiB"],
    [fmt.us, 12.29, "12.3 µs"],
    [fmt.us, 1592.8, "1.59 ms"],
  ] as const)("%o(%d) = %s", (f, v, want) => {
    expect(f(v)).toBe(want);
  });

  test("what is not a number shows as a dash, never NaN", () => {
    for (const f of [fmt.ms, fmt.seconds, fmt.rps, fmt.tokps, fmt.usdPerHour, fmt.usd, fmt.times, fmt.pct, fmt.gib, fmt.us]) {
      expect(f(NaN)).toBe("–");
      expect(f(undefined)).toBe("–");
      expect(f(null)).toBe("–");
      expect(f(Infinity)).toBe("–");
    }
  });

  test("counts say their noun, one or many", () => {
    expect(fmt.count(1, "replica")).toBe("1 replica");
    expect(fmt.count(3, "replica")).toBe("3 replicas");
    expect(fmt.count(1000, "request")).toBe("1,000 requests");
    expect(fmt.count(2.5, "replica")).toBe("2.5 replicas");
  });

  test("report figures take the unit their name says", () => {
    expect(fmt.metric("ttft_ms.p99", 193.6)).toBe("194 ms");
    expect(fmt.metric("throughput.requests_per_s", 39.82)).toBe("39.8 req/s");
    expect(fmt.metric("throughput.output_tokens_per_s", 2498.7)).toBe("2,499 tok/s");
    expect(fmt.metricUnit("goodput_rps")).toBe("req/s");
    expect(fmt.metricLabel("ttft_ms.p99")).toBe("TTFT p99");
    expect(fmt.metricLabel("e2e_ms.mean")).toBe("E2E mean");
  });

  test("clock reads seconds from the start as hours and minutes", () => {
    expect(fmt.clock(0)).toBe("00:00");
    expect(fmt.clock(28800)).toBe("08:00");
    expect(fmt.clock(86399)).toBe("23:59");
  });
});
