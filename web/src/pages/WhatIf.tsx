import { useEffect, useState } from "preact/hooks";
import { useAuthRequired } from "../lib/auth";
import { catalog, type Catalog } from "../lib/catalog";
import { curl } from "../lib/cli";
import * as fmt from "../lib/format";
import { placeProblem } from "../lib/problems";
import { flag, str, type State } from "../lib/query";
import { shareURL, useQueryState } from "../lib/usestate";
import { useSimulation } from "../lib/usesimulation";
import { deltas, differences, pin, pinned, scenario, whatifCLI, whatifFieldMap, whatifFields } from "../lib/whatif";
import { distributionCharts, timeCharts, type SimReport, type Side } from "../charts/whatif";
import { Chart } from "../components/Chart";
import { Alert, Check, Group, NumberField, Select } from "../components/Field";
import { ModelPicker } from "../components/ModelPicker";
import { ShareBar } from "../components/ShareBar";
import { Slider } from "../components/Slider";

// What-if: one scenario whose engine settings and load move under the
// user's hand; each change re-simulates (POST /v1/simulate, debounced, the
// run before it cancelled). "Pin as A" keeps a setting to compare with.

interface Report extends SimReport {
  requests: { total: number; completed: number; rejected: number };
  throughput: { requests_per_s: number; output_tokens_per_s: number };
  kv_cache: { num_gpu_blocks: number; peak_usage_ratio: number; mean_usage_ratio: number };
  queue_ms: { p99: number };
  preemptions: number;
  max_running: number;
  duration_s: number;
}

const seqPresets = ["", "1", "2", "4", "8", "16", "32", "64", "128", "256", "512", "1024", "2048"];
const batchPresets = ["", "512", "1024", "2048", "4096", "8192", "16384", "32768", "65536"];
const memPresets = ["0.5", "0.6", "0.7", "0.75", "0.8", "0.85", "0.9", "0.92", "0.95", "0.98"];

