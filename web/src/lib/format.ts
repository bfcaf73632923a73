// Numbers as the page shows them: always with their unit, in en-US
// digits whatever the browser's locale (so screenshots and tests agree).

const nf = (digits: number) =>
  new Intl.NumberFormat("en-US", { minimumFractionDigits: digits, maximumFractionDigits: digits });

function fixed(v: number, digits: number): string {
  return nf(digits).format(v);
}

/** digitsFor keeps about three significant digits, up to two decimals. */
function digitsFor(v: number): number {
  const a = Math.abs(v);
  if (a === 0 || a >= 100) return 0;
  if (a >= 10) return 1;
  return 2;
}

function finite(v: number | null | undefined): v is number {
  return typeof v === "number" && Number.isFinite(v);
}

/** ms is a latency: "193.6 ms", "65.5 s" from 10 s up. */
export function ms(v: number | null | undefined): string {
  if (!finite(v)) return "–";
  if (Math.abs(v) >= 10000) return fixed(v / 1000, 1) + " s";
  if (Math.abs(v) >= 100) return fixed(v, 0) + " ms";
  return fixed(v, Math.abs(v) >= 10 ? 1 : 2) + " ms";
}

/** seconds: "45 s", "12.5 min", "3.2 h". */
export function seconds(v: number | null | undefined): string {
  if (!finite(v)) return "–";
  if (Math.abs(v) >= 7200) return fixed(v / 3600, 1) + " h";
  if (Math.abs(v) >= 120) return fixed(v / 60, 1) + " min";
  return fixed(v, digitsFor(v)) + " s";
}

/** clock is a time of day from the start of a profile: "08:00". */
export function clock(s: number): string {
  const h = Math.floor(s / 3600);
  const m = Math.floor((s % 3600) / 60);
  return `${String(h).padStart(2, "0")}:${String(m).padStart(2, "0")}`;
}

/** rps is a request rate: "9.1 req/s". */
export function rps(v: number | null | undefined): string {
  return finite(v) ? fixed(v, digitsFor(v)) + " req/s" : "–";
}

/** tokps is a token rate: "987 tok/s". */
export function tokps(v: number | null | undefined): string {
  return finite(v) ? fixed(v, digitsFor(v)) + " tok/s" : "–";
}

/** usdPerHour: "$5.50/h". */
export function usdPerHour(v: number | null | undefined): string {
  return finite(v) ? "$" + fixed(v, 2) + "/h" : "–";
}

/** usd: "$1.55". */
export function usd(v: number | null | undefined): string {
  return finite(v) ? "$" + fixed(v, 2) : "–";
}

/** times is a multiple: "2.28×". */
export function times(v: number | null | undefined): string {
  return finite(v) ? fixed(v, 2) + "×" : "–";
}

/** pct of a ratio: 0.973 → "97.3 %". */
export function pct(ratio: number | null | undefined): string {
  return finite(ratio) ? fixed(ratio * 100, 1) + " %" : "–";
}

/** signedPct of a percentage: 19.2 → "+19.2 %". */
export function signedPct(p: number | null | undefined): string {
  if (!finite(p)) return "–";
  return (p > 0 ? "+" : p < 0 ? "−" : "") + fixed(Math.abs(p), 1) + " %";
}

/** count: "1,000 requests", "1 replica". */
export function count(n: number | null | undefined, one: string, many = one + "s"): string {
  if (!finite(n)) return "–";
  return fixed(n, Number.isInteger(n) ? 0 : 1) + " " + (n === 1 ? one : many);
}

/** bytes in binary units: "131.45 GiB". */
export function gib(b: number | null | undefined): string {
  if (!finite(b)) return "–";
  const g = b / 2 ** 30;
  if (Math.abs(g) >= 1) return fixed(g, 2) + " GiB";
  return fixed(b / 2 ** 20, 1) + " MiB";
}

/** us is a kernel time: "12.3 µs", "1.25 ms" from 1000 µs up. */
export function us(v: number | null | undefined): string {
  if (!finite(v)) return "–";
  if (Math.abs(v) >= 1000) return fixed(v / 1000, 2) + " ms";
  return fixed(v, digitsFor(v)) + " µs";
}

/** metricUnit is the unit of a report figure by its name (ttft_ms.p99 → "ms"). */
export function metricUnit(name: string): string {
  const base = name.split(".")[0];
  if (base.endsWith("_ms")) return "ms";
  if (base.endsWith("_rps") || name.endsWith("requests_per_s")) return "req/s";
  if (name.endsWith("tokens_per_s")) return "tok/s";
  return "";
}

/** metric formats a value of the named report figure with its unit. */
export function metric(name: string, v: number | null | undefined): string {
  switch (metricUnit(name)) {
    case "ms":
      return ms(v);
    case "req/s":
      return rps(v);
    case "tok/s":
      return tokps(v);
  }
  return finite(v) ? fixed(v, digitsFor(v)) : "–";
}

/** metricLabel names a report figure for people: "ttft_ms.p99" → "TTFT p99". */
export function metricLabel(name: string): string {
  const [base, q] = name.split(".");
  const names: Record<string, string> = {
    ttft_ms: "TTFT",
    tpot_ms: "TPOT",
    itl_ms: "ITL",
    e2e_ms: "E2E",
    server_ttft_ms: "server TTFT",
    queue_ms: "queue",
    goodput_rps: "goodput",
  };
  const head = names[base] ?? base;
  if (base === "throughput") return q === "requests_per_s" ? "throughput (req/s)" : "throughput (tok/s)";
  return q ? `${head} ${q}` : head;
}
