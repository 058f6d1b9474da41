// Checkpoints: one per (model, step); step 0 is the base model (no adapter). The trainer adds one
// per finished job through createCheckpoint; adapters are GridFS blobs written before the row, so
// a listed checkpoint always has its adapter.
import { randomUUID } from "node:crypto";
import { MongoServerError, type Collection, type Db, type ObjectId } from "mongodb";
import { conflict } from "../core/errors.js";
import type { Blobs } from "../store/blobs.js";
import { paginate, type Page } from "../store/pagination.js";
import { fieldKey } from "./runs.js";

export interface CheckpointRecord {
  _id: string;
  model_id: string;
  step: number;
  metrics: Record<string, number>;
  adapter_blob_id: ObjectId | null;
  /** The training job that produced it (none for step 0), so a retried job never adds a second one. */
  job_id?: string | null;
  created_at: Date;
}

export class Checkpoints {
  private readonly checkpoints: Collection<CheckpointRecord>;

  constructor(
    db: Db,
    private readonly blobs: Blobs,
  ) {
    this.checkpoints = db.collection<CheckpointRecord>("checkpoints");
  }

  async ensureIndexes(): Promise<void> {
    await this.checkpoints.createIndex({ model_id: 1, step: 1 }, { unique: true });
  }

  /** Adds a checkpoint; a step that exists already is a conflict (and the new adapter is removed). */
  async create(modelId: string, step: number, metrics: Record<string, number>, adapter?: { filename: string; data: Uint8Array }, jobId?: string): Promise<CheckpointRecord> {
    const blobId = adapter ? await this.blobs.put(adapter.filename, adapter.data, { model_id: modelId, kind: "adapter", step }) : null;
    const record: CheckpointRecord = { _id: randomUUID(), model_id: modelId, step, metrics: sanitize(metrics), adapter_blob_id: blobId, job_id: jobId ?? null, created_at: new Date() };
    try {
      await this.checkpoints.insertOne(record);
    } catch (error) {
      if (blobId) await this.blobs.delete(blobId);
      if (error instanceof MongoServerError && error.code === 11000) throw conflict(`model ${modelId} already has a checkpoint at step ${step}`);
      throw error;
    }
    return record;
  }

  /** The base-model checkpoint every model starts with (idempotent). */
  async ensureStepZero(modelId: string): Promise<void> {
    await this.checkpoints
      .updateOne(
        { model_id: modelId, step: 0 },
        { $setOnInsert: { _id: randomUUID(), model_id: modelId, step: 0, metrics: {}, adapter_blob_id: null, created_at: new Date() } },
        { upsert: true },
      )
      .catch((error: unknown) => {
        // Two concurrent upserts: the other one created it.
        if (!(error instanceof MongoServerError && error.code === 11000)) throw error;
      });
  }

  async ofJob(modelId: string, jobId: string): Promise<CheckpointRecord | null> {
    return this.checkpoints.findOne({ model_id: modelId, job_id: jobId });
  }

  async latest(modelId: string): Promise<CheckpointRecord | null> {
    return this.checkpoints.findOne({ model_id: modelId }, { sort: { step: -1 } });
  }

  async atStep(modelId: string, step: number): Promise<CheckpointRecord | null> {
    return this.checkpoints.findOne({ model_id: modelId, step });
  }

  /** A checkpoint's adapter file (null at step 0 and for checkpoints without one). */
  async openAdapter(checkpoint: CheckpointRecord): Promise<{ size: number; chunks: AsyncIterable<Buffer> } | null> {
    return checkpoint.adapter_blob_id ? this.blobs.open(checkpoint.adapter_blob_id) : null;
  }

  async list(modelId: string, options: { after?: string; limit: number; order: "asc" | "desc" }): Promise<Page<CheckpointRecord>> {
    return paginate(this.checkpoints, { filter: { model_id: modelId }, orderField: "step", orderIsUnique: true, what: "checkpoint", ...options });
  }

  async mergeMetrics(checkpointId: string, metrics: Record<string, number>): Promise<void> {
    const set = Object.fromEntries(Object.entries(metrics).map(([name, value]) => [`metrics.${fieldKey(name)}`, value]));
    if (Object.keys(set).length > 0) await this.checkpoints.updateOne({ _id: checkpointId }, { $set: set });
  }

  /** Deletes the given steps with their adapters; unknown steps are reported, not an error. */
  async deleteSteps(modelId: string, steps: number[]): Promise<{ deleted: number; notFound: number[] }> {
    const wanted = [...new Set(steps)];
    const found = await this.checkpoints.find({ model_id: modelId, step: { $in: wanted } }).toArray();
    for (const checkpoint of found) {
      if (checkpoint.adapter_blob_id) await this.blobs.delete(checkpoint.adapter_blob_id);
      await this.checkpoints.deleteOne({ _id: checkpoint._id });
    }
    const foundSteps = new Set(found.map((c) => c.step));
    return { deleted: found.length, notFound: wanted.filter((s) => !foundSteps.has(s)) };
  }

  /** Deletes one checkpoint with its adapter. */
  async deleteById(checkpointId: string): Promise<void> {
    const checkpoint = await this.checkpoints.findOneAndDelete({ _id: checkpointId });
    if (checkpoint?.adapter_blob_id) await this.blobs.delete(checkpoint.adapter_blob_id);
  }

  /** Deletes every checkpoint of a model (their adapters go with the model's blobs). */
  async deleteAll(modelId: string): Promise<number> {
    return (await this.checkpoints.deleteMany({ model_id: modelId })).deletedCount;
  }
}

function sanitize(metrics: Record<string, number>): Record<string, number> {
  return Object.fromEntries(Object.entries(metrics).map(([name, value]) => [fieldKey(name), value]));
}
