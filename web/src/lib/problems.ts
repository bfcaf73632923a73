// Where a problem's reasons go on a page: each API field path (as the
// server names it in errors[].field, or at the head of the detail of a
// 404 such as "gpus[1]: unknown GPU") is matched against a page's list of
// field prefixes, each the id of the control that sets it. What matches no
// control is shown at the top of the form.

import type { ApiProblem } from "./api";

/** A page's [API field prefix, control id] pairs, most specific first. */
export type FieldMap = ReadonlyArray<readonly [string, string]>;

export interface PlacedProblem {
  /** The reason for each control, by control id. */
  byControl: Record<string, string>;
  /** What names no control: the problem's title and detail. */
  general: string[];
}

/** normalize drops the "params." a job submission adds to its fields. */
export function normalize(field: string): string {
  return field.replace(/^params\./, "");
}

/** controlFor is the control a field path belongs to ("" when none). */
export function controlFor(field: string, map: FieldMap): string {
  const f = normalize(field);
  for (const [prefix, control] of map) {
    if (f === prefix || f.startsWith(prefix + ".") || f.startsWith(prefix + "[")) return control;
  }
  return "";
}

const detailField = /^([A-Za-z_][A-Za-z0-9_]*(?:\[\d+\])?(?:\.[A-Za-z0-9_]+(?:\[\d+\])?)*): (.+)$/s;

/** placeProblem spreads a problem over a page's controls. */
export function placeProblem(p: ApiProblem, map: FieldMap): PlacedProblem {
  const out: PlacedProblem = { byControl: {}, general: [] };
  const errs = p.errors.length > 0 ? p.errors : fromDetail(p.detail);
  let placed = 0;
  for (const e of errs) {
    const c = controlFor(e.field, map);
    if (!c) continue;
    out.byControl[c] = out.byControl[c] ? out.byControl[c] + "; " + e.reason : e.reason;
    placed++;
  }
  if (placed < errs.length || errs.length === 0) {
    out.general.push(p.status > 0 ? `${p.title} (HTTP ${p.status}): ${p.detail}` : `${p.title}: ${p.detail}`);
  }
  return out;
}

function fromDetail(detail: string): { field: string; reason: string }[] {
  const m = detailField.exec(detail);
  return m ? [{ field: m[1], reason: m[2] }] : [];
}
