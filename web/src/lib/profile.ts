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
