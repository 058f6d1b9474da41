// The base-model catalog: what this deployment can serve and train. The same list answers
// GET /v1/preview/base-models and decides which base_model a new model may use. Entries are the
// built-in tiny models (written under DATA_DIR on first use) plus BASE_MODELS from the operator:
// `name=source` or just `source`, where source is a local .gguf path or an `hf:` reference,
// optionally followed by `;train=WEIGHTS`: Hugging Face safetensors of the same model (a directory
// or `hf:<repo>`) that the trainer trains on instead of the dequantized GGUF (GPU deployments).
import { basename } from "node:path";
import { BUILT_IN_MODELS } from "../weights/index.js";

export interface BaseModelEntry {
  name: string;
  /** `builtin:<name>`, a file path, or an `hf:` reference. */
  source: string;
  /** Hugging Face weights the trainer uses instead of the GGUF, if any. */
  trainWeights?: string;
  /** Priority scheduling honours request `priority`; first-come-first-served refuses non-zero priorities. */
  scheduling: "fcfs" | "priority";
}

export class BaseModelCatalog {
  private readonly entries: Map<string, BaseModelEntry>;

  constructor(configured: readonly string[], priorityModels: readonly string[] = []) {
    const entries: BaseModelEntry[] = BUILT_IN_MODELS.map((name) => ({ name, source: `builtin:${name}`, scheduling: "fcfs" }));
    for (const item of configured) {
      const [model, ...options] = item.split(";").map((part) => part.trim());
      const eq = model!.indexOf("=");
      const [name, source] = eq > 0 ? [model!.slice(0, eq), model!.slice(eq + 1)] : [defaultName(model!), model!];
      const entry: BaseModelEntry = { name, source, scheduling: "fcfs" };
      for (const option of options) {
        const [key, value] = [option.slice(0, option.indexOf("=")), option.slice(option.indexOf("=") + 1)];
        if (key !== "train" || !value) throw new Error(`BASE_MODELS entry "${item}": unknown option "${option}" (the one option is train=<hf directory or hf:repo>)`);
        entry.trainWeights = value;
      }
      entries.push(entry);
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
