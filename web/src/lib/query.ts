// A view's inputs as its query string, so that every view has a URL to
// share. Values are kept as the text the controls hold (a number the user
// typed wrong stays as typed, and the server names it), lists as
// comma-separated text. Only what differs from the defaults is written,
// in the schema's order, so that equal inputs give equal URLs.

export type Value = string | boolean | string[];

export interface FieldDef {
  key: string;
  def: Value;
}

export type State = Record<string, Value>;

/** defaults is the state of an empty query. */
export function defaults(fields: readonly FieldDef[]): State {
  const s: State = {};
  for (const f of fields) s[f.key] = Array.isArray(f.def) ? [...f.def] : f.def;
  return s;
}

/** decode reads a query string ("?a=1&b=x") into a state; unknown keys are ignored. */
export function decode(search: string, fields: readonly FieldDef[]): State {
  const q = new URLSearchParams(search);
  const s = defaults(fields);
  for (const f of fields) {
    const raw = q.get(f.key);
    if (raw === null) continue;
    if (typeof f.def === "boolean") {
      s[f.key] = raw === "1" || raw === "true" || raw === "";
    } else if (Array.isArray(f.def)) {
      s[f.key] = raw === "" ? [] : raw.split(",").map((x) => x.trim()).filter((x) => x !== "");
    } else {
      s[f.key] = raw;
    }
  }
  return s;
}

function same(a: Value, b: Value): boolean {
  if (Array.isArray(a) && Array.isArray(b)) return a.length === b.length && a.every((x, i) => x === b[i]);
  return a === b;
}

// Characters left readable in a query value: encodeURIComponent's output
// with commas, colons and semicolons restored (lists and profiles).
function enc(v: string): string {
  return encodeURIComponent(v).replace(/%2C/g, ",").replace(/%3A/g, ":").replace(/%3B/g, ";");
}

/** encode writes the state's non-default values as a query string ("" or "?…"). */
export function encode(state: State, fields: readonly FieldDef[]): string {
  const parts: string[] = [];
  for (const f of fields) {
    const v = state[f.key];
    if (v === undefined || same(v, f.def)) continue;
    let text: string;
    if (typeof v === "boolean") text = v ? "1" : "0";
    else if (Array.isArray(v)) text = v.join(",");
    else text = v;
    parts.push(f.key + "=" + enc(text));
  }
  return parts.length ? "?" + parts.join("&") : "";
}

/** str, list and flag read a state's values with their types. */
export function str(s: State, key: string): string {
  const v = s[key];
  return typeof v === "string" ? v : "";
}
export function list(s: State, key: string): string[] {
  const v = s[key];
  return Array.isArray(v) ? v : [];
}
export function flag(s: State, key: string): boolean {
  return s[key] === true;
}

/**
 * num turns a control's text into the JSON the API reads: undefined when
 * empty (the server's default), a number when it parses, else the text as
 * typed so that the server's problem names the field and the value.
 */
export function num(text: string): number | string | undefined {
  const t = text.trim();
  if (t === "") return undefined;
  const n = Number(t);
  return Number.isFinite(n) ? n : t;
}

/** prune drops undefined members and objects left empty, recursively. */
export function prune<T>(v: T): T {
  if (Array.isArray(v)) return v.map(prune) as T;
  if (v && typeof v === "object") {
    const out: Record<string, unknown> = {};
    for (const [k, x] of Object.entries(v)) {
      if (x === undefined) continue;
      const p = prune(x);
      if (p && typeof p === "object" && !Array.isArray(p) && Object.keys(p).length === 0) continue;
      out[k] = p;
    }
    return out as T;
  }
  return v;
}
