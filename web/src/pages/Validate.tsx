import { useEffect, useRef, useState } from "preact/hooks";
import { ApiProblem, get, isAbort, post } from "../lib/api";
import { useAuthRequired } from "../lib/auth";
import { curl } from "../lib/cli";
import * as fmt from "../lib/format";
import { follow, type Follow } from "../lib/jobs";
import { placeProblem, type PlacedProblem } from "../lib/problems";
import { str } from "../lib/query";
import { shareURL, useQueryState } from "../lib/usestate";
import {
  calibrateCLI,
  calibrationForm,
  calibrationKeys,
  curlForm,
  form,
  latencyRows,
  validateCLI,
  validateFieldMap,
  validateFields,
  worst,
  type Upload,
  type ValidationReport,
} from "../lib/validate";
import { predictedVsMeasured } from "../charts/validate";
import { Chart } from "../components/Chart";
import { Alert, Field, NumberField, Select } from "../components/Field";
import { DropZone } from "../components/DropZone";
import { ShareBar } from "../components/ShareBar";

// Validate: a benchmark run dropped in is read (POST /v1/inspect: what was
// read), replayed (POST /v1/validate: predicted against measured, per
// stage), and can be calibrated on (POST /v1/calibrations), the
// calibration stored on the server and downloadable.

type Figures = Record<string, number>;

interface Stage {
  index: number;
  strategy?: string;
  rate_rps?: number;
  concurrency?: number;
  label?: string;
  basis: string;
  requests: { total: number; completed: number; failed: number };
  ttft_ms?: Figures;
  tpot_ms?: Figures;
  e2e_ms?: Figures;
  throughput: { requests_per_s: number; output_tokens_per_s: number };
}

interface Inspection {
  file: string;
  format: string;
  format_description?: string;
  name: string;
  model: string;
  gpu: string;
  gpu_note?: string;
  tp: number;
  dp: number;
  engine_version?: string;
  engine: Record<string, unknown>;
  logged_blocks?: number;
  notes?: string[];
  basis: string;
  requests: { total: number; completed: number; failed: number };
  ttft_ms?: Figures;
  tpot_ms?: Figures;
  e2e_ms?: Figures;
  throughput: { requests_per_s: number; output_tokens_per_s: number };
  stages?: Stage[];
  catalog_model: string;
  catalog_gpu: string;
  hints?: string[];
}

interface Evaluation {
  loss: number;
  median_ape_pct?: Record<string, number>;
}

interface Calibration {
  id: string;
  model: string;
  gpu: string;
  tp: number;
  fit?: { fitted: string[]; evaluations: number; before: Evaluation; after: Evaluation };
  source?: { file: string; requests: number };
}

const none: PlacedProblem = { byControl: {}, general: [] };

