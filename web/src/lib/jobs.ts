// Jobs (POST /v1/jobs): submit, follow the progress until the job ends,
// cancel (DELETE /v1/jobs/{id}).

import { ApiProblem, del, get, post, type ProblemBody } from "./api";

export interface JobView<R = unknown> {
  id: string;
  kind: string;
  state: "queued" | "running" | "succeeded" | "failed" | "cancelled";
  progress: number;
  result?: R;
  notes?: string[];
  error?: ProblemBody;
}

export interface Follow<R> {
  /** Resolves with the succeeded job; rejects with its problem otherwise. */
  done: Promise<JobView<R>>;
  /** Cancels the job on the server (and stops following it). */
  cancel: () => Promise<void>;
}

const pollMs = 200;

/** run submits a job (POST /v1/jobs) and follows it. */
export function run<R>(kind: string, params: unknown, onView: (v: JobView<R>) => void): Follow<R> {
  return follow<R>((signal) => post<JobView<R>>("jobs", { kind, params }, { signal }), onView);
}

/**
 * follow submits a job (submit answers its view: POST /v1/jobs, or an
 * upload's ?async=true) and follows it, reporting each state it sees. A
 * submission the server refuses rejects with its problem at once.
 */
export function follow<R>(submit: (signal: AbortSignal) => Promise<JobView<R>>, onView: (v: JobView<R>) => void): Follow<R> {
  let id = "";
  let stopped = false;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const ctl = new AbortController();
  const done = new Promise<JobView<R>>((resolve, reject) => {
    const poll = async () => {
      if (stopped) return;
      try {
        const v = await get<JobView<R>>("jobs/" + encodeURIComponent(id), { signal: ctl.signal });
        onView(v);
        if (v.state === "succeeded") return resolve(v);
        if (v.state === "failed" || v.state === "cancelled") {
          return reject(new ApiProblem(v.error?.status ?? 0, v.error ?? { title: `job ${v.state}` }));
        }
        timer = setTimeout(poll, pollMs);
      } catch (e) {
        reject(e);
      }
    };
    submit(ctl.signal).then((v) => {
      id = v.id;
      onView(v);
      if (stopped) {
        void del("jobs/" + encodeURIComponent(id)).catch(() => {});
        return;
      }
      timer = setTimeout(poll, pollMs / 2);
    }, reject);
  });
  const cancel = async () => {
    stopped = true;
    if (timer) clearTimeout(timer);
    ctl.abort();
    if (id) {
      try {
        await del("jobs/" + encodeURIComponent(id));
      } catch {
        // already gone
      }
    }
  };
  return { done, cancel };
}