export function WhatIfPage() {
  const [s, set] = useQueryState(whatifFields);
  const [cat, setCat] = useState<Catalog>({ models: [], gpus: [] });
  const auth = useAuthRequired();
  const loadCatalog = (fresh = false) => catalog(fresh).then(setCat, () => {});
  useEffect(() => void loadCatalog(), []);

  const body = scenario(s);
  const b = useSimulation<Report>(body);
  const a = pinned(s);
  const aSim = useSimulation<Report>(a ? scenario(a) : null, 0);
  const placed = b.problem ? placeProblem(b.problem, whatifFieldMap) : { byControl: {}, general: [] };
  const err = placed.byControl;
  const sides: Side[] = [];
  if (a && aSim.report) sides.push({ name: "A", report: aSim.report });
  if (b.report) sides.push({ name: "B", report: b.report });

  const gpuOptions: [string, string][] = cat.gpus.map((g) => [g.id, `${g.id} · ${g.memory_gb ?? "?"} GB · ${fmt.usdPerHour(g.price_per_gpu_hour_usd)} per GPU`]);
  if (!cat.gpus.some((g) => g.id === str(s, "gpu"))) gpuOptions.unshift([str(s, "gpu"), str(s, "gpu")]);
  const closed = str(s, "load") === "concurrency";
  const stale = b.report !== null && b.of !== JSON.stringify(body);
  const curlCalls: [string, string][] = a
    ? [
        ["A and B side by side, as a compare job (B on its own workload when the load differs)", curl({ method: "POST", origin: location.origin, path: "/v1/jobs", body: { kind: "compare", params: { a: scenario(a), b: body, keep_workloads: differences(a, s).some((d) => d.path.startsWith("workload")) || undefined } }, auth })],
        ["B alone", curl({ method: "POST", origin: location.origin, path: "/v1/simulate", body, auth })],
      ]
    : [["simulate the setting", curl({ method: "POST", origin: location.origin, path: "/v1/simulate", body, auth })]];

  return (
    <div class="page whatif">
      <h1>What-if: move a setting, see the latencies</h1>
      <div class="columns">
        <form class="inputs" aria-label="what-if settings" onSubmit={(e) => e.preventDefault()}>
          <ModelPicker id="model" value={str(s, "model")} onValue={(v) => set("model", v)} models={cat.models} error={err.model} onImported={() => void loadCatalog(true)} />
          <Select id="gpu" label="GPU" value={str(s, "gpu")} onValue={(v) => set("gpu", v)} options={gpuOptions} error={err.gpu} />
          <div class="pair">
            <Select id="tp" label="Tensor parallel (GPUs per replica)" value={str(s, "tp")} onValue={(v) => set("tp", v)} options={["1", "2", "4", "8"].map((t) => [t, `TP ${t}`] as const)} error={err.tp} />
            <NumberField id="replicas" label="Replicas" unit="engine copies" integer value={str(s, "replicas")} onValue={(v) => set("replicas", v)} error={err.replicas} />
          </div>
          <Group id="engine" legend="Engine (vLLM)">
            <Slider id="gpu_memory_utilization" label="gpu_memory_utilization" unit="of GPU memory" presets={memPresets} value={str(s, "gpu_memory_utilization")} onValue={(v) => set("gpu_memory_utilization", v)} error={err.gpu_memory_utilization} />
            <Slider id="max_num_seqs" label="max_num_seqs" unit="sequences" presets={seqPresets} value={str(s, "max_num_seqs")} onValue={(v) => set("max_num_seqs", v)} error={err.max_num_seqs} emptyText="vLLM's default" />
            <Slider id="max_num_batched_tokens" label="max_num_batched_tokens" unit="tokens" presets={batchPresets} value={str(s, "max_num_batched_tokens")} onValue={(v) => set("max_num_batched_tokens", v)} error={err.max_num_batched_tokens} emptyText="vLLM's default" />
            <Check id="chunked_prefill" label="Chunked prefill" checked={flag(s, "chunked_prefill")} onChecked={(v) => set("chunked_prefill", v)} error={err.chunked_prefill} />
            <Check id="prefix_caching" label="Prefix caching" checked={flag(s, "prefix_caching")} onChecked={(v) => set("prefix_caching", v)} error={err.prefix_caching} />
          </Group>
          <Group id="load" legend="Load" error={err.load}>
            <div class="radios" role="radiogroup" aria-label="kind of load">
              <label>
                <input type="radio" name="wload" checked={!closed} onChange={() => set("load", "rate")} /> Open loop (req/s)
              </label>
              <label>
                <input type="radio" name="wload" checked={closed} onChange={() => set("load", "concurrency")} /> Closed loop (users)
              </label>
            </div>
            {closed ? (
              <NumberField id="concurrency" label="Concurrent users" unit="users" integer value={str(s, "concurrency")} onValue={(v) => set("concurrency", v)} error={err.concurrency} />
            ) : (
              <NumberField id="rate_rps" label="Arrival rate" unit="req/s" value={str(s, "rate_rps")} onValue={(v) => set("rate_rps", v)} error={err.rate_rps} hint="Poisson arrivals" />
            )}
            <NumberField id="requests" label="Run length" unit="requests" integer value={str(s, "requests")} onValue={(v) => set("requests", v)} error={err.requests} />
            <div class="pair">
              <NumberField id="input_tokens" label="Prompt" unit="tokens" integer value={str(s, "input_tokens")} onValue={(v) => set("input_tokens", v)} error={err.input_tokens} />
              <NumberField id="output_tokens" label="Output" unit="tokens" integer value={str(s, "output_tokens")} onValue={(v) => set("output_tokens", v)} error={err.output_tokens} />
            </div>
          </Group>
          <div class="actions">
            <button type="button" onClick={() => set("a", pin(withoutPin(s)))}>
              {a ? "Pin these settings as A instead" : "Pin these settings as A"}
            </button>
            {a && (
              <button type="button" onClick={() => set("a", "")}>
                Clear A
              </button>
            )}
          </div>
        </form>
        <section class="results" aria-label="simulation" aria-busy={b.busy}>
          <ShareBar url={shareURL("/whatif", s, whatifFields)} cli={whatifCLI(s)} curl={curlCalls} />
          <p class="status-line" role="status" aria-live="polite" id="sim-status">
            {b.busy ? "Simulating…" : b.report && b.elapsedMs !== null ? `${fmt.count(b.report.requests.total, "request")} simulated in ${fmt.seconds(b.elapsedMs / 1000)} (${fmt.seconds(b.report.duration_s)} of serving)` : ""}
          </p>
          <Alert messages={placed.general} />
          {aSim.problem && <Alert messages={[`A could not be simulated: ${aSim.problem.detail}`]} />}
          {b.report && (
            <div class={stale ? "stale" : ""}>
              <Cards r={b.report} a={a ? aSim.report : null} />
              {a && aSim.report && <SideBySide a={a} b={s} ra={aSim.report} rb={b.report} />}
              <Chart id="distributions" caption={`Latency percentiles (p50 to max) of ${a ? "A and B" : "this setting"}.`} draw={(w) => distributionCharts(sides, w)} deps={[sides.map((x) => x.report)]} />
              <Chart id="over-time" caption="KV cache use, the queue and the running requests per simulated second." draw={(w) => timeCharts(sides, w)} deps={[sides.map((x) => x.report)]} />
            </div>
          )}
        </section>
      </div>
    </div>
  );
}

