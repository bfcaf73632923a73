// "Show as CLI / curl": the command line and the curl call that ask the
// server the same question as the view.

/** shellQuote quotes a word for a POSIX shell (as is when it is safe). */
export function shellQuote(s: string): string {
  if (s !== "" && /^[A-Za-z0-9_\-.,:/=@%+]+$/.test(s)) return s;
  return "'" + s.replace(/'/g, `'\\''`) + "'";
}

/** command joins argv into one shell line, words quoted. */
export function command(argv: readonly string[]): string {
  return argv.map(shellQuote).join(" ");
}

/** flag adds "--name value" when the value is not empty. */
export function flagArgs(name: string, value: string | number | undefined | null): string[] {
  if (value === undefined || value === null) return [];
  const v = String(value).trim();
  return v === "" ? [] : ["--" + name, v];
}

/** setArgs adds "--set path=value" when the value is not empty. */
export function setArgs(path: string, value: string | number | undefined | null): string[] {
  if (value === undefined || value === null) return [];
  const v = String(value).trim();
  return v === "" ? [] : ["--set", `${path}=${v}`];
}

export interface CurlSpec {
  method: "GET" | "POST" | "DELETE";
  /** The server's origin, as the page sees it (http://127.0.0.1:8080). */
  origin: string;
  /** The path, /v1/… */
  path: string;
  /** A JSON body. */
  body?: unknown;
  /** Form fields (multipart); a value starting with @ is a file. */
  form?: ReadonlyArray<readonly [string, string]>;
  /** The server wants a token: the command reads it from $HEADROOM_AUTH_TOKEN. */
  auth: boolean;
}

/** curl renders one call (the token as a variable, never its value). */
export function curl(c: CurlSpec): string {
  const argv: string[] = ["curl"];
  if (c.method !== "GET" && !(c.method === "POST" && (c.body !== undefined || c.form))) argv.push("-X", c.method);
  const parts = [command(argv)];
  if (c.auth) parts.push(`-H "Authorization: Bearer $HEADROOM_AUTH_TOKEN"`);
  if (c.body !== undefined) {
    parts.push(command(["-H", "Content-Type: application/json", "-d", JSON.stringify(c.body)]));
  }
  for (const [k, v] of c.form ?? []) parts.push(command(["-F", `${k}=${v}`]));
  parts.push(shellQuote(c.origin + c.path));
  return parts.join(" ");
}
