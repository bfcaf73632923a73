import { describe, expect, test } from "vitest";
import { bucketsYAML, formatBuckets, formatProfile, parseBuckets, parseProfile, profileSummary, profileYAML } from "../src/lib/profile";
import { planCLI, planFields, planParams } from "../src/lib/plan";
import { decode } from "../src/lib/query";

describe("rate profiles in the query string", () => {
  test("points read and write back", () => {
    const pts = parseProfile("0:2;28800:9; 64800:4 ;");
    expect(pts).toEqual([
      { at_s: 0, rate_rps: 2 },
      { at_s: 28800, rate_rps: 9 },
      { at_s: 64800, rate_rps: 4 },
    ]);
    expect(formatProfile(pts)).toBe("0:2;28800:9;64800:4");
    expect(profileYAML(pts)).toBe("[{at_s: 0, rate_rps: 2}, {at_s: 28800, rate_rps: 9}, {at_s: 64800, rate_rps: 4}]");
  });
  test("a value that is not a number stays as typed, for the server to name", () => {
    expect(parseProfile("0:fast")).toEqual([{ at_s: 0, rate_rps: "fast" }]);
    expect(parseProfile("0")).toEqual([{ at_s: 0, rate_rps: "" }]);
  });
  test("buckets read and write back, and go to --set as YAML", () => {
    const b = parseBuckets("1:1:12;1:12:40");
    expect(b).toEqual([
      { weight: 1, min: 1, max: 12 },
      { weight: 1, min: 12, max: 40 },
    ]);
    expect(formatBuckets(b)).toBe("1:1:12;1:12:40");
    expect(bucketsYAML(b)).toBe("{type: buckets, buckets: [{weight: 1, min: 1, max: 12}, {weight: 1, min: 12, max: 40}]}");
  });
  test("the summary says the extent and the range of rates", () => {
    expect(profileSummary(parseProfile("0:2;28800:9;64800:4"), 86400)).toBe("3 points over 24.0 h, 2.00–9.00 req/s");
    expect(profileSummary(parseProfile("0:2;3600:4"), undefined)).toBe("2 points over 2.0 h, 2.00–4.00 req/s");
    expect(profileSummary(parseProfile("0:x"), undefined)).toBe("");
  });
  test("a trace's lengths replace the fixed ones in the plan, and in its command", () => {
    const s = decode("?load=profile&profile=0:2;3600:4&input_buckets=1:1:12;1:12:40&output_buckets=1:5:9", planFields);
    const w = (planParams(s) as { scenario: { workload: Record<string, unknown> } }).scenario.workload;
    expect(w.input_tokens).toEqual({ type: "buckets", buckets: [{ weight: 1, min: 1, max: 12 }, { weight: 1, min: 12, max: 40 }] });
    expect(w.output_tokens).toEqual({ type: "buckets", buckets: [{ weight: 1, min: 5, max: 9 }] });
    expect(planCLI(s)).toContain("--set 'workload.input_tokens={type: buckets, buckets: [{weight: 1, min: 1, max: 12}, {weight: 1, min: 12, max: 40}]}'");
  });
});
