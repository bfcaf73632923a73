import { useEffect, useRef, useState } from "preact/hooks";
import { ApiProblem, isAbort } from "../lib/api";
import { catalog, type Catalog } from "../lib/catalog";
import { curl } from "../lib/cli";
import * as fmt from "../lib/format";
import { run, type Follow, type JobView } from "../lib/jobs";
import { planCLI, planFieldMap, planFields, planParams, tpChoices } from "../lib/plan";
import { label, status, type PlanResult } from "../lib/planresult";
import { placeProblem, type PlacedProblem } from "../lib/problems";
import { list, str } from "../lib/query";
import { shareURL, useQueryState } from "../lib/usestate";
import { dayChart, paretoChart, paretoPoints } from "../charts/plan";
import { Chart } from "../components/Chart";
import { Alert, Check, Group, NumberField } from "../components/Field";
import { ModelPicker } from "../components/ModelPicker";
import { ShareBar } from "../components/ShareBar";
import { RateProfileInput } from "../components/RateProfileInput";
import { useAuthRequired } from "../lib/auth";

// Plan: how many of which GPU serve this traffic within this SLA. The form
// is the plan job's params; the job runs with its progress and a cancel
// button; the answer starts with the recommendation's sentence.

const noProblem: PlacedProblem = { byControl: {}, general: [] };

