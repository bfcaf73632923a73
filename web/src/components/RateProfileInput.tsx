import { NumberField, Field } from "./Field";

// A rate profile: at_s:rate_rps points (the query string's compact form),
// the time the last rate ends.

interface Props {
  profile: string;
  endS: string;
  onProfile: (profile: string, endS: string, lengths?: { input: string; output: string }) => void;
  onEnd: (v: string) => void;
  errors: { profile?: string; end?: string };
}

export function RateProfileInput(p: Props) {
  return (
    <div class="rate-profile">
      <Field
        id="profile"
        label="Rate profile (at_s:rate_rps; …)"
        value={p.profile}
        onValue={(v) => p.onProfile(v, p.endS)}
        placeholder="0:2;28800:9;64800:4"
        error={p.errors.profile}
        hint="each rate (req/s) holds from its time (s from the start) to the next point's"
      />
      <NumberField id="profile_end_s" label="The last rate ends at" unit="s" value={p.endS} onValue={p.onEnd} error={p.errors.end} hint="empty: as long as the step before it" />
    </div>
  );
}
