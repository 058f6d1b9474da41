// Contexts per (base model, adapter), each with several sequences for continuous batching. At most
// `maxContexts` live at once and their estimated memory (KV caches, compute buffers, the adapter)
// stays within `contextMemoryBytes`: the least recently used idle context is freed to make room. A
// free sequence keeps its tokens so the next request sharing a prefix (same cache_salt) skips
// evaluating it again. Each context has the base model's own size per sequence (context-size.ts).
import { stat } from "node:fs/promises";
import type { LlamaContext, LlamaContextSequence, LlamaModel, Token } from "node-llama-cpp";
import type { Logger } from "../../../core/logger.js";
import type { PoolUsage } from "../protocol.js";
import { estimateContextBytes, type ContextSizes } from "./context-size.js";
import { EngineRequestError } from "./errors.js";
import { chooseSequences } from "./sequence-choice.js";
import { chooseThreadsPerBatch, singleTokenStepsTakeFewer, threadsFor } from "./threads.js";

export interface PooledSequence {
  sequence: LlamaContextSequence;
  /** llama.cpp's id of the sequence (getSequence hands a new context's sequences out in id order). */
  id: number;
  salt: string | null;
}

/** Sequences taken for one request: `cached` prompt tokens each already holds, once `prepared`. */
export interface Lease {
  sequences: PooledSequence[];
  cached: number[];
  prepared: Promise<void>;
}

interface Pool {
  key: string;
  context: LlamaContext;
  all: PooledSequence[];
  free: PooledSequence[];
  lastUsed: number;
  bytes: number;
  /** KV cells per sequence (the context size per sequence). */
  cellsPerSequence: number;
}

const MB = 2 ** 20;

export class ContextPools {
  private readonly pools = new Map<string, Pool>();
  private readonly creating = new Map<string, Promise<void>>();
  /** Estimated bytes of the contexts being created (counted before they exist). */
  private reserved = 0;

  constructor(
    private readonly settings: { threads: number; sequences: number; maxContexts: number; contextMemoryBytes: number },
    private readonly log: Logger,
    private readonly sizes: ContextSizes,
  ) {}

  /**
   * Takes `n` free sequences of the (model, adapter) context, creating or evicting contexts as
   * needed; null when they are all busy (the caller waits for a release).
   */
  async take(model: LlamaModel, modelKey: string, adapterPath: string | null, n: number, salt: string | null, prompt: readonly Token[]): Promise<Lease | null> {
    const key = `${modelKey}\u0000${adapterPath ?? ""}`;
    let pool = this.pools.get(key);
    if (!pool) {
      if (!this.creating.has(key)) {
        const contextSize = await this.sizes.of(modelKey, model.fileInsights);
        const bytes = await this.estimate(model, adapterPath, contextSize);
        if (bytes > this.settings.contextMemoryBytes) {
          throw new EngineRequestError(
            "unavailable",
            `a context of ${modelKey} needs about ${Math.ceil(bytes / MB)} MB, more than the ${Math.floor(this.settings.contextMemoryBytes / MB)} MB allowed for contexts (ENGINE_CONTEXT_MEMORY_MB; or lower ENGINE_CONTEXT_SIZE / ENGINE_SEQUENCES)`,
          );
        }
        if (!(await this.makeRoom(bytes))) return null;
        await this.create(key, model, adapterPath, bytes, contextSize);
      } else await this.creating.get(key);
      pool = this.pools.get(key);
      if (!pool) return null;
    }
    if (pool.free.length < n) return null;
    // The cached prefix each free sequence shares with this prompt, weighed against keeping the
    // busy sequences consecutive (sequence-choice.ts).
    const busy = new Set(pool.all.filter((item) => !pool.free.includes(item)).map((item) => item.id));
    const promptTokens = [...prompt];
    const candidates = pool.free.map((item) => ({
      item,
      id: item.id,
      shared: item.salt === salt ? item.sequence.compareContextTokens(promptTokens).firstDifferentIndex : 0,
      held: item.sequence.nextTokenIndex,
    }));
    const ranked = chooseSequences(candidates, busy, n);
    pool.free = pool.free.filter((item) => !ranked.some((r) => r.item === item));
    pool.lastUsed = Date.now();
    const cached: number[] = [];
    const erasures: Promise<void>[] = [];
    for (const { item, shared } of ranked) {
      // Keep at least the last prompt token to evaluate: its logits give the first output token.
      const keep = Math.min(shared, prompt.length - 1);
      const end = item.sequence.nextTokenIndex;
      if (keep > 0 && end > keep) erasures.push(item.sequence.eraseContextTokenRanges([{ start: keep, end }]));
      else if (keep === 0 && end > 0) erasures.push(item.sequence.clearHistory());
      item.salt = salt;
      cached.push(keep);
    }
    // Erasing waits for the context between two batches; the admission of the next request does
    // not wait for it (the caller awaits `prepared` before evaluating, and sees a failure there;
    // marked handled here so a failure before that await cannot end the process).
    const prepared = Promise.all(erasures).then(() => undefined);
    prepared.catch(() => undefined);
    return { sequences: ranked.map((r) => r.item), cached, prepared };
  }