export function PlanPage() {
  const [s, set] = useQueryState(planFields);
  const [cat, setCat] = useState<Catalog>({ models: [], gpus: [] });
  const [catError, setCatError] = useState("");
  const [job, setJob] = useState<JobView<PlanResult> | null>(null);
  const [result, setResult] = useState<PlanResult | null>(null);
  const [problem, setProblem] = useState<PlacedProblem>(noProblem);
  const [elapsed, setElapsed] = useState<number | null>(null);
  const follow = useRef<Follow<PlanResult> | null>(null);
  const auth = useAuthRequired();

  const loadCatalog = (fresh = false) =>
    catalog(fresh).then(setCat, (e) => setCatError(e instanceof ApiProblem ? e.detail : String(e)));
  useEffect(() => {
    void loadCatalog();
    return () => void follow.current?.cancel();
  }, []);

  const running = job !== null && (job.state === "queued" || job.state === "running");

  const submit = async () => {
    await follow.current?.cancel();
    setProblem(noProblem);
    setResult(null);
    setElapsed(null);
    const t0 = performance.now();
    setJob({ id: "", kind: "plan", state: "queued", progress: 0 });
    const f = run<PlanResult>("plan", planParams(s), (v) => setJob(v));
    follow.current = f;
    try {
      const v = await f.done;
      if (follow.current !== f) return;
      setResult(v.result ?? null);
      setElapsed((performance.now() - t0) / 1000);
    } catch (e) {
      if (follow.current !== f || isAbort(e)) return;
      setJob(null);
      setProblem(e instanceof ApiProblem ? placeProblem(e, planFieldMap) : { byControl: {}, general: [String(e)] });
    }
  };
  const cancel = async () => {
    const f = follow.current;
    follow.current = null;
    await f?.cancel();
    setJob((j) => (j ? { ...j, state: "cancelled" } : j));
  };

  const err = problem.byControl;
  const gpus = list(s, "gpus");
  const tps = list(s, "tps");
  const toggle = (key: string, cur: string[], v: string, on: boolean) => set(key, on ? [...cur.filter((x) => x !== v), v] : cur.filter((x) => x !== v));
  const params = planParams(s);
  const load = str(s, "load");

  return (
    <div class="page plan">
      <h1>Plan: how many of which GPU</h1>
      <div class="columns">
        <form
          class="inputs"
          aria-label="plan inputs"
          onSubmit={(e) => {
            e.preventDefault();
            void submit();
          }}
        >
          {catError && <Alert messages={[`The catalog could not be read: ${catError}`]} />}
          <ModelPicker id="model" value={str(s, "model")} onValue={(v) => set("model", v)} models={cat.models} error={err.model} onImported={() => void loadCatalog(true)} />
          <Group id="gpus" legend="Candidate GPUs (none checked: the whole catalog)" error={err.gpus} class="gpu-list">
            <p class="hint" id="gpus-checked">
              {gpus.length === 0 ? "none checked: every GPU of the catalog" : `${gpus.length} checked: ${gpus.join(", ")}`}
            </p>
            {cat.gpus.map((g) => (
              <Check
                key={g.id}
                id={"gpu-" + g.id}
                label={`${g.id} · ${g.memory_gb ?? "?"} GB · ${fmt.usdPerHour(g.price_per_gpu_hour_usd)} per GPU`}
                checked={gpus.includes(g.id)}
                onChecked={(on) => toggle("gpus", gpus, g.id, on)}
              />
            ))}
          </Group>
          <Group id="tps" legend="Tensor-parallel degrees (GPUs per replica)" error={err.tps} class="inline">
            {tpChoices.map((t) => (
              <Check key={t} id={"tp-" + t} label={"TP " + t} checked={tps.includes(t)} onChecked={(on) => set("tps", tpChoices.filter((x) => (x === t ? on : tps.includes(x))))} />
            ))}
          </Group>
          <Group id="load" legend="Traffic" error={err.load}>
            <div class="radios" role="radiogroup" aria-label="kind of traffic">
              {(
                [
                  ["rate", "Open loop (req/s)"],
                  ["concurrency", "Closed loop (users)"],
                  ["profile", "Rate profile over the day"],
                ] as const
              ).map(([v, text]) => (
                <label key={v}>
                  <input type="radio" name="load" value={v} checked={load === v} onChange={() => set("load", v)} /> {text}
                </label>
              ))}
            </div>
            {load === "rate" && <NumberField id="rate_rps" label="Arrival rate" unit="req/s" value={str(s, "rate_rps")} onValue={(v) => set("rate_rps", v)} error={err.rate_rps} hint="Poisson arrivals" />}
            {load === "concurrency" && <NumberField id="concurrency" label="Concurrent users" unit="users" integer value={str(s, "concurrency")} onValue={(v) => set("concurrency", v)} error={err.concurrency} hint="each sends its next request when the last one finished" />}
            {load === "profile" ? (
              <RateProfileInput
                profile={str(s, "profile")}
                endS={str(s, "profile_end_s")}
                inputBuckets={str(s, "input_buckets")}
                onProfile={(p, end, buckets) => {
                  set("profile", p);
                  set("profile_end_s", end);
                  set("input_buckets", buckets.input);
                  set("output_buckets", buckets.output);
                }}
                onEnd={(v) => set("profile_end_s", v)}
                errors={{ profile: err.profile, end: err.profile_end_s }}
              />
            ) : (
              <NumberField id="requests" label="Run length" unit="requests" integer value={str(s, "requests")} onValue={(v) => set("requests", v)} error={err.requests} />
            )}
            {!(load === "profile" && str(s, "input_buckets")) && (
              <div class="pair">
                <NumberField id="input_tokens" label="Prompt" unit="tokens" integer value={str(s, "input_tokens")} onValue={(v) => set("input_tokens", v)} error={err.input_tokens} />
                <NumberField id="output_tokens" label="Output" unit="tokens" integer value={str(s, "output_tokens")} onValue={(v) => set("output_tokens", v)} error={err.output_tokens} />
              </div>
            )}
          </Group>
          <Group id="sla" legend="SLA (every candidate must meet it)">
            <div class="pair">
              <NumberField id="ttft_p99_ms" label="TTFT p99" unit="ms" value={str(s, "ttft_p99_ms")} onValue={(v) => set("ttft_p99_ms", v)} error={err.ttft_p99_ms} />
              <NumberField id="tpot_p99_ms" label="TPOT p99" unit="ms" value={str(s, "tpot_p99_ms")} onValue={(v) => set("tpot_p99_ms", v)} error={err.tpot_p99_ms} />
            </div>
            <NumberField id="e2e_p99_ms" label="E2E p99 (optional)" unit="ms" value={str(s, "e2e_p99_ms")} onValue={(v) => set("e2e_p99_ms", v)} error={err.e2e_p99_ms} />
          </Group>
          <details open={Boolean(err.headroom || err.max_replicas || err.max_num_seqs || err.gpu_memory_utilization || err.target_utilization)}>
            <summary>More settings</summary>
            <NumberField id="headroom" label="Required headroom" unit="× the load" value={str(s, "headroom")} onValue={(v) => set("headroom", v)} error={err.headroom} hint="the recommendation sustains this multiple of the traffic within the SLA" />
            <NumberField id="max_replicas" label="Most replicas per GPU and TP" unit="replicas" integer value={str(s, "max_replicas")} onValue={(v) => set("max_replicas", v)} error={err.max_replicas} />
            <NumberField id="max_num_seqs" label="engine.max_num_seqs (empty: vLLM's default)" unit="sequences" integer value={str(s, "max_num_seqs")} onValue={(v) => set("max_num_seqs", v)} error={err.max_num_seqs} />
            <NumberField id="gpu_memory_utilization" label="engine.gpu_memory_utilization (empty: 0.9)" unit="of GPU memory" value={str(s, "gpu_memory_utilization")} onValue={(v) => set("gpu_memory_utilization", v)} error={err.gpu_memory_utilization} />
            {load === "profile" && (
              <NumberField id="target_utilization" label="Autoscaler's target utilization (empty: 0.7)" unit="of capacity" value={str(s, "target_utilization")} onValue={(v) => set("target_utilization", v)} error={err.target_utilization} />
            )}
          </details>
          <Alert messages={problem.general} />
          <div class="actions">
            <button type="submit" class="primary" disabled={running}>
              {running ? "Planning…" : "Plan"}
            </button>
            {running && (
              <button type="button" onClick={() => void cancel()}>
                Cancel
              </button>
            )}
          </div>
          {job && (running || job.state === "cancelled") && (
            <div class="progress">
              <label for="plan-progress">{job.state === "cancelled" ? "Cancelled" : job.state === "queued" ? "Queued" : "Simulating candidates"}</label>
              <progress id="plan-progress" max={1} value={job.progress} aria-valuetext={fmt.pct(job.progress)} />
              <span>{fmt.pct(job.progress)}</span>
            </div>
          )}
        </form>
        <section class="results" aria-label="plan answer" aria-busy={running}>
          <ShareBar
            url={shareURL("/plan", s, planFields)}
            cli={planCLI(s)}
            curl={[
              ["submit the plan job", curl({ method: "POST", origin: location.origin, path: "/v1/jobs", body: { kind: "plan", params }, auth })],
              ["then follow it: state, progress 0-1, and the result", curl({ method: "GET", origin: location.origin, path: "/v1/jobs/JOB_ID", auth })],
            ]}
          />
          {!result && !running && <p class="empty">Set the model, the GPUs to consider, the traffic and the SLA, then Plan. The defaults are the plan example of docs/planning.md.</p>}
          {result && <PlanAnswer r={result} elapsedS={elapsed} />}
        </section>
      </div>
    </div>
  );
}

