// The What-if view's charts: the latency distributions as their
// percentiles (the report's p50 … max), and the KV cache and the queue
// over simulated time, each with the pinned setting A beside it.

import * as Plot from "@observablehq/plot";

export interface Summary {
  mean: number;
  p50: number;
  p90: number;
  p95: number;
  p99: number;
  p999: number;
  max: number;
  count: number;
}

export interface TimePoint {
  t_s: number;
  running: number;
  waiting: number;
  kv_usage_ratio: number;
}

export interface SimReport {
  ttft_ms: Summary;
  tpot_ms: Summary;
  itl_ms: Summary;
  e2e_ms: Summary;
  timeseries?: TimePoint[];
}

export interface Side {
  name: string;
  report: SimReport;
}

const quantiles: ReadonlyArray<readonly [keyof Summary, number]> = [
  ["p50", 50],
  ["p90", 90],
  ["p95", 95],
  ["p99", 99],
  ["p999", 99.9],
  ["max", 100],
];

const colors = { domain: ["A", "B"], range: ["#8a5a00", "#0b5cad"] };

/** percentileRows are a report metric's percentiles as chart rows. */
export function percentileRows(sides: readonly Side[], metric: "ttft_ms" | "tpot_ms" | "itl_ms" | "e2e_ms") {
  return sides.flatMap((s) =>
    quantiles
      .filter(([q]) => Number.isFinite(s.report[metric]?.[q]))
      .map(([q, p]) => ({ side: s.name, q, p, label: q === "p999" ? "p99.9" : q, ms: s.report[metric][q] })),
  );
}

const titles = { ttft_ms: "TTFT", tpot_ms: "TPOT", itl_ms: "ITL", e2e_ms: "E2E" } as const;

export function distributionCharts(sides: readonly Side[], width: number): Element {
  const box = document.createElement("div");
  box.className = "small-multiples";
  const each = width >= 700 ? Math.floor((width - 16) / 2) : width;
  for (const metric of ["ttft_ms", "tpot_ms", "itl_ms", "e2e_ms"] as const) {
    const rows = percentileRows(sides, metric);
    box.append(
      Plot.plot({
        width: each,
        height: 190,
        marginLeft: 56,
        title: `${titles[metric]} (ms) by percentile`,
        x: { type: "point", domain: quantiles.map(([q]) => (q === "p999" ? "p99.9" : q)), label: "percentile" },
        y: { label: `↑ ${titles[metric]} (ms)`, grid: true, zero: true },
        color: { ...colors, legend: sides.length > 1 },
        marks: [
          Plot.line(rows, { x: "label", y: "ms", stroke: "side" }),
          Plot.dot(rows, { x: "label", y: "ms", fill: "side", r: 3, title: (d: { side: string; label: string; ms: number }) => `${d.side} ${titles[metric]} ${d.label}: ${d.ms.toFixed(2)} ms` }),
        ],
      }),
    );
  }
  return box;
}

export function timeCharts(sides: readonly Side[], width: number): Element {
  const rows = sides.flatMap((s) => (s.report.timeseries ?? []).map((p) => ({ side: s.name, t: p.t_s, kv: p.kv_usage_ratio * 100, waiting: p.waiting, running: p.running })));
  const box = document.createElement("div");
  box.className = "day-panels";
  const panel = (y: string, label: string, domain?: [number, number]) =>
    Plot.plot({
      width,
      height: 160,
      marginLeft: 56,
      x: { label: "simulated time (s) →" },
      y: { label, grid: true, domain },
      color: { ...colors, legend: sides.length > 1 },
      marks: [Plot.lineY(rows, { x: "t", y, stroke: "side", curve: "step-after" })],
    });
  box.append(panel("kv", "↑ KV cache in use (%)", [0, 100]), panel("waiting", "↑ requests waiting (queue)"), panel("running", "↑ requests running"));
  return box;
}
