// The Step view's chart: one engine step's GPU time as a bar stacked by
// kernel, coloured by op kind, with the CPU time and the step beside it.

import * as Plot from "@observablehq/plot";
import { kernelRows, type StepReport } from "../lib/step";

export function stepChart(r: StepReport, width: number): Element {
  const rows = kernelRows(r).map((k) => ({ ...k, lane: "GPU kernels", start_ms: k.start_us / 1000, end_ms: k.end_us / 1000 }));
  const cpu = [
    { lane: "CPU (scheduling, launch)", start_ms: 0, end_ms: r.cpu_ms, op: "cpu", hidden: r.cpu_hidden_ms },
    { lane: "step (wall)", start_ms: 0, end_ms: r.step_ms, op: "step", hidden: 0 },
  ];
  return Plot.plot({
    width,
    height: 210,
    marginLeft: 170,
    x: { label: "time in the step (ms) →", grid: true },
    y: { label: null, domain: ["GPU kernels", "CPU (scheduling, launch)", "step (wall)"] },
    color: { legend: true, domain: [...r.ops.map((o) => o.op), "cpu", "step"], scheme: "tableau10" },
    marks: [
      Plot.barX(rows, {
        x1: "start_ms",
        x2: "end_ms",
        y: "lane",
        fill: "op",
        stroke: "white",
        title: (k: (typeof rows)[number]) => `${k.name} (${k.op}): ${k.time_us.toFixed(1)} µs, ${k.calls} calls × ${k.per_call_us.toFixed(2)} µs; ${k.shape}; ${k.source}`,
      }),
      Plot.barX(cpu, { x1: "start_ms", x2: "end_ms", y: "lane", fill: "op", title: (d: (typeof cpu)[number]) => `${d.lane}: ${d.end_ms.toFixed(3)} ms` }),
    ],
  });
}
