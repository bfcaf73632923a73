// A rate profile as the query string keeps it: "at_s:rate_rps" points
// separated by semicolons ("0:2;28800:9;64800:4").

export interface RatePoint {
  at_s: number | string;
  rate_rps: number | string;
}

/** parseProfile reads the compact form; a value that is not a number stays text (the server names it). */
export function parseProfile(text: string): RatePoint[] {
  return text
    .split(";")
    .map((p) => p.trim())
    .filter(Boolean)
    .map((p) => {
      const [a, r] = p.split(":");
      const n = (s: string | undefined) => {
        const t = (s ?? "").trim();
        const v = Number(t);
        return t !== "" && Number.isFinite(v) ? v : t;
      };
      return { at_s: n(a), rate_rps: n(r) };
    });
}

/** formatProfile writes points in the compact form. */
export function formatProfile(points: readonly RatePoint[]): string {
  return points.map((p) => `${p.at_s}:${p.rate_rps}`).join(";");
}

/** profileYAML is the profile as a YAML flow list, for --set workload.rate_profile=… */
export function profileYAML(points: readonly RatePoint[]): string {
  return "[" + points.map((p) => `{at_s: ${p.at_s}, rate_rps: ${p.rate_rps}}`).join(", ") + "]";
}

export interface Bucket {
  weight: number | string;
  min: number | string;
  max: number | string;
}

/** parseBuckets reads "weight:min:max" buckets separated by semicolons. */
export function parseBuckets(text: string): Bucket[] {
  return text
    .split(";")
    .map((p) => p.trim())
    .filter(Boolean)
    .map((p) => {
      const [w, lo, hi] = p.split(":").map((x) => {
        const t = (x ?? "").trim();
        const v = Number(t);
        return t !== "" && Number.isFinite(v) ? v : t;
      });
      return { weight: w, min: lo, max: hi };
    });
}

/** formatBuckets writes buckets in the compact form. */
export function formatBuckets(bs: readonly Bucket[]): string {
  return bs.map((b) => `${b.weight}:${b.min}:${b.max}`).join(";");
}

/** bucketsYAML is a buckets length as YAML, for --set workload.input_tokens=… */
export function bucketsYAML(bs: readonly Bucket[]): string {
  return "{type: buckets, buckets: [" + bs.map((b) => `{weight: ${b.weight}, min: ${b.min}, max: ${b.max}}`).join(", ") + "]}";
}

/** profileSummary says a profile's extent and peak: "48 points over 24.0 h, 2.0–9.0 req/s". */
export function profileSummary(points: readonly RatePoint[], endS: number | undefined): string {
  const ok = points.every((p) => typeof p.at_s === "number" && typeof p.rate_rps === "number");
  if (!ok || points.length === 0) return "";
  const ats = points.map((p) => p.at_s as number);
  const rates = points.map((p) => p.rate_rps as number);
  const last = ats[ats.length - 1];
  const span = endS && endS > last ? endS : ats.length > 1 ? last + (last - ats[ats.length - 2]) : last;
  const fix = (v: number) => (v >= 100 ? v.toFixed(0) : v >= 10 ? v.toFixed(1) : v.toFixed(2));
  return `${points.length} point${points.length === 1 ? "" : "s"} over ${(span / 3600).toFixed(1)} h, ${fix(Math.min(...rates))}–${fix(Math.max(...rates))} req/s`;
}
