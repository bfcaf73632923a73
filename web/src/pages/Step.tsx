import { useEffect, useState } from "preact/hooks";
import { useAuthRequired } from "../lib/auth";
import { catalog, type Catalog } from "../lib/catalog";
import { curl } from "../lib/cli";
import * as fmt from "../lib/format";
import { placeProblem } from "../lib/problems";
import { flag, str } from "../lib/query";
import { stepBody, stepCLI, stepFieldMap, stepFields, type StepReport } from "../lib/step";
import { shareURL, useQueryState } from "../lib/usestate";
import { useSimulation } from "../lib/usesimulation";
import { stepChart } from "../charts/step";
import { Chart } from "../components/Chart";
import { Alert, Check, Group, NumberField, Select } from "../components/Field";
import { ModelPicker } from "../components/ModelPicker";
import { ShareBar } from "../components/ShareBar";

// Step: why one engine step takes what it takes (POST /v1/steptime): its
// kernels stacked by op kind, each with the table or formula it came from.

export function StepPage() {
  const [s, set] = useQueryState(stepFields);
  const [cat, setCat] = useState<Catalog>({ models: [], gpus: [] });
  const auth = useAuthRequired();
  const loadCatalog = (fresh = false) => catalog(fresh).then(setCat, () => {});
  useEffect(() => void loadCatalog(), []);
  const body = stepBody(s);
  const st = useSimulation<StepReport>(body, 250, "steptime");
  const placed = st.problem ? placeProblem(st.problem, stepFieldMap) : { byControl: {}, general: [] };
  const err = placed.byControl;
  const r = st.report;
  const gpuOptions: [string, string][] = cat.gpus.map((g) => [g.id, `${g.id} · ${g.memory_gb ?? "?"} GB`]);
  if (!cat.gpus.some((g) => g.id === str(s, "gpu"))) gpuOptions.unshift([str(s, "gpu"), str(s, "gpu")]);
  return (
    <div class="page step">
      <h1>Step: what one engine step spends its time on</h1>
      <div class="columns">
        <form class="inputs" aria-label="step inputs" onSubmit={(e) => e.preventDefault()}>
          <ModelPicker id="model" value={str(s, "model")} onValue={(v) => set("model", v)} models={cat.models} error={err.model} onImported={() => void loadCatalog(true)} />
          <Select id="gpu" label="GPU" value={str(s, "gpu")} onValue={(v) => set("gpu", v)} options={gpuOptions} error={err.gpu} />
          <div class="pair">
            <NumberField id="tp" label="Tensor parallel" unit="GPUs" integer value={str(s, "tp")} onValue={(v) => set("tp", v)} error={err.tp} />
            <NumberField id="dp" label="Data parallel" unit="ranks" integer value={str(s, "dp")} onValue={(v) => set("dp", v)} error={err.dp} />
          </div>
          <Check id="expert_parallel" label="Expert parallel (MoE: whole experts over the tp × dp GPUs)" checked={flag(s, "expert_parallel")} onChecked={(v) => set("expert_parallel", v)} error={err.expert_parallel} />
          <Select
            id="backend"
            label="Kernel times from"
            value={str(s, "backend")}
            onValue={(v) => set("backend", v)}
            options={[
              ["table", "measured kernel tables where they cover the shape (table)"],
              ["formula", "the fitted formulas alone (formula)"],
            ]}
            error={err.backend}
          />
          <Group id="batch" legend="The batch of the step">
            <div class="pair">
              <NumberField id="decode_seqs" label="Decoding sequences" unit="sequences" integer value={str(s, "decode_seqs")} onValue={(v) => set("decode_seqs", v)} error={err.decode_seqs} />
              <NumberField id="kv_len" label="Their context" unit="tokens" integer value={str(s, "kv_len")} onValue={(v) => set("kv_len", v)} error={err.kv_len} />
            </div>
            <div class="pair">
              <NumberField id="prefill_tokens" label="Prefill chunk" unit="tokens" integer value={str(s, "prefill_tokens")} onValue={(v) => set("prefill_tokens", v)} error={err.prefill_tokens} />
              <NumberField id="prefill_context_tokens" label="Cached before it" unit="tokens" integer value={str(s, "prefill_context_tokens")} onValue={(v) => set("prefill_context_tokens", v)} error={err.prefill_context_tokens} />
            </div>
            <NumberField id="prefill_chunks" label="Prefill chunks (empty: 1)" unit="chunks" integer value={str(s, "prefill_chunks")} onValue={(v) => set("prefill_chunks", v)} error={err.prefill_chunks} />
          </Group>
          <NumberField id="max_num_seqs" label="engine.max_num_seqs (empty: vLLM's default)" unit="sequences" integer value={str(s, "max_num_seqs")} onValue={(v) => set("max_num_seqs", v)} error={err.max_num_seqs} hint="sets the CUDA-graph capture size" />
        </form>
        <section class="results" aria-label="the step explained" aria-busy={st.busy}>
          <ShareBar url={shareURL("/step", s, stepFields)} cli={stepCLI(s)} curl={[["explain the step", curl({ method: "POST", origin: location.origin, path: "/v1/steptime", body, auth })]]} />
          <p class="status-line" role="status" aria-live="polite" id="step-status">
            {st.busy ? "Explaining…" : ""}
          </p>
          <Alert messages={placed.general} />
          {r && (
            <>
              <div class="cards" aria-label="the step's figures">
                <div class="card" id="step-ms">
                  <div class="k">Step (wall)</div>
                  <div class="v">{fmt.ms(r.step_ms)}</div>
                  <div class="sub">GPU {fmt.ms(r.gpu_ms)} · CPU {fmt.ms(r.cpu_ms)} ({fmt.ms(r.cpu_hidden_ms)} hidden)</div>
                </div>
                <div class="card">
                  <div class="k">Tokens</div>
                  <div class="v">{fmt.tokps(r.tokens_per_s)}</div>
                  <div class="sub">{fmt.count(r.batch.tokens, "token")} per step on {fmt.count(r.gpus, "GPU")}</div>
                </div>
                {r.tpot_ms !== undefined && r.tpot_ms > 0 && (
                  <div class="card">
                    <div class="k">TPOT (pure decode)</div>
                    <div class="v">{fmt.ms(r.tpot_ms)}</div>
                    <div class="sub">API server {fmt.ms(r.frontend_ms)} per step</div>
                  </div>
                )}
                {r.bounds.map((b) => (
                  <div class="card" key={b.bound}>
                    <div class="k">{b.bound}-bound kernels</div>
                    <div class="v">{fmt.pct(b.share_ratio)}</div>
                    <div class="sub">{fmt.us(b.time_us)}</div>
                  </div>
                ))}
              </div>
              <Chart id="step-chart" caption="The step's GPU kernels stacked in op order, coloured by op kind; the CPU's time and the step's wall time below. Hover a segment for its kernel, shape and source." draw={(w) => stepChart(r, w)} deps={[r]} />
              <div class="table-wrap">
                <table id="kernels">
                  <caption>Kernels ({r.backend} backend{r.kernel_db ? `, ${r.kernel_db.system}` : ""})</caption>
                  <thead>
                    <tr>
                      <th scope="col">kernel</th>
                      <th scope="col">op</th>
                      <th scope="col">calls</th>
                      <th scope="col">shape</th>
                      <th scope="col">time (µs)</th>
                      <th scope="col">per call (µs)</th>
                      <th scope="col">share</th>
                      <th scope="col">bound</th>
                      <th scope="col">source</th>
                    </tr>
                  </thead>
                  <tbody>
                    {r.kernels.map((k) => (
                      <tr key={k.op + k.name}>
                        <th scope="row">{k.name}</th>
                        <td>{k.op}</td>
                        <td class="num">{fmt.count(k.calls, "call")}</td>
                        <td>{k.shape}</td>
                        <td class="num">{fmt.us(k.time_us)}</td>
                        <td class="num">{fmt.us(k.per_call_us)}</td>
                        <td class="num">{fmt.pct(k.share_ratio)}</td>
                        <td>{k.bound}</td>
                        <td>{k.source}</td>
                      </tr>
                    ))}
                  </tbody>
                </table>
              </div>
              {r.notes && r.notes.length > 0 && (
                <ul>
                  {r.notes.map((n) => (
                    <li key={n}>{n}</li>
                  ))}
                </ul>
              )}
            </>
          )}
        </section>
      </div>
    </div>
  );
}
