// The base-model catalog: what this deployment can serve and train. The same list answers
// GET /v1/preview/base-models and decides which base_model a new model may use. Entries are the
// built-in tiny models (written under DATA_DIR on first use) plus BASE_MODELS from the operator:
// `name=source` or just `source`, where source is a local .gguf path or an `hf:` reference.
import { basename } from "node:path";
import { BUILT_IN_MODELS } from "../weights/tiny-model.js";

export interface BaseModelEntry {
  name: string;
  /** `builtin:<name>`, a file path, or an `hf:` reference. */
  source: string;
  /** Priority scheduling honours request `priority`; first-come-first-served refuses non-zero priorities. */
  scheduling: "fcfs" | "priority";
}

export class BaseModelCatalog {
  private readonly entries: Map<string, BaseModelEntry>;

  constructor(configured: readonly string[], priorityModels: readonly string[] = []) {
    const entries: BaseModelEntry[] = BUILT_IN_MODELS.map((name) => ({ name, source: `builtin:${name}`, scheduling: "fcfs" }));
    for (const item of configured) {
      const [name, source] = item.includes("=") ? (item.split("=", 2) as [string, string]) : [defaultName(item), item];
      entries.push({ name, source, scheduling: "fcfs" });
    }
    for (const entry of entries) if (priorityModels.includes(entry.name)) entry.scheduling = "priority";
    this.entries = new Map(entries.map((e) => [e.name, e]));
  }

  names(): string[] {
    return [...this.entries.keys()];
  }

  has(name: string): boolean {
    return this.entries.has(name);
  }

  get(name: string): BaseModelEntry | undefined {
    return this.entries.get(name);
  }
}

function defaultName(source: string): string {
  if (source.startsWith("hf:")) return source.slice(3).replace(/\.gguf$/i, "");
  return basename(source).replace(/\.gguf$/i, "");
}
