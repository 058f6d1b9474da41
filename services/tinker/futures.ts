// Futures: every mutating Tinker call answers a request id at once; the work runs behind it and
// its result (or error) is stored here, so a restart of the gateway loses nothing finished. A
// result of the SDK's protobuf types (ForwardBackwardOutput, SampleResponse) is kept in that
// encoding; others as JSON. Large results go to the blob store. Results expire (then 410).
import { randomUUID } from "node:crypto";
import type { JsonObject } from "@bufbuild/protobuf";
import { Binary, type Collection, type Db } from "mongodb";
import { notFound } from "../core/errors.js";
import { type BlobReferences, type BlobStore, readBlob } from "../store/index.js";

export type FutureKind = "create_model" | "forward_backward" | "optim_step" | "save_weights" | "load_weights" | "save_weights_for_sampler" | "save_weights_external" | "unload_model" | "sample";
export type FutureState = "pending" | "running" | "done" | "failed" | "cancelled" | "expired";
export type FailureCategory = "user" | "server" | "unknown";

export interface FutureRecord {
  _id: string;
  entity: string;
  kind: FutureKind;
  model_id: string | null;
  seq_id: number | null;
  state: FutureState;
  result_json?: JsonObject | null;
  result_bytes?: Binary | null;
  result_blob?: string | null;
  error?: string | null;
  category?: FailureCategory | null;
  created_at: Date;
  finished_at?: Date | null;
  expires_at?: Date | null;
}

/** A finished future's result as stored: JSON, or the bytes of a protobuf message. */
export type FutureResult = { json: JsonObject } | { bytes: Uint8Array };

/** Results past this size go to the blob store rather than the future's document. */
const INLINE_RESULT_BYTES = 1 << 20;

export class Futures implements BlobReferences {
  private readonly futures: Collection<FutureRecord>;
  /** Waiters of this process, woken when a future of theirs ends. */
  private readonly waiters = new Map<string, Set<() => void>>();

  constructor(
    db: Db,
    private readonly blobs: BlobStore,
    private readonly ttlMs: number,
  ) {
    this.futures = db.collection<FutureRecord>("tinker_futures");
  }

  async ensureIndexes(): Promise<void> {
    await this.futures.createIndex({ state: 1, expires_at: 1 });
    await this.futures.createIndex({ result_blob: 1 });
    await this.futures.createIndex({ model_id: 1, seq_id: -1 });
  }

  async create(entity: string, kind: FutureKind, modelId: string | null, seqId: number | null): Promise<FutureRecord> {
    const record: FutureRecord = { _id: `request-${randomUUID()}`, entity, kind, model_id: modelId, seq_id: seqId, state: "pending", created_at: new Date() };
    await this.futures.insertOne(record);
    return record;
  }

  /** The highest seq_id among a training client's futures (0: none). */
  async highestSeq(modelId: string): Promise<number> {
    const top = await this.futures.findOne({ model_id: modelId, seq_id: { $ne: null } }, { sort: { seq_id: -1 }, projection: { seq_id: 1 } });
    return top?.seq_id ?? 0;
  }

  async markRunning(id: string): Promise<boolean> {
    const updated = await this.futures.updateOne({ _id: id, state: "pending" }, { $set: { state: "running" } });
    return updated.modifiedCount === 1;
  }

  async complete(id: string, result: FutureResult): Promise<void> {
    const now = new Date();
    const fields: Partial<FutureRecord> = { state: "done", finished_at: now, expires_at: new Date(now.getTime() + this.ttlMs) };
    if ("json" in result) fields.result_json = result.json;
    else if (result.bytes.byteLength <= INLINE_RESULT_BYTES) fields.result_bytes = new Binary(result.bytes);
    else fields.result_blob = (await this.blobs.write(result.bytes, { maxBytes: result.bytes.byteLength })).sha256;
    await this.futures.updateOne({ _id: id, state: { $in: ["pending", "running"] } }, { $set: fields });
    this.wake(id);
  }

