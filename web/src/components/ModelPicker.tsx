import { useState } from "preact/hooks";
import { ApiProblem, post } from "../lib/api";
import { findModel, searchModels, type ModelEntry } from "../lib/catalog";
import { Field } from "./Field";

// The model: a catalog id, alias or Hugging Face id typed with suggestions
// from the catalog (a datalist: the browser filters it as one types), and
// a Hugging Face config.json imported by upload (POST /v1/models).

interface Props {
  id: string;
  value: string;
  onValue: (v: string) => void;
  models: ModelEntry[];
  error?: string;
  /** onImported: the catalog changed (read it again). */
  onImported: () => void;
}

export function ModelPicker(p: Props) {
  const found = findModel(p.models, p.value);
  const suggestions = searchModels(p.models, p.value.includes("/") ? "" : p.value, 40);
  const list = suggestions.length ? suggestions : p.models;
  return (
    <div class="model-picker">
      <Field
        id={p.id}
        label="Model"
        type="search"
        value={p.value}
        onValue={p.onValue}
        list={p.id + "-list"}
        placeholder="search: llama 70b, qwen3, deepseek…"
        error={p.error}
        hint={found ? `${found.name ?? found.id}${found.hf_id ? " · " + found.hf_id : ""}${found.max_position_embeddings ? ` · context ${found.max_position_embeddings.toLocaleString("en-US")} tokens` : ""}` : p.models.length ? "not a catalog id: the server resolves Hugging Face ids and aliases" : undefined}
      />
      <datalist id={p.id + "-list"}>
        {list.map((m) => (
          <option key={m.id} value={m.id}>
            {m.name ?? m.id}
          </option>
        ))}
      </datalist>
      <ImportModel idPrefix={p.id} onImported={(id) => { p.onValue(id); p.onImported(); }} />
    </div>
  );
}

function ImportModel(p: { idPrefix: string; onImported: (id: string) => void }) {
  const [open, setOpen] = useState(false);
  const [id, setId] = useState("");
  const [file, setFile] = useState<File | null>(null);
  const [error, setError] = useState<{ id?: string; file?: string; general?: string }>({});
  const [busy, setBusy] = useState(false);
  const [done, setDone] = useState("");
  const fileId = p.idPrefix + "-config";
  const idId = p.idPrefix + "-import-id";
  if (!open) {
    return (
      <button type="button" class="link" onClick={() => setOpen(true)}>
        Import a Hugging Face config.json…
      </button>
    );
  }
  const submit = async () => {
    setError({});
    setDone("");
    if (!file) {
      setError({ file: "choose the model's config.json" });
      return;
    }
    setBusy(true);
    try {
      const body = await file.text();
      const q = new URLSearchParams({ id: id.trim() });
      const res = await post<{ model: { id: string } }>("models?" + q.toString(), body);
      setDone(`added ${res.model.id} to the server's catalog`);
      p.onImported(res.model.id);
    } catch (e) {
      if (e instanceof ApiProblem) {
        const f = e.errors.find((x) => x.field === "id");
        if (f) setError({ id: f.reason });
        else setError({ file: e.detail });
      } else {
        setError({ general: String(e) });
      }
    } finally {
      setBusy(false);
    }
  };
  return (
    <fieldset class="import">
      <legend>Import a model from its Hugging Face config.json</legend>
      <div class={"field" + (error.file ? " invalid" : "")}>
        <label for={fileId}>config.json</label>
        <input
          id={fileId}
          type="file"
          accept=".json,application/json"
          aria-invalid={error.file ? "true" : undefined}
          aria-describedby={error.file ? fileId + "-error" : undefined}
          onChange={(e) => {
            const f = (e.currentTarget as HTMLInputElement).files?.[0] ?? null;
            setFile(f);
            if (f && !id) setId(f.name.replace(/\.json$/i, "").replace(/^config$/i, "").toLowerCase());
          }}
        />
        {error.file && <small id={fileId + "-error"} class="error" role="alert">{error.file}</small>}
      </div>
      <Field id={idId} label="New model id" value={id} onValue={setId} placeholder="my-model" error={error.id} hint="lower case letters, digits, . _ -" />
      <button type="button" onClick={() => void submit()} disabled={busy}>
        {busy ? "Importing…" : "Import"}
      </button>
      {done && <p role="status">{done}</p>}
      {error.general && <p class="error" role="alert">{error.general}</p>}
    </fieldset>
  );
}
