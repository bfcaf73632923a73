// The one way the app talks to the server: the public /v1 API, with the
// bearer token the user gave (kept for the tab in sessionStorage, never in
// the URL). Every error is the server's RFC 9457 problem, kept whole so
// that a page can show each field's reason next to its control.

export interface FieldProblem {
  field: string;
  reason: string;
}

export interface ProblemBody {
  type?: string;
  title?: string;
  status?: number;
  detail?: string;
  errors?: FieldProblem[];
}

/** ApiProblem is a 4xx/5xx answer (or a network failure, status 0). */
export class ApiProblem extends Error {
  readonly status: number;
  readonly title: string;
  readonly detail: string;
  readonly errors: FieldProblem[];
  readonly type: string;
  constructor(status: number, body: ProblemBody) {
    const detail = body.detail ?? body.title ?? `HTTP ${status}`;
    super(detail);
    this.name = "ApiProblem";
    this.status = status;
    this.title = body.title ?? `HTTP ${status}`;
    this.detail = detail;
    this.errors = body.errors ?? [];
    this.type = body.type ?? "";
  }
}

const tokenKey = "headroom.token";

/** The bearer token of this tab ("" when none was given). */
export function token(): string {
  try {
    return sessionStorage.getItem(tokenKey) ?? "";
  } catch {
    return "";
  }
}

export function setToken(t: string): void {
  try {
    if (t) sessionStorage.setItem(tokenKey, t);
    else sessionStorage.removeItem(tokenKey);
  } catch {
    // storage off: the token lasts as long as the page
  }
  memoryToken = t;
}

let memoryToken = "";

function currentToken(): string {
  return token() || memoryToken;
}

/** Listeners told when the server answers 401 (the app asks for a token). */
const unauthorized = new Set<() => void>();
export function onUnauthorized(f: () => void): () => void {
  unauthorized.add(f);
  return () => unauthorized.delete(f);
}

export interface CallOptions {
  signal?: AbortSignal;
  /** Extra headers (Accept). */
  headers?: Record<string, string>;
}

/** v1 is a path under /v1 ("gpus", "jobs/ID"). */
export function v1(path: string): string {
  return "/v1/" + path.replace(/^\/+/, "");
}

async function send(method: string, path: string, body: BodyInit | undefined, contentType: string | undefined, opt: CallOptions): Promise<Response> {
  const headers: Record<string, string> = { Accept: "application/json", ...opt.headers };
  if (contentType) headers["Content-Type"] = contentType;
  const t = currentToken();
  if (t) headers.Authorization = "Bearer " + t;
  let res: Response;
  try {
    res = await fetch(v1(path), { method, body, headers, signal: opt.signal });
  } catch (e) {
    if (e instanceof DOMException && e.name === "AbortError") throw e;
    throw new ApiProblem(0, { title: "No answer", detail: `the server did not answer (${String(e)})` });
  }
  if (res.ok) return res;
  let problem: ProblemBody = {};
  try {
    problem = (await res.json()) as ProblemBody;
  } catch {
    problem = { title: res.statusText };
  }
  if (res.status === 401) unauthorized.forEach((f) => f());
  throw new ApiProblem(res.status, problem);
}

/** get answers the JSON of GET /v1/path. */
export async function get<T>(path: string, opt: CallOptions = {}): Promise<T> {
  const res = await send("GET", path, undefined, undefined, opt);
  return (await res.json()) as T;
}

/** post sends a JSON body (or raw bytes, or a form) and answers the JSON. */
export async function post<T>(path: string, body: unknown, opt: CallOptions = {}): Promise<T> {
  let b: BodyInit;
  let ct: string | undefined;
  if (body instanceof FormData) {
    b = body; // the browser sets the multipart boundary
  } else if (body instanceof Blob || typeof body === "string") {
    b = body;
    ct = "application/json";
  } else {
    b = JSON.stringify(body);
    ct = "application/json";
  }
  const res = await send("POST", path, b, ct, opt);
  if (res.status === 204) return undefined as T;
  return (await res.json()) as T;
}

/** del sends DELETE /v1/path and answers the JSON (or nothing on 204). */
export async function del<T>(path: string, opt: CallOptions = {}): Promise<T | undefined> {
  const res = await send("DELETE", path, undefined, undefined, opt);
  if (res.status === 204) return undefined;
  return (await res.json()) as T;
}

/** isAbort tells a cancelled request from a failed one. */
export function isAbort(e: unknown): boolean {
  return e instanceof DOMException && e.name === "AbortError";
}
