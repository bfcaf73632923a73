// The Validate view's chart: every latency figure of every part as a
// point, measured across and predicted up, on log scales, with the line
// where they agree and the ±25 % band around it.

import * as Plot from "@observablehq/plot";
import { latencyRows, type PointRow, type ValidationReport } from "../lib/validate";

export function predictedVsMeasured(r: ValidationReport, width: number): Element {
  const rows = latencyRows(r);
  const lo = Math.min(...rows.map((d) => Math.min(d.measured, d.predicted))) / 1.3;
  const hi = Math.max(...rows.map((d) => Math.max(d.measured, d.predicted))) * 1.3;
  const diag = [lo, hi];
  return Plot.plot({
    width,
    height: Math.min(460, Math.max(300, width * 0.55)),
    marginLeft: 64,
    x: { type: "log", label: "measured (ms) →", domain: [lo, hi], grid: true },
    y: { type: "log", label: "↑ predicted (ms)", domain: [lo, hi], grid: true },
    color: { legend: true, domain: ["TTFT", "TPOT", "ITL", "E2E"], range: ["#0b5cad", "#0b6e4f", "#8a5a00", "#7b3fa0"] },
    symbol: { legend: true },
    marks: [
      Plot.line(diag.map((v) => ({ x: v, y: v })), { x: "x", y: "y", stroke: "#444" }),
      Plot.line(diag.map((v) => ({ x: v, y: v * 1.25 })), { x: "x", y: "y", stroke: "#999", strokeDasharray: "4 3" }),
      Plot.line(diag.map((v) => ({ x: v, y: v / 1.25 })), { x: "x", y: "y", stroke: "#999", strokeDasharray: "4 3" }),
      Plot.dot(rows, {
        x: "measured",
        y: "predicted",
        stroke: "kind",
        symbol: (d: PointRow) => d.metric.split(".")[1],
        r: 4,
        strokeWidth: 1.8,
        title: (d: PointRow) => `${d.part}: ${d.metric} measured ${d.measured.toFixed(2)} ms, predicted ${d.predicted.toFixed(2)} ms (${d.error_pct >= 0 ? "+" : ""}${d.error_pct.toFixed(1)} %)`,
      }),
    ],
  });
}
