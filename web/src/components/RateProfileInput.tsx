import { useState } from "preact/hooks";
import { ApiProblem, post } from "../lib/api";
import { formatBuckets, formatProfile, parseProfile, profileSummary, type Bucket, type RatePoint } from "../lib/profile";
import { Check, Field, NumberField, Select } from "./Field";

// A rate profile: typed as at_s:rate_rps points (the query string's
// compact form), or made from an uploaded profile file or request trace
// by POST /v1/rate-profile (a trace's lengths come with it).

interface Props {
  profile: string;
  endS: string;
  /** The trace's lengths, as compact buckets ("" = the fixed lengths below). */
  inputBuckets: string;
  onProfile: (profile: string, endS: string, buckets: { input: string; output: string }) => void;
  onEnd: (v: string) => void;
  errors: { profile?: string; end?: string };
}

interface Answer {
  rate_profile: RatePoint[];
  rate_profile_end_s: number;
  requests?: number;
  input_tokens?: { buckets: Bucket[] };
  output_tokens?: { buckets: Bucket[] };
  notes?: string[];
}

export function RateProfileInput(p: Props) {
  const [kind, setKind] = useState("profile");
  const [traceFormat, setTraceFormat] = useState("");
  const [windowS, setWindowS] = useState("900");
  const [timeScale, setTimeScale] = useState("1");
  const [rateScale, setRateScale] = useState("1");
  const [keepLengths, setKeepLengths] = useState(false);
  const [file, setFile] = useState<File | null>(null);
  const [err, setErr] = useState<Record<string, string>>({});
  const [done, setDone] = useState("");
  const [busy, setBusy] = useState(false);
  const upload = async () => {
    setErr({});
    setDone("");
    if (!file) {
      setErr({ file: "choose a rate profile or a trace file" });
      return;
    }
    const fd = new FormData();
    fd.append("kind", kind);
    if (kind === "trace") {
      if (traceFormat) fd.append("trace_format", traceFormat);
      fd.append("window_s", windowS.trim());
    }
    fd.append("time_scale", timeScale.trim());
    fd.append("rate_scale", rateScale.trim());
    fd.append("file", file, file.name);
    setBusy(true);
    try {
      const a = await post<Answer>("rate-profile", fd);
      const lengths = kind === "trace" && !keepLengths && a.input_tokens && a.output_tokens;
      p.onProfile(formatProfile(a.rate_profile), a.rate_profile_end_s ? String(a.rate_profile_end_s) : "", {
        input: lengths ? formatBuckets(a.input_tokens!.buckets) : "",
        output: lengths ? formatBuckets(a.output_tokens!.buckets) : "",
      });
      setDone([`read ${file.name}`, ...(a.notes ?? [])].join("; "));
    } catch (e) {
      if (e instanceof ApiProblem) {
        const byField: Record<string, string> = {};
        for (const f of e.errors) byField[f.field] = f.reason;
        setErr(Object.keys(byField).length ? byField : { file: e.detail });
      } else {
        setErr({ file: String(e) });
      }
    } finally {
      setBusy(false);
    }
  };
  const summary = profileSummary(parseProfile(p.profile), Number(p.endS) || undefined);
  return (
    <div class="rate-profile">
      <Field
        id="profile"
        label="Rate profile (at_s:rate_rps; …)"
        value={p.profile}
        onValue={(v) => p.onProfile(v, p.endS, { input: "", output: "" })}
        placeholder="0:2;28800:9;64800:4"
        error={p.errors.profile}
        hint={(summary ? summary + ". " : "") + "Each rate (req/s) holds from its time (s from the start) to the next point's." + (p.inputBuckets ? " Lengths: the trace's." : "")}
      />
      <NumberField id="profile_end_s" label="The last rate ends at" unit="s" value={p.endS} onValue={p.onEnd} error={p.errors.end} hint="empty: as long as the step before it" />
      <details>
        <summary>Make it from a file…</summary>
        <Select
          id="profile-kind"
          label="The file is"
          value={kind}
          onValue={setKind}
          options={[
            ["profile", "a rate profile (CSV at_s,rate_rps, or a YAML/JSON list)"],
            ["trace", "a request trace (its arrivals counted per window)"],
          ]}
          error={err.kind}
        />
        <div class={"field" + (err.file ? " invalid" : "")}>
          <label for="profile-file">File</label>
          <input
            id="profile-file"
            type="file"
            aria-invalid={err.file ? "true" : undefined}
            aria-describedby={err.file ? "profile-file-error" : undefined}
            onChange={(e) => setFile((e.currentTarget as HTMLInputElement).files?.[0] ?? null)}
          />
          {err.file && <small id="profile-file-error" class="error" role="alert">{err.file}</small>}
        </div>
        {kind === "trace" && (
          <>
            <Select
              id="trace-format"
              label="Trace format"
              value={traceFormat}
              onValue={setTraceFormat}
              options={[
                ["", "by extension (.csv: azure, .jsonl: mooncake)"],
                ["azure", "azure"],
                ["mooncake", "mooncake"],
                ["burstgpt", "burstgpt"],
                ["csv", "csv (arrival_s, input_tokens, output_tokens)"],
                ["jsonl", "jsonl"],
                ["llmservingsim", "llmservingsim"],
              ]}
              error={err.trace_format}
            />
            <NumberField id="window-s" label="Window of the profile" unit="s" value={windowS} onValue={setWindowS} error={err.window_s} />
            <Check id="keep-lengths" label="Keep the lengths above (not the trace's)" checked={keepLengths} onChecked={setKeepLengths} />
          </>
        )}
        <NumberField id="time-scale" label="Stretch time by" unit="×" value={timeScale} onValue={setTimeScale} error={err.time_scale} hint="200 makes 7 minutes of trace a day, at the trace's rates" />
        <NumberField id="rate-scale" label="Scale the rates by" unit="×" value={rateScale} onValue={setRateScale} error={err.rate_scale} hint="traffic that grows (or a lighter test)" />
        <button type="button" onClick={() => void upload()} disabled={busy}>
          {busy ? "Reading…" : "Use this file"}
        </button>
        {done && <p role="status">{done}</p>}
      </details>
    </div>
  );
}
