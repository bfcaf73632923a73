// A setting moved with a slider over sensible values, or typed exactly in
// the box beside it. The slider's position is the preset nearest to the
// typed value; its accessible value says the number with its unit.

interface Props {
  id: string;
  label: string;
  unit: string;
  /** The values the slider steps through ("" = the server's default). */
  presets: readonly string[];
  value: string;
  onValue: (v: string) => void;
  error?: string;
  hint?: string;
  /** How the empty value reads ("vLLM's default"). */
  emptyText?: string;
}

/** nearest is the preset the slider shows for a typed value. */
export function nearest(presets: readonly string[], v: string): number {
  const exact = presets.indexOf(v.trim());
  if (exact >= 0) return exact;
  const x = Number(v);
  if (v.trim() === "" || !Number.isFinite(x)) return 0;
  let best = -1;
  presets.forEach((p, i) => {
    if (p !== "" && (best < 0 || Math.abs(Number(p) - x) < Math.abs(Number(presets[best]) - x))) best = i;
  });
  return Math.max(best, 0);
}

export function Slider(p: Props) {
  const idx = nearest(p.presets, p.value);
  const text = (v: string) => (v === "" ? p.emptyText ?? "default" : `${v} ${p.unit}`);
  const described = [p.hint ? p.id + "-hint" : "", p.error ? p.id + "-error" : ""].filter(Boolean).join(" ") || undefined;
  return (
    <div class={"field" + (p.error ? " invalid" : "")}>
      <label for={p.id + "-range"}>
        {p.label} ({p.unit})
      </label>
      <div class="slider">
        <input
          id={p.id + "-range"}
          type="range"
          min={0}
          max={p.presets.length - 1}
          step={1}
          value={idx}
          aria-valuetext={text(p.presets[idx])}
          aria-describedby={described}
          onInput={(e) => p.onValue(p.presets[Number((e.currentTarget as HTMLInputElement).value)])}
        />
        <input
          id={p.id}
          type="text"
          inputMode="decimal"
          aria-label={`${p.label}, exact value (${p.unit})`}
          value={p.value}
          placeholder="default"
          aria-invalid={p.error ? "true" : undefined}
          aria-describedby={described}
          onInput={(e) => p.onValue((e.currentTarget as HTMLInputElement).value)}
        />
      </div>
      {p.hint && <small id={p.id + "-hint"} class="hint">{p.hint}</small>}
      {p.error && <small id={p.id + "-error"} class="error" role="alert">{p.error}</small>}
    </div>
  );
}