export function ValidatePage() {
  const [s, set] = useQueryState(validateFields);
  const [files, setFiles] = useState<Upload[]>([]);
  const [inspection, setInspection] = useState<Inspection | null>(null);
  const [inspectProblem, setInspectProblem] = useState<PlacedProblem>(none);
  const [report, setReport] = useState<ValidationReport | null>(null);
  const [problem, setProblem] = useState<PlacedProblem>(none);
  const [busy, setBusy] = useState("");
  const [progress, setProgress] = useState<number | null>(null);
  const [cal, setCal] = useState<Calibration | null>(null);
  // The job a large replay or fit runs as (cancelled when the page goes).
  const job = useRef<Follow<unknown> | null>(null);
  const auth = useAuthRequired();
  useEffect(() => () => void job.current?.cancel(), []);

  // Read what was dropped as soon as it is.
  useEffect(() => {
    setInspection(null);
    setReport(null);
    setCal(null);
    setInspectProblem(none);
    if (files.length === 0) return;
    const ctl = new AbortController();
    const fd = form(s, files, ["format"]);
    post<Inspection>("inspect", fd, { signal: ctl.signal }).then(setInspection, (e) => {
      if (!isAbort(e)) setInspectProblem(e instanceof ApiProblem ? placeProblem(e, validateFieldMap) : { byControl: {}, general: [String(e)] });
    });
    return () => ctl.abort();
  }, [files, str(s, "format")]);

  const validate = async () => {
    setProblem(none);
    setReport(null);
    setBusy("Replaying the run…");
    setProgress(null);
    try {
      try {
        setReport(await post<ValidationReport>("validate", form(s, files)));
      } catch (e) {
        // Too large to replay at once: as a job, with its progress.
        if (!(e instanceof ApiProblem && e.status === 422 && e.detail.includes("async=true"))) throw e;
        setBusy("Replaying the run as a job…");
        const f = follow<ValidationReport>((signal) => post("validate?async=true", form(s, files), { signal }), (v) => setProgress(v.progress));
        job.current = f;
        setReport((await f.done).result ?? null);
      }
    } catch (e) {
      if (!isAbort(e)) setProblem(e instanceof ApiProblem ? placeProblem(e, validateFieldMap) : { byControl: {}, general: [String(e)] });
    } finally {
      setBusy("");
      setProgress(null);
    }
  };

  const calibrate = async () => {
    setProblem(none);
    setCal(null);
    setBusy("Fitting the step-time model to the run…");
    try {
      let c: Calibration;
      try {
        c = await post<Calibration>("calibrations", calibrationForm(s, files));
      } catch (e) {
        if (!(e instanceof ApiProblem && e.status === 422 && e.detail.includes("async=true"))) throw e;
        setBusy("Fitting as a job…");
        const f = follow<Calibration>((signal) => post("calibrations?async=true", calibrationForm(s, files), { signal }), (v) => setProgress(v.progress));
        job.current = f;
        const v = await f.done;
        if (!v.result) throw new ApiProblem(0, { title: "No calibration", detail: "the calibrate job succeeded without a result" });
        c = v.result;
      }
      setCal(c);
    } catch (e) {
      setProblem(e instanceof ApiProblem ? placeProblem(e, validateFieldMap) : { byControl: {}, general: [String(e)] });
    } finally {
      setBusy("");
      setProgress(null);
    }
  };

  const err = { ...inspectProblem.byControl, ...problem.byControl };
  const origin = location.origin;
  const valKeys = validateFields.map((f) => f.key);
  return (
    <div class="page validate">
      <h1>Validate: the simulator against a measured run</h1>
      <div class="columns">
        <form
          class="inputs"
          aria-label="run to validate"
          onSubmit={(e) => {
            e.preventDefault();
            void validate();
          }}
        >
          <DropZone files={files} onFiles={setFiles} error={err.file} />
          <p class="hint">What the run does not record (empty: as it records it, else vLLM's default):</p>
          <div class="pair">
            <Field id="model" label="Model" value={str(s, "model")} onValue={(v) => set("model", v)} error={err.model} placeholder={inspection?.catalog_model || "as recorded"} />
            <Field id="gpu" label="GPU" value={str(s, "gpu")} onValue={(v) => set("gpu", v)} error={err.gpu} placeholder={inspection?.catalog_gpu || "as recorded"} />
          </div>
          <div class="pair">
            <NumberField id="tp" label="Tensor parallel" unit="GPUs" integer value={str(s, "tp")} onValue={(v) => set("tp", v)} error={err.tp} />
            <NumberField id="max_num_seqs" label="max_num_seqs" unit="sequences" integer value={str(s, "max_num_seqs")} onValue={(v) => set("max_num_seqs", v)} error={err.max_num_seqs} />
          </div>
          <div class="pair">
            <NumberField id="max_num_batched_tokens" label="max_num_batched_tokens" unit="tokens" integer value={str(s, "max_num_batched_tokens")} onValue={(v) => set("max_num_batched_tokens", v)} error={err.max_num_batched_tokens} />
            <NumberField id="max_model_len" label="max_model_len" unit="tokens" integer value={str(s, "max_model_len")} onValue={(v) => set("max_model_len", v)} error={err.max_model_len} />
          </div>
          <div class="pair">
            <Select id="enable_chunked_prefill" label="Chunked prefill" value={str(s, "enable_chunked_prefill")} onValue={(v) => set("enable_chunked_prefill", v)} options={triState} error={err.enable_chunked_prefill} />
            <Select id="enable_prefix_caching" label="Prefix caching" value={str(s, "enable_prefix_caching")} onValue={(v) => set("enable_prefix_caching", v)} options={triState} error={err.enable_prefix_caching} />
          </div>
          <div class="pair">
            <Field id="format" label="Format (empty: detected)" value={str(s, "format")} onValue={(v) => set("format", v)} error={err.format} />
            <Field id="calibration" label="Calibration id (optional)" value={str(s, "calibration")} onValue={(v) => set("calibration", v)} error={err.calibration} />
          </div>
          <Alert messages={[...inspectProblem.general, ...problem.general]} />
          <div class="actions">
            <button type="submit" class="primary" disabled={files.length === 0 || busy !== ""}>
              Validate
            </button>
            <button type="button" disabled={files.length === 0 || busy !== ""} onClick={() => void calibrate()}>
              Calibrate on this run
            </button>
          </div>
          {busy && (
            <div class="progress" role="status">
              <label for="validate-progress">{busy}</label>
              <progress id="validate-progress" max={1} value={progress ?? undefined} />
              <span>{progress === null ? "" : fmt.pct(progress)}</span>
            </div>
          )}
        </form>
        <section class="results" aria-label="validation">
          <ShareBar
            url={shareURL("/validate", s, validateFields)}
            cli={`${validateCLI(s, files)}\n${calibrateCLI(s, files)}`}
            curl={[
              ["what Headroom reads from the run", curl({ method: "POST", origin, path: "/v1/inspect", form: curlForm(s, files, ["format"]), auth })],
              ["predicted against measured (?async=true: as a job)", curl({ method: "POST", origin, path: "/v1/validate", form: curlForm(s, files, valKeys), auth })],
              ["calibrate on the run (stored; GET /v1/calibrations/ID downloads it)", curl({ method: "POST", origin, path: "/v1/calibrations", form: curlForm(s, files, calibrationKeys), auth })],
            ]}
          />
          {files.length === 0 && <p class="empty">Drop a result file (vLLM bench, SGLang, GenAI-Perf, AIPerf, guidellm, inference-perf, LLMServingSim, llmperf …) or a run folder. The link keeps the fields, not the files.</p>}
          {inspection && <InspectionView in={inspection} />}
          {report && <ReportView r={report} />}
          {cal && <CalibrationView c={cal} onUse={() => set("calibration", cal.id)} />}
        </section>
      </div>
    </div>
  );
}

const triState: [string, string][] = [
  ["", "as recorded"],
  ["true", "on"],
  ["false", "off"],
];

function pair(f?: Figures): string {
  if (!f) return "–";
  return `${fmt.ms(f.p50)} / ${fmt.ms(f.p99)}`;
}

function engineText(e: Record<string, unknown>): string {
  const parts = Object.entries(e)
    .filter(([, v]) => v !== null && v !== undefined && v !== "" && v !== 0)
    .map(([k, v]) => `${k} ${String(v)}`);
  return parts.length ? parts.join(", ") : "no settings recorded (vLLM defaults assumed)";
}

function InspectionView(p: { in: Inspection }) {
  const d = p.in;
  const named = (rec: string, id: string) => (rec === "" ? "not recorded" : id === "" ? `${rec} (not in the catalog)` : rec.toLowerCase() === id ? id : `${rec} (catalog: ${id})`);
  const stages = d.stages?.length ? d.stages : null;
  return (
    <section aria-labelledby="read-h" id="inspection">
      <h2 id="read-h">What was read</h2>
      <dl class="facts">
        <dt>File</dt>
        <dd>{d.file}</dd>
        <dt>Format</dt>
        <dd>
          {d.format}
          {d.format_description ? ` (${d.format_description})` : ""}
        </dd>
        <dt>Model</dt>
        <dd>{named(d.model, d.catalog_model)}</dd>
        <dt>GPU</dt>
        <dd>
          {named(d.gpu, d.catalog_gpu)}
          {d.gpu_note ? ` (${d.gpu_note})` : ""}
        </dd>
        <dt>Parallelism</dt>
        <dd>{d.tp || d.dp ? `TP ${Math.max(d.tp, 1)}, DP ${Math.max(d.dp, 1)}` : "not recorded"}</dd>
        <dt>Engine</dt>
        <dd>
          {d.engine_version ? `vLLM ${d.engine_version}; ` : ""}
          {engineText(d.engine)}
          {d.logged_blocks ? `; logged KV blocks ${d.logged_blocks}` : ""}
        </dd>
        <dt>Requests</dt>
        <dd>
          {fmt.count(d.requests.total, "request")}, {fmt.count(d.requests.completed, "completed", "completed")}, {fmt.count(d.requests.failed, "failed", "failed")} (
          {d.basis === "requests" ? "from the records" : d.basis === "aggregate" ? "from the tool's summary" : "no figures"})
        </dd>
      </dl>
      {(d.hints ?? []).map((h) => (
        <p class="hint-strong" key={h}>
          Hint: {h}
        </p>
      ))}
      {(d.notes ?? []).length > 0 && (
        <details>
          <summary>Notes ({d.notes!.length})</summary>
          <ul>
            {d.notes!.map((n) => (
              <li key={n}>{n}</li>
            ))}
          </ul>
        </details>
      )}
      <div class="table-wrap">
        <table id="stages">
          <caption>Measured, per stage (p50 / p99)</caption>
          <thead>
            <tr>
              <th scope="col">stage</th>
              <th scope="col">load</th>
              <th scope="col">requests</th>
              <th scope="col">TTFT (ms)</th>
              <th scope="col">TPOT (ms)</th>
              <th scope="col">E2E (ms)</th>
              <th scope="col">throughput (req/s)</th>
            </tr>
          </thead>
          <tbody>
            {(stages ?? [{ ...d, index: -1 } as unknown as Stage]).map((st) => (
              <tr key={st.index}>
                <th scope="row">{st.index < 0 ? "all" : st.index}</th>
                <td>{[st.strategy, st.rate_rps ? fmt.rps(st.rate_rps) : "", st.concurrency ? `≤ ${fmt.count(st.concurrency, "request")} in flight` : "", st.label ?? ""].filter(Boolean).join(", ") || "–"}</td>
                <td class="num">{fmt.count(st.requests.completed, "request")}</td>
                <td class="num">{pair(st.ttft_ms)}</td>
                <td class="num">{pair(st.tpot_ms)}</td>
                <td class="num">{pair(st.e2e_ms)}</td>
                <td class="num">{st.throughput.requests_per_s > 0 ? fmt.rps(st.throughput.requests_per_s) : "–"}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </section>
  );
}

function ReportView(p: { r: ValidationReport }) {
  const r = p.r;
  const rows = latencyRows(r);
  return (
    <section aria-labelledby="pvm-h" id="validation">
      <h2 id="pvm-h">Predicted against measured</h2>
      {(r.notes ?? []).map((n) => (
        <p class="hint" key={n}>
          {n}
        </p>
      ))}
      {rows.length > 0 && (
        <Chart
          id="pvm-chart"
          caption={`Every latency figure of ${r.comparisons.length === 1 ? "the run" : `the ${r.comparisons.length} stages`} (mean, p50, p90, p99 as measured), measured across and predicted up: on the solid line they agree, the dashed lines are ±25 %.`}
          draw={(w) => predictedVsMeasured(r, w)}
          deps={[r]}
        />
      )}
      <div class="table-wrap">
        <table id="comparisons">
          <caption>Per stage: measured / predicted (error)</caption>
          <thead>
            <tr>
              <th scope="col">stage</th>
              <th scope="col">figure</th>
              <th scope="col">measured</th>
              <th scope="col">predicted</th>
              <th scope="col">error</th>
            </tr>
          </thead>
          <tbody>
            {r.comparisons.flatMap((c) =>
              c.error
                ? [
                    <tr key={c.run}>
                      <th scope="row">{c.run}</th>
                      <td colSpan={4} class="error">
                        {c.error}
                      </td>
                    </tr>,
                  ]
                : (c.metrics ?? []).map((m, i) => (
                    <tr key={c.run + m.name}>
                      {i === 0 && (
                        <th scope="rowgroup" rowSpan={(c.metrics ?? []).length}>
                          {c.run}
                          <br />
                          <small>
                            {c.model} on {c.gpu}, {fmt.count(c.requests, "request")}
                            {worst(c) !== undefined ? `; worst latency error ${fmt.pct(worst(c)! / 100)}` : ""}
                          </small>
                        </th>
                      )}
                      <td>{fmt.metricLabel(m.name)}</td>
                      <td class="num">{fmt.metric(m.name, m.measured)}</td>
                      <td class="num">{fmt.metric(m.name, m.predicted)}</td>
                      <td class={"num " + (Math.abs(m.error_pct) > 25 ? "worse" : "")}>{fmt.signedPct(m.error_pct)}</td>
                    </tr>
                  )),
            )}
          </tbody>
        </table>
      </div>
    </section>
  );
}

function CalibrationView(p: { c: Calibration; onUse: () => void }) {
  const c = p.c;
  const [href, setHref] = useState("");
  const download = async () => {
    const f = await get<unknown>("calibrations/" + encodeURIComponent(c.id));
    const blob = new Blob([JSON.stringify(f, null, 2) + "\n"], { type: "application/json" });
    setHref(URL.createObjectURL(blob));
  };
  useEffect(() => {
    void download();
  }, [c.id]);
  return (
    <section aria-labelledby="cal-h" id="calibration-result">
      <h2 id="cal-h">Calibration {c.id}</h2>
      <p>
        Fitted for {c.model} on {c.gpu} (TP {c.tp}) and stored on the server under id <code>{c.id}</code>: scenarios name it as <code>calibration: {c.id}</code>.
        {c.fit?.after.median_ape_pct && (
          <>
            {" "}
            Median error on the run, before → after the fit:{" "}
            {Object.entries(c.fit.after.median_ape_pct)
              .map(([k, v]) => `${fmt.metricLabel(k)} ${fmt.pct((c.fit!.before.median_ape_pct?.[k] ?? NaN) / 100)} → ${fmt.pct(v / 100)}`)
              .join(", ")}
            .
          </>
        )}
      </p>
      <div class="actions">
        {href && (
          <a class="button" href={href} download={`calibration-${c.id}.json`}>
            Download the calibration file
          </a>
        )}
        <button type="button" onClick={p.onUse}>
          Validate with this calibration
        </button>
      </div>
    </section>
  );
}
