// Whether the trainer can train a base model, known before any job runs: from the GGUF's header
// (its architecture), so registering a model or creating a job on a base the trainer cannot train
// is a 400 naming why, not a job that fails later. The trainer remains the judge at job start
// (services/training/torch_trainer: it also checks every tensor type can be dequantized); its
// list of architectures and this one are compared by a test (training/trainer/run-training-job.test.ts).
import { stat } from "node:fs/promises";
import { getNumber, getString, readGgufHeader } from "../weights/index.js";
import type { BaseModelCatalog, BaseModelEntry } from "./catalog.js";

/** GGUF `general.architecture` values the trainer loads (transformers) and exports LoRA for. */
export const TRAINABLE_ARCHITECTURES = ["gemma2", "gemma3", "llama", "phi3", "qwen2", "qwen3"] as const;

/** Not quantized: the trainer computes on exactly these weights. */
const FLOAT_TYPES = new Set(["F32", "F16", "BF16", "F64"]);

export interface BaseModelFacts {
  name: string;
  /** null: not known yet (an hf: model not downloaded yet; checked when its first job starts). */
  trainable: boolean | null;
  /** Why not, or why unknown. */
  note: string | null;
  architecture: string | null;
  /** Weight matrices quantized (the engine's log-probs then differ from the trainer's). */
  quantized: boolean | null;
  contextLength: number | null;
  /** The unembedding is the token embedding itself (no `output.weight`): llama.cpp cannot serve a LoRA on it. */
  tiedEmbeddings: boolean | null;
}

export class Trainability {
  private readonly cache = new Map<string, { key: string; facts: Promise<BaseModelFacts> }>();

  constructor(
    private readonly catalog: BaseModelCatalog,
    /** The base model's GGUF when it is on this machine already (never downloads). */
    private readonly localPath: (entry: BaseModelEntry) => Promise<string | null>,
  ) {}

  async of(name: string): Promise<BaseModelFacts | null> {
    const entry = this.catalog.get(name);
    if (!entry) return null;
    const path = await this.localPath(entry);
    const key = path ? `${path}:${(await stat(path).catch(() => null))?.mtimeMs ?? 0}` : "";
    const cached = this.cache.get(name);
    if (cached && cached.key === key) return cached.facts;
    const facts = path ? inspect(entry.name, path) : Promise.resolve(unknown(entry.name, `${entry.source} is not downloaded yet; it is checked when its first job starts`));
    this.cache.set(name, { key, facts });
    return facts;
  }

  /** The reason a model on this base cannot be trained, or null (trainable or not known yet). */
  async refusal(name: string): Promise<string | null> {
    const facts = await this.of(name);
    return facts && facts.trainable === false ? `base model "${name}" cannot be trained: ${facts.note}` : null;
  }
}

async function inspect(name: string, path: string): Promise<BaseModelFacts> {
  try {
    const header = await readGgufHeader(path);
    const architecture = getString(header.metadata, "general.architecture") ?? null;
    const matrices = header.tensors.filter((t) => t.dims.length >= 2).map((t) => t.type);
    const supported = architecture !== null && (TRAINABLE_ARCHITECTURES as readonly string[]).includes(architecture);
    return {
      name,
      trainable: supported,
      note: supported ? null : `its architecture "${architecture}" is not one the trainer supports (${TRAINABLE_ARCHITECTURES.join(", ")})`,
      architecture,
      quantized: matrices.some((t) => !FLOAT_TYPES.has(t)),
      contextLength: (architecture && getNumber(header.metadata, `${architecture}.context_length`)) || null,
      tiedEmbeddings: !header.tensors.some((t) => t.name === "output.weight"),
    };
  } catch (error) {
    return { ...unknown(name, `its GGUF could not be read: ${error instanceof Error ? error.message : String(error)}`), trainable: false };
  }
}

function unknown(name: string, note: string): BaseModelFacts {
  return { name, trainable: null, note, architecture: null, quantized: null, contextLength: null, tiedEmbeddings: null };
}
