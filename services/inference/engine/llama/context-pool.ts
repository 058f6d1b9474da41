// Contexts per (base model, adapter), each with several sequences for continuous batching; at most
// `maxContexts` live at once, the least recently used idle one freed first. A free sequence keeps
// its tokens so the next request sharing a prefix (same cache_salt) skips evaluating it again.
import type { LlamaContext, LlamaContextSequence, LlamaModel, Token } from "node-llama-cpp";

export interface PooledSequence {
  sequence: LlamaContextSequence;
  salt: string | null;
}

interface Pool {
  key: string;
  context: LlamaContext;
  free: PooledSequence[];
  busy: number;
  lastUsed: number;
}

export class ContextPools {
  private readonly pools = new Map<string, Pool>();
  private readonly creating = new Map<string, Promise<void>>();

  constructor(private readonly settings: { threads: number; sequences: number; contextSize: number; maxContexts: number }) {}

  /**
   * Takes `n` free sequences of the (model, adapter) context, creating or evicting contexts as
   * needed; null when they are all busy (the caller waits for a release).
   */
  async take(model: LlamaModel, modelKey: string, adapterPath: string | null, n: number, salt: string | null, prompt: readonly Token[]): Promise<{ sequences: PooledSequence[]; cached: number[] } | null> {
    const key = `${modelKey}\u0000${adapterPath ?? ""}`;
    let pool = this.pools.get(key);
    if (!pool) {
      if (!(await this.makeRoom())) return null;
      await this.create(key, model, adapterPath);
      pool = this.pools.get(key);
      if (!pool) return null;
    }
    if (pool.free.length < n) return null;
    // Prefer the sequences whose cached tokens share the longest prefix with this prompt; among
    // equals, the emptiest, so that other cached prefixes survive for their next request.
    const ranked = pool.free
      .map((item) => ({ item, shared: item.salt === salt ? item.sequence.compareContextTokens([...prompt]).firstDifferentIndex : 0 }))
      .sort((a, b) => b.shared - a.shared || a.item.sequence.nextTokenIndex - b.item.sequence.nextTokenIndex)
      .slice(0, n);
    pool.free = pool.free.filter((item) => !ranked.some((r) => r.item === item));
    pool.busy += n;
    pool.lastUsed = Date.now();
    const cached: number[] = [];
    for (const { item, shared } of ranked) {
      // Keep at least the last prompt token to evaluate: its logits give the first output token.
      const keep = Math.min(shared, prompt.length - 1);
      if (keep > 0 && item.sequence.nextTokenIndex > keep) await item.sequence.eraseContextTokenRanges([{ start: keep, end: item.sequence.nextTokenIndex }]);
      else if (keep === 0) await item.sequence.clearHistory();
      item.salt = salt;
      cached.push(keep);
    }
    return { sequences: ranked.map((r) => r.item), cached };
  }

  release(modelKey: string, adapterPath: string | null, sequences: PooledSequence[]): void {
    const pool = this.pools.get(`${modelKey}\u0000${adapterPath ?? ""}`);
    if (!pool) return;
    pool.busy -= sequences.length;
    pool.free.push(...sequences);
    pool.lastUsed = Date.now();
  }

  private async create(key: string, model: LlamaModel, adapterPath: string | null): Promise<void> {
    const existing = this.creating.get(key);
    if (existing) return existing;
    const creation = (async () => {
      const context = await model.createContext({
        sequences: this.settings.sequences,
        contextSize: this.settings.contextSize,
        threads: this.settings.threads,
        ...(adapterPath ? { lora: { adapters: [{ filePath: adapterPath, scale: 1 }] } } : {}),
      });
      const free: PooledSequence[] = [];
      while (context.sequencesLeft > 0) free.push({ sequence: context.getSequence(), salt: null });
      this.pools.set(key, { key, context, free, busy: 0, lastUsed: Date.now() });
    })();
    this.creating.set(key, creation);
    try {
      await creation;
    } finally {
      this.creating.delete(key);
    }
  }

  /** Frees the least recently used idle context when at the limit; false if every context is busy. */
  private async makeRoom(): Promise<boolean> {
    if (this.pools.size + this.creating.size < this.settings.maxContexts) return true;
    const idle = [...this.pools.values()].filter((p) => p.busy === 0).sort((a, b) => a.lastUsed - b.lastUsed)[0];
    if (!idle) return false;
    this.pools.delete(idle.key);
    await idle.context.dispose();
    return true;
  }

  /** Contexts of a model, to free them before the model itself is unloaded. */
  async disposeAll(): Promise<void> {
    for (const pool of this.pools.values()) await pool.context.dispose();
    this.pools.clear();
  }
}