function withoutPin(s: State): State {
  const out = { ...s };
  delete out.a;
  return out;
}

function Cards(p: { r: Report; a: Report | null }) {
  const r = p.r;
  const card = (id: string, k: string, v: string, sub: string, av?: string) => (
    <div class="card" id={id}>
      <div class="k">{k}</div>
      <div class="v">{v}</div>
      <div class="sub">{sub}</div>
      {av !== undefined && <div class="sub">A: {av}</div>}
    </div>
  );
  const a = p.a;
  return (
    <div class="cards" aria-label="the setting's figures">
      {card("ttft", "TTFT p99", fmt.ms(r.ttft_ms.p99), `p50 ${fmt.ms(r.ttft_ms.p50)}`, a ? fmt.ms(a.ttft_ms.p99) : undefined)}
      {card("tpot", "TPOT p99", fmt.ms(r.tpot_ms.p99), `p50 ${fmt.ms(r.tpot_ms.p50)}`, a ? fmt.ms(a.tpot_ms.p99) : undefined)}
      {card("itl", "ITL p99", fmt.ms(r.itl_ms.p99), `p50 ${fmt.ms(r.itl_ms.p50)}`, a ? fmt.ms(a.itl_ms.p99) : undefined)}
      {card("e2e", "E2E p99", fmt.ms(r.e2e_ms.p99), `p50 ${fmt.ms(r.e2e_ms.p50)}`, a ? fmt.ms(a.e2e_ms.p99) : undefined)}
      {card("throughput", "Throughput", fmt.rps(r.throughput.requests_per_s), fmt.tokps(r.throughput.output_tokens_per_s) + " output", a ? fmt.rps(a.throughput.requests_per_s) : undefined)}
      {card("kv", "KV cache peak use", fmt.pct(r.kv_cache.peak_usage_ratio), `${fmt.count(r.kv_cache.num_gpu_blocks, "block")} · ${fmt.count(r.preemptions, "preemption")}`, a ? fmt.pct(a.kv_cache.peak_usage_ratio) : undefined)}
    </div>
  );
}

function SideBySide(p: { a: State; b: State; ra: Report; rb: Report }) {
  const diffs = differences(p.a, p.b);
  const rows = deltas(p.ra, p.rb);
  return (
    <section aria-labelledby="sbs-h" id="side-by-side">
      <h3 id="sbs-h">A against B (the current settings)</h3>
      {diffs.length === 0 ? (
        <p>A and B have the same settings.</p>
      ) : (
        <div class="table-wrap">
          <table id="setting-diffs">
            <caption>Settings that differ</caption>
            <thead>
              <tr>
                <th scope="col">setting</th>
                <th scope="col">A</th>
                <th scope="col">B</th>
              </tr>
            </thead>
            <tbody>
              {diffs.map((d) => (
                <tr key={d.path}>
                  <th scope="row">{d.path}</th>
                  <td class="differs">{d.a === "" ? "default" : d.a}</td>
                  <td class="differs">{d.b === "" ? "default" : d.b}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      <div class="table-wrap">
        <table id="metric-diffs">
          <caption>Figures (highlighted: B differs from A by 2 % or more)</caption>
          <thead>
            <tr>
              <th scope="col">figure</th>
              <th scope="col">A</th>
              <th scope="col">B</th>
              <th scope="col">B against A</th>
            </tr>
          </thead>
          <tbody>
            {rows.map((d) => {
              const show = (v?: number) =>
                d.name === "kv_cache.peak_usage_ratio" ? fmt.pct(v) : d.name === "preemptions" ? fmt.count(v, "preemption") : fmt.metric(d.name, v);
              const cls = d.verdict === "same" ? "" : "differs";
              return (
                <tr key={d.name}>
                  <th scope="row">{d.label}</th>
                  <td class={"num " + cls}>{show(d.a)}</td>
                  <td class={"num " + cls}>{show(d.b)}</td>
                  <td class={"num " + (d.verdict === "same" ? "" : d.verdict)}>
                    {d.deltaPct === undefined ? (d.verdict === "same" ? "same" : d.verdict) : `${fmt.signedPct(d.deltaPct)} (${d.verdict === "same" ? "about the same" : d.verdict})`}
                  </td>
                </tr>
              );
            })}
          </tbody>
        </table>
      </div>
    </section>
  );
}