  async fail(id: string, error: string, category: FailureCategory): Promise<void> {
    const now = new Date();
    await this.futures.updateOne({ _id: id, state: { $in: ["pending", "running"] } }, { $set: { state: "failed", error, category, finished_at: now, expires_at: new Date(now.getTime() + this.ttlMs) } });
    this.wake(id);
  }

  /** Cancels a future that has not started; one running already finishes. */
  async cancel(entity: string, id: string): Promise<boolean> {
    const now = new Date();
    const updated = await this.futures.updateOne(
      { _id: id, entity, state: "pending" },
      { $set: { state: "cancelled", error: "cancelled by the client", category: "user", finished_at: now, expires_at: new Date(now.getTime() + this.ttlMs) } },
    );
    if (updated.modifiedCount === 1) this.wake(id);
    return updated.modifiedCount === 1;
  }

  async getOwned(entity: string, id: string): Promise<FutureRecord> {
    const record = await this.futures.findOne({ _id: id });
    if (!record || record.entity !== entity) throw notFound(`The request \`${id}\` does not exist.`);
    return record;
  }

  /** The future once it has ended, or as it is after `waitMs` (a long poll: the SDK retries at once). */
  async settled(entity: string, id: string, waitMs: number, signal: AbortSignal): Promise<FutureRecord> {
    const endsAt = Date.now() + waitMs;
    for (;;) {
      const record = await this.getOwned(entity, id);
      const left = endsAt - Date.now();
      if (record.state !== "pending" && record.state !== "running") return record;
      if (left <= 0 || signal.aborted) return record;
      // Woken by this process's worker, else re-read now and then (another process may run it).
      await this.nextWake(id, Math.min(left, 1_000), signal);
    }
  }

  async resultOf(record: FutureRecord): Promise<FutureResult | null> {
    if (record.result_json) return { json: record.result_json };
    if (record.result_bytes) return { bytes: record.result_bytes.buffer };
    if (record.result_blob) {
      const bytes = await readBlob(this.blobs, record.result_blob).catch(() => null);
      return bytes ? { bytes } : null;
    }
    return null;
  }

  /**
   * At start-up: futures this process was running when it stopped cannot finish any more (their
   * work died with it); they fail with a message saying so.
   */
  async failInterrupted(): Promise<number> {
    const now = new Date();
    const updated = await this.futures.updateMany(
      { state: { $in: ["pending", "running"] } },
      { $set: { state: "failed", error: "the service restarted before this request finished; a training client's live state may be lost: load_state from your last save_state", category: "server", finished_at: now, expires_at: new Date(now.getTime() + this.ttlMs) } },
    );
    return updated.modifiedCount;
  }

  /** Drops the results of futures past their expiry (kept as `expired`: a retrieve answers 410). */
  async expire(now = new Date()): Promise<number> {
    const updated = await this.futures.updateMany(
      { state: { $in: ["done", "failed", "cancelled"] }, expires_at: { $lte: now } },
      { $set: { state: "expired", result_json: null, result_bytes: null, result_blob: null } },
    );
    return updated.modifiedCount;
  }

  async referencedBlobs(names: readonly string[]): Promise<Set<string>> {
    const found = await this.futures.find({ result_blob: { $in: [...names] } }, { projection: { result_blob: 1 } }).toArray();
    return new Set(found.map((f) => f.result_blob).filter((name): name is string => typeof name === "string"));
  }

  private wake(id: string): void {
    const set = this.waiters.get(id);
    if (!set) return;
    this.waiters.delete(id);
    for (const resolve of set) resolve();
  }

  private nextWake(id: string, ms: number, signal: AbortSignal): Promise<void> {
    return new Promise((resolve) => {
      const set = this.waiters.get(id) ?? new Set<() => void>();
      const done = () => {
        clearTimeout(timer);
        signal.removeEventListener("abort", done);
        set.delete(done);
        if (set.size === 0 && this.waiters.get(id) === set) this.waiters.delete(id);
        resolve();
      };
      const timer = setTimeout(done, ms);
      signal.addEventListener("abort", done, { once: true });
      set.add(done);
      this.waiters.set(id, set);
    });
  }
}
