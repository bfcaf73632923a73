import type { ComponentChildren, JSX } from "preact";

// A labelled control with its unit and the server's reason when it refused
// the value (aria-invalid, described by the message, so that screen readers
// read it with the control).

interface FieldProps {
  id: string;
  label: string;
  /** The unit after the control ("ms", "req/s"). */
  unit?: string;
  hint?: string;
  error?: string;
  value: string;
  onValue: (v: string) => void;
  type?: "text" | "number" | "search";
  inputMode?: "decimal" | "numeric" | "text";
  placeholder?: string;
  list?: string;
  step?: string;
  min?: string;
  max?: string;
  disabled?: boolean;
  autoComplete?: string;
}

export function Field(p: FieldProps) {
  const describedBy = [p.hint ? p.id + "-hint" : "", p.error ? p.id + "-error" : ""].filter(Boolean).join(" ") || undefined;
  return (
    <div class={"field" + (p.error ? " invalid" : "")}>
      <label for={p.id}>{p.label}</label>
      <span class="control">
        <input
          id={p.id}
          name={p.id}
          type={p.type ?? "text"}
          inputMode={p.inputMode}
          value={p.value}
          placeholder={p.placeholder}
          list={p.list}
          step={p.step}
          min={p.min}
          max={p.max}
          disabled={p.disabled}
          autoComplete={p.autoComplete ?? "off"}
          aria-invalid={p.error ? "true" : undefined}
          aria-describedby={describedBy}
          onInput={(e) => p.onValue((e.currentTarget as HTMLInputElement).value)}
        />
        {p.unit && <span class="unit" aria-hidden="true">{p.unit}</span>}
      </span>
      {p.hint && <small id={p.id + "-hint"} class="hint">{p.hint}</small>}
      {p.error && <small id={p.id + "-error"} class="error" role="alert">{p.error}</small>}
    </div>
  );
}

/** NumberField is a Field for a number with a unit (the unit is also in the accessible name). */
export function NumberField(p: Omit<FieldProps, "type" | "inputMode"> & { integer?: boolean }) {
  const label = p.unit ? `${p.label} (${p.unit})` : p.label;
  return <Field {...p} label={label} unit={undefined} type="text" inputMode={p.integer ? "numeric" : "decimal"} />;
}

interface CheckProps {
  id: string;
  label: string;
  checked: boolean;
  onChecked: (v: boolean) => void;
  error?: string;
  hint?: string;
}

export function Check(p: CheckProps) {
  return (
    <div class={"field check" + (p.error ? " invalid" : "")}>
      <input
        id={p.id}
        type="checkbox"
        checked={p.checked}
        aria-invalid={p.error ? "true" : undefined}
        aria-describedby={p.error ? p.id + "-error" : p.hint ? p.id + "-hint" : undefined}
        onChange={(e) => p.onChecked((e.currentTarget as HTMLInputElement).checked)}
      />
      <label for={p.id}>{p.label}</label>
      {p.hint && <small id={p.id + "-hint"} class="hint">{p.hint}</small>}
      {p.error && <small id={p.id + "-error"} class="error" role="alert">{p.error}</small>}
    </div>
  );
}

interface SelectProps {
  id: string;
  label: string;
  value: string;
  onValue: (v: string) => void;
  options: ReadonlyArray<readonly [string, string]>;
  error?: string;
}

export function Select(p: SelectProps) {
  return (
    <div class={"field" + (p.error ? " invalid" : "")}>
      <label for={p.id}>{p.label}</label>
      <select
        id={p.id}
        value={p.value}
        aria-invalid={p.error ? "true" : undefined}
        aria-describedby={p.error ? p.id + "-error" : undefined}
        onChange={(e) => p.onValue((e.currentTarget as HTMLSelectElement).value)}
      >
        {p.options.map(([v, text]) => (
          <option value={v} key={v}>
            {text}
          </option>
        ))}
      </select>
      {p.error && <small id={p.id + "-error"} class="error" role="alert">{p.error}</small>}
    </div>
  );
}

interface GroupProps {
  id: string;
  legend: string;
  error?: string;
  children: ComponentChildren;
  class?: string;
}

/** Group is a fieldset whose error covers all its controls (a list of GPUs). */
export function Group(p: GroupProps) {
  return (
    <fieldset id={p.id} class={(p.class ?? "") + (p.error ? " invalid" : "")} aria-describedby={p.error ? p.id + "-error" : undefined}>
      <legend>{p.legend}</legend>
      {p.children}
      {p.error && <small id={p.id + "-error"} class="error" role="alert">{p.error}</small>}
    </fieldset>
  );
}

/** Alert lists the problems that name no control. */
export function Alert(p: { messages: string[] }): JSX.Element | null {
  if (p.messages.length === 0) return null;
  return (
    <div class="alert" role="alert">
      {p.messages.map((m) => (
        <p key={m}>{m}</p>
      ))}
    </div>
  );
}
