// The Plan view's charts (Observable Plot, SVG): the Pareto front of cost
// against the binding metric with the recommendation ringed, and a rate
// profile's day (load, replicas, SLA attainment).

import * as Plot from "@observablehq/plot";
import { metricLabel } from "../lib/format";
import { label, status, type Candidate, type DayPlan, type PlanResult } from "../lib/planresult";

const statusColors = {
  domain: ["recommended", "qualifies", "short of the headroom", "misses the SLA"],
  range: ["#0b6e4f", "#2f6fb2", "#d08a00", "#b3261e"],
};

/** paretoPoints are the candidates the chart can place (simulated, with a latency). */
export function paretoPoints(r: PlanResult): Candidate[] {
  return (r.candidates ?? []).filter((c) => c.pareto_latency_ms > 0 && c.cost_per_hour_usd > 0);
}

export function paretoChart(r: PlanResult, width: number): Element {
  const pts = paretoPoints(r);
  const front = pts.filter((c) => c.pareto).sort((a, b) => a.pareto_latency_ms - b.pareto_latency_ms);
  const rec = pts.filter((c) => c.recommended);
  const metric = metricLabel(r.pareto_metric);
  const marks: Plot.Markish[] = [
    Plot.gridX({ strokeOpacity: 0.08 }),
    Plot.gridY({ strokeOpacity: 0.08 }),
    Plot.line(front, { x: "pareto_latency_ms", y: "cost_per_hour_usd", curve: "step-after", stroke: "#555", strokeDasharray: "3 3" }),
    Plot.dot(pts, {
      x: "pareto_latency_ms",
      y: "cost_per_hour_usd",
      fill: (c: Candidate) => status(c),
      r: 5,
      title: (c: Candidate) => `${label(c)}: $${c.cost_per_hour_usd.toFixed(2)}/h, ${metric} ${c.pareto_latency_ms.toFixed(1)} ms (${status(c)})`,
    }),
    Plot.dot(rec, { x: "pareto_latency_ms", y: "cost_per_hour_usd", r: 11, stroke: "#0b6e4f", strokeWidth: 2.5, fill: "none" }),
    Plot.text(rec, { x: "pareto_latency_ms", y: "cost_per_hour_usd", text: (c: Candidate) => label(c), dy: -18, fontWeight: "bold" }),
  ];
  if (r.pareto_limit_ms) {
    marks.unshift(
      Plot.ruleX([r.pareto_limit_ms], { stroke: "#b3261e", strokeDasharray: "5 4" }),
      Plot.text([r.pareto_limit_ms], { x: (d: number) => d, frameAnchor: "top", text: () => `SLA ${r.pareto_limit_ms} ms`, dx: -4, textAnchor: "end", fill: "#b3261e" }),
    );
  }
  // The x domain spans the candidates and the SLA bound, with a margin.
  const xs = pts.map((c) => c.pareto_latency_ms).concat(r.pareto_limit_ms ? [r.pareto_limit_ms] : []);
  return Plot.plot({
    width,
    height: Math.min(380, Math.max(260, width * 0.45)),
    marginLeft: 60,
    marginTop: 28,
    x: { label: `${metric} (ms) →`, type: "log", domain: [Math.min(...xs) / 1.3, Math.max(...xs) * 1.3] },
    y: { label: "↑ cost ($/h)", type: "log", nice: true, grid: false },
    color: { ...statusColors, legend: true },
    marks,
  });
}

/** dayCharts are the day's three panels over the profile's hours. */
export function dayChart(d: DayPlan, width: number): Element {
  const rows = d.windows.map((w) => ({
    h: w.start_s / 3600,
    end: (w.start_s + w.duration_s) / 3600,
    rate: w.rate_rps,
    replicas: w.autoscaled.replicas,
    needed: w.replicas_with_headroom,
    attainment: w.autoscaled.sla_attainment * 100,
  }));
  const panel = (y: string, label: string, extra: Plot.Markish[] = [], domain?: [number, number]) =>
    Plot.plot({
      width,
      height: 150,
      marginLeft: 60,
      x: { label: "hours from the start of the profile (h) →" },
      y: { label, grid: true, domain },
      marks: [...extra, Plot.rectY(rows, { x1: "h", x2: "end", y, fill: "#2f6fb2", fillOpacity: 0.25 }), Plot.lineY(rows, { x: "h", y, curve: "step-after", stroke: "#2f6fb2" })],
    });
  const box = document.createElement("div");
  box.className = "day-panels";
  box.append(
    panel("rate", "↑ load (req/s)"),
    panel("replicas", "↑ replicas (autoscaled)", [Plot.lineY(rows, { x: "h", y: "needed", curve: "step-after", stroke: "#888", strokeDasharray: "3 3" })]),
    panel("attainment", "↑ SLA attainment (%)", [Plot.ruleY([100], { stroke: "#0b6e4f" })], [0, 100]),
  );
  return box;
}
