// Each base model's context per sequence: the length the model was trained on (its GGUF's
// `<arch>.context_length`), capped by ENGINE_CONTEXT_SIZE when that is set, and by the memory
// budget for contexts (a context of all its sequences must fit in it). One value per base model,
// computed once: the prompt check, max_tokens, the context the pool creates and what describe
// tells the gateway all use it.
import type { GgufInsights } from "node-llama-cpp";
import type { EngineSettings } from "../protocol.js";

/** llama.cpp pads contexts to 256 cells, so sizes are searched in those steps. */
const STEP = 256;
/** Below this the memory cap does not shrink a context: the pool refuses it with a clear error instead. */
export const CONTEXT_SIZE_FLOOR = 512;
/** For a GGUF that does not say its trained context length (today's old default). */
const UNKNOWN_TRAINED_LENGTH = 2048;

type SizeSettings = Pick<EngineSettings, "contextSize" | "sequences" | "contextMemoryBytes">;

/** llama.cpp's estimate (node-llama-cpp's insights) of a CPU context's memory: KV caches and compute buffers. */
export async function estimateContextBytes(insights: GgufInsights, contextSize: number, sequences: number): Promise<number> {
  const estimate = await insights.estimateContextResourceRequirementsV2({ contextSize, sequences, modelGpuLayers: 0 });
  return estimate.cpuRam + estimate.gpuVram;
}

/** The context per sequence for a model described by `insights` under `settings`. */
export async function fitContextSize(insights: GgufInsights, settings: SizeSettings): Promise<number> {
  const trained = insights.trainContextSize ?? UNKNOWN_TRAINED_LENGTH;
  const limit = settings.contextSize > 0 ? Math.min(trained, settings.contextSize) : trained;
  const fits = async (size: number) => (await estimateContextBytes(insights, size, settings.sequences)) <= settings.contextMemoryBytes;
  if (limit <= CONTEXT_SIZE_FLOOR || (await fits(limit))) return limit;
  // Binary search over multiples of STEP in [floor, limit): the largest that fits, else the floor.
  let low = Math.ceil(CONTEXT_SIZE_FLOOR / STEP);
  let high = Math.ceil(limit / STEP) - 1;
  let best = CONTEXT_SIZE_FLOOR;
  while (low <= high) {
    const middle = Math.floor((low + high) / 2);
    if (await fits(middle * STEP)) {
      best = middle * STEP;
      low = middle + 1;
    } else high = middle - 1;
  }
  return best;
}

/** Sizes per base model name, computed once so that describe and generation always agree. */
export class ContextSizes {
  private readonly sizes = new Map<string, Promise<number>>();

  constructor(private readonly settings: SizeSettings) {}

  /** The size already computed (or being computed) for a base model, if any. */
  known(name: string): Promise<number> | undefined {
    return this.sizes.get(name);
  }

  of(name: string, insights: GgufInsights): Promise<number> {
    let size = this.sizes.get(name);
    if (!size) {
      size = fitContextSize(insights, this.settings);
      this.sizes.set(name, size);
      // A failed estimate is not remembered: the next request tries again.
      size.catch(() => this.sizes.delete(name));
    }
    return size;
  }
}