function PlanAnswer(p: { r: PlanResult; elapsedS: number | null }) {
  const r = p.r;
  const rec = r.recommendation;
  const pts = paretoPoints(r);
  return (
    <div class="answer">
      <h2 id="recommendation" role="status">
        {rec ? rec.sentence : r.summary}
      </h2>
      <p class="meta">
        Target load {r.dimension === "rate_rps" ? fmt.rps(r.target_load) : fmt.count(r.target_load, "user")}, required headroom {fmt.times(r.required_headroom)}; {fmt.count(r.simulations, "simulation")}
        {p.elapsedS !== null && <> in {fmt.seconds(p.elapsedS)}</>}.
      </p>
      {pts.length > 0 && (
        <Chart
          id="pareto"
          caption={`Cost per hour against ${fmt.metricLabel(r.pareto_metric)}: the Pareto front dashed, the recommendation ringed${r.pareto_limit_ms ? `, the SLA bound at ${fmt.ms(r.pareto_limit_ms)}` : ""}.`}
          draw={(w) => paretoChart(r, w)}
          deps={[r]}
        />
      )}
      {r.day && (
        <section aria-labelledby="day-h">
          <h3 id="day-h">The day on the recommendation</h3>
          <p>{r.day.summary}</p>
          <Chart id="day" caption="Load, replicas the autoscaler held (dashed: replicas needed with the headroom), and SLA attainment per window." draw={(w) => dayChart(r.day!, w)} deps={[r]} />
          <p>
            Autoscaled {fmt.usd(r.day.autoscaled.cost_per_day_usd)} per day at {fmt.pct(r.day.autoscaled.sla_attainment)} SLA attainment; static {fmt.count(r.day.static.replicas, "replica")}{" "}
            {fmt.usd(r.day.static.cost_per_day_usd)} per day at {fmt.pct(r.day.static.sla_attainment)}; saves {fmt.usd(r.day.savings_per_day_usd)} per day ({fmt.pct(r.day.savings_pct / 100)}).
          </p>
        </section>
      )}
      {(r.runners_up?.length ?? 0) > 0 && (
        <section aria-labelledby="runners-h">
          <h3 id="runners-h">Runners-up and why they lost</h3>
          <div class="table-wrap">
            <table id="runners-up">
              <thead>
                <tr>
                  <th scope="col">configuration</th>
                  <th scope="col">cost ($/h)</th>
                  <th scope="col">lost on</th>
                  <th scope="col">why</th>
                </tr>
              </thead>
              <tbody>
                {r.runners_up!.map((u) => (
                  <tr key={u.label + u.lost_on}>
                    <th scope="row">{u.label}</th>
                    <td class="num">{u.cost_per_hour_usd ? fmt.usdPerHour(u.cost_per_hour_usd) : "–"}</td>
                    <td>{u.lost_on}</td>
                    <td>{u.why}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        </section>
      )}
      {(r.candidates?.length ?? 0) > 0 && (
        <section aria-labelledby="candidates-h">
          <h3 id="candidates-h">Every configuration that meets the SLA at the target</h3>
          <div class="table-wrap">
            <table id="candidates">
              <thead>
                <tr>
                  <th scope="col">configuration</th>
                  <th scope="col">GPUs</th>
                  <th scope="col">cost ($/h)</th>
                  <th scope="col">$ per M output tokens</th>
                  <th scope="col">TTFT p99 (ms)</th>
                  <th scope="col">TPOT p99 (ms)</th>
                  <th scope="col">headroom (× load)</th>
                  <th scope="col">limited by</th>
                  <th scope="col">verdict</th>
                </tr>
              </thead>
              <tbody>
                {r.candidates!.map((c) => (
                  <tr key={label(c)} class={c.recommended ? "recommended" : ""}>
                    <th scope="row">{label(c)}</th>
                    <td class="num">{fmt.count(c.gpus, "GPU")}</td>
                    <td class="num">{fmt.usdPerHour(c.cost_per_hour_usd)}</td>
                    <td class="num">{fmt.usd(c.cost_per_million_output_tokens_usd)}</td>
                    <td class="num">{fmt.ms(c.ttft_p99_ms)}</td>
                    <td class="num">{fmt.ms(c.tpot_p99_ms)}</td>
                    <td class="num">{(c.headroom_capped ? "≥" : "") + fmt.times(c.headroom)}</td>
                    <td>{c.headroom_limiting ? fmt.metricLabel(c.headroom_limiting) : "–"}</td>
                    <td>{c.recommended ? "recommended" : c.why_not ?? status(c)}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        </section>
      )}
      {(r.missed?.length ?? 0) > 0 && (
        <section aria-labelledby="missed-h">
          <h3 id="missed-h">Missed the SLA even at the most replicas</h3>
          <ul id="missed">
            {r.missed!.map((c) => (
              <li key={label(c)}>
                <strong>{label(c)}</strong>: {c.why_not}
              </li>
            ))}
          </ul>
        </section>
      )}
      {(r.pruned?.length ?? 0) > 0 && (
        <section aria-labelledby="pruned-h">
          <h3 id="pruned-h">Pruned without simulating</h3>
          <ul id="pruned">
            {r.pruned!.map((c) => (
              <li key={label(c) + c.reason}>
                <strong>{label(c)}</strong>: {c.reason}
              </li>
            ))}
          </ul>
        </section>
      )}
      {(r.notes?.length ?? 0) > 0 && (
        <section aria-labelledby="notes-h">
          <h3 id="notes-h">Notes</h3>
          <ul>
            {r.notes!.map((n) => (
              <li key={n}>{n}</li>
            ))}
          </ul>
        </section>
      )}
    </div>
  );
}

