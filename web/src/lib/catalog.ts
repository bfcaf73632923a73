// The catalogs the pages offer (GET /v1/models, GET /v1/gpus), read once
// and again after a model is imported.

import { get } from "./api";

export interface ModelEntry {
  id: string;
  name?: string;
  hf_id?: string;
  aliases?: string[];
  architecture?: string;
  max_position_embeddings?: number;
  num_hidden_layers?: number;
  hidden_size?: number;
}

export interface GPUEntry {
  id: string;
  name: string;
  vendor?: string;
  aliases?: string[];
  memory_gb?: number;
  hbm_bandwidth_gbps?: number;
  price_per_gpu_hour_usd?: number;
  max_gpus_per_node?: number;
}

export interface Catalog {
  models: ModelEntry[];
  gpus: GPUEntry[];
}

let cached: Promise<Catalog> | undefined;

/** catalog reads both catalogs (once; fresh=true reads them again). */
export function catalog(fresh = false): Promise<Catalog> {
  if (!cached || fresh) {
    const p = Promise.all([get<ModelEntry[]>("models"), get<GPUEntry[]>("gpus")]).then(([models, gpus]) => ({ models, gpus }));
    cached = p;
    p.catch(() => {
      if (cached === p) cached = undefined; // try again next time (a token given, say)
    });
  }
  return cached;
}

/** findModel finds a model by id, Hugging Face id or alias (any case). */
export function findModel(models: readonly ModelEntry[], name: string): ModelEntry | undefined {
  const n = name.trim().toLowerCase();
  if (!n) return undefined;
  return models.find((m) => m.id.toLowerCase() === n || m.hf_id?.toLowerCase() === n || m.aliases?.some((a) => a.toLowerCase() === n));
}

/** searchModels ranks the models whose id, name or Hugging Face id contains every word of the query. */
export function searchModels(models: readonly ModelEntry[], query: string, limit = 12): ModelEntry[] {
  const words = query.toLowerCase().split(/\s+/).filter(Boolean);
  const hay = (m: ModelEntry) => [m.id, m.name ?? "", m.hf_id ?? "", ...(m.aliases ?? [])].join(" ").toLowerCase();
  const hits = models.filter((m) => words.every((w) => hay(m).includes(w)));
  const score = (m: ModelEntry) => (m.id.toLowerCase().startsWith(words[0] ?? "") ? 0 : 1);
  return hits.sort((a, b) => score(a) - score(b) || a.id.localeCompare(b.id)).slice(0, limit);
}
