// A synchronous simulation (POST /v1/simulate, or another synchronous
// question such as POST /v1/steptime) that follows its inputs:
// each change waits a moment (debounce) and cancels the run before it, so
// that moving a slider asks the server once, for where it stopped.

import { useEffect, useRef, useState } from "preact/hooks";
import { ApiProblem, isAbort, post } from "./api";

export interface Simulation<R> {
  report: R | null;
  /** The inputs the report is of (JSON). */
  of: string;
  busy: boolean;
  problem: ApiProblem | null;
  /** Wall time of the last answer. */
  elapsedMs: number | null;
}

export function useSimulation<R>(body: Record<string, unknown> | null, delayMs = 350, path = "simulate"): Simulation<R> {
  const key = body ? JSON.stringify(body) : "";
  const [sim, setSim] = useState<Simulation<R>>({ report: null, of: "", busy: false, problem: null, elapsedMs: null });
  const seq = useRef(0);
  useEffect(() => {
    if (!key) {
      setSim({ report: null, of: "", busy: false, problem: null, elapsedMs: null });
      return;
    }
    const n = ++seq.current;
    const ctl = new AbortController();
    setSim((s) => ({ ...s, busy: true }));
    const timer = setTimeout(async () => {
      const t0 = performance.now();
      try {
        const rep = await post<R>(path, key, { signal: ctl.signal });
        if (n === seq.current) setSim({ report: rep, of: key, busy: false, problem: null, elapsedMs: performance.now() - t0 });
      } catch (e) {
        if (isAbort(e) || n !== seq.current) return;
        setSim((s) => ({ ...s, busy: false, problem: e instanceof ApiProblem ? e : new ApiProblem(0, { title: "Error", detail: String(e) }) }));
      }
    }, delayMs);
    return () => {
      clearTimeout(timer);
      ctl.abort();
    };
  }, [key]);
  return sim;
}