  release(modelKey: string, adapterPath: string | null, sequences: PooledSequence[]): void {
    const pool = this.pools.get(`${modelKey}\u0000${adapterPath ?? ""}`);
    if (!pool) return;
    pool.free.push(...sequences);
    pool.lastUsed = Date.now();
  }

  /** `bytes` were reserved by makeRoom; they move to the pool, or are given back on failure. */
  private async create(key: string, model: LlamaModel, adapterPath: string | null, bytes: number, contextSize: number): Promise<void> {
    const creation = (async () => {
      // node-llama-cpp's contextSize is per sequence: llama.cpp gets contextSize x sequences cells.
      const threads = threadsFor(this.settings.threads, model.llama.cpuMathCores, model.size);
      const context = await model.createContext({
        sequences: this.settings.sequences,
        contextSize,
        threads,
        ...(adapterPath ? { lora: { adapters: [{ filePath: adapterPath, scale: 1 }] } } : {}),
      });
      if (singleTokenStepsTakeFewer(this.settings.threads, model.llama.cpuMathCores)) chooseThreadsPerBatch(context);
      const all: PooledSequence[] = [];
      while (context.sequencesLeft > 0) all.push({ sequence: context.getSequence(), id: all.length, salt: null });
      this.pools.set(key, { key, context, all, free: [...all], lastUsed: Date.now(), bytes, cellsPerSequence: contextSize });
      this.log.info("context created", { context: describe(key), context_size: contextSize, threads, estimated_mb: round(bytes / MB), contexts: this.pools.size, used_mb: round(this.usedBytes() / MB) });
    })();
    this.creating.set(key, creation);
    try {
      await creation;
    } finally {
      this.creating.delete(key);
      this.reserved -= bytes;
    }
  }

  /**
   * Frees least recently used idle contexts until one more context of `bytes` fits under both
   * limits, and reserves its bytes; false if the busy ones leave no room (the request waits).
   * Check and reservation happen with no await in between, so concurrent callers cannot both
   * take the last room.
   */
  private async makeRoom(bytes: number): Promise<boolean> {
    for (;;) {
      const fits = this.pools.size + this.creating.size < this.settings.maxContexts && this.usedBytes() + this.reserved + bytes <= this.settings.contextMemoryBytes;
      if (fits) {
        this.reserved += bytes;
        return true;
      }
      const idle = [...this.pools.values()].filter((p) => p.free.length === p.all.length).sort((a, b) => a.lastUsed - b.lastUsed)[0];
      if (!idle) return false;
      this.pools.delete(idle.key);
      this.log.info("context freed", { context: describe(idle.key), reason: "least recently used, to make room", freed_mb: round(idle.bytes / MB) });
      await idle.context.dispose();
    }
  }

  private usedBytes(): number {
    let total = 0;
    for (const pool of this.pools.values()) total += pool.bytes;
    return total;
  }

  /** llama.cpp's own estimate of the context (node-llama-cpp's insights) plus the adapter's size. */
  private async estimate(model: LlamaModel, adapterPath: string | null, contextSize: number): Promise<number> {
    const context = await estimateContextBytes(model.fileInsights, contextSize, this.settings.sequences);
    const adapter = adapterPath ? (await stat(adapterPath)).size : 0;
    return context + adapter;
  }

  /** What the loaded contexts hold, for /metrics: a free sequence's cached tokens count as free cells (vLLM counts its prefix cache so). */
  usage(): PoolUsage[] {
    return [...this.pools.values()].map((pool) => {
      const busy = pool.all.filter((item) => !pool.free.includes(item));
      return {
        model: pool.key.split("\u0000")[0] ?? pool.key,
        adapter: !pool.key.endsWith("\u0000"),
        sequences: pool.all.length,
        sequencesInUse: busy.length,
        cells: pool.all.length * pool.cellsPerSequence,
        cellsInUse: busy.reduce((sum, item) => sum + item.sequence.nextTokenIndex, 0),
      };
    });
  }

  /** Contexts of a model, to free them before the model itself is unloaded. */
  async disposeAll(): Promise<void> {
    for (const pool of this.pools.values()) await pool.context.dispose();
    this.pools.clear();
  }
}

function describe(key: string): string {
  const [model, adapter] = key.split("\u0000");
  return adapter ? `${model} + ${adapter.split("/").at(-1)}` : (model ?? key);
}

function round(value: number): number {
  return Math.round(value * 10) / 10;
}
