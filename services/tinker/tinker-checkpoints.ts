// Tinker's checkpoints of a training run: `weights/{name}` (save_weights: the adapter with its
// optimizer state, as the trainer's state files in the blob store; what load_weights reads),
// `sampler_weights/{name}` (save_weights_for_sampler: the adapter as a checkpoint of the run's
// registered model, which the engines serve; this record says which step it is) and
// `external_weights/{name}` (save_weights_external: the same adapter files, for download only).
import type { Collection, Db, Filter } from "mongodb";
import { conflict, notFound } from "../core/errors.js";
import type { Checkpoints, TinkerCheckpointType } from "../models/index.js";
import { type BlobReferences, isDuplicateKey } from "../store/index.js";
import type { TinkerLora } from "./training-runs.js";

export interface TinkerCheckpointRecord {
  /** `{training_run_id}/{checkpoint_id}`. */
  _id: string;
  entity: string;
  training_run_id: string;
  /** `weights/{name}` or `sampler_weights/{name}`. */
  checkpoint_id: string;
  type: TinkerCheckpointType;
  base_model: string;
  lora: TinkerLora;
  created_at: Date;
  expires_at: Date | null;
  user_metadata: Record<string, string> | null;
  size_bytes: number;
  /** training: the trainer's state files (blob names); with_optimizer: whether they hold its moments. */
  state_files?: { name: string; sha256: string }[];
  with_optimizer?: boolean;
  /** sampler, external: the step of the run's model whose checkpoint holds the adapter files. */
  model_step?: number;
}

export function tinkerPath(record: Pick<TinkerCheckpointRecord, "training_run_id" | "checkpoint_id">): string {
  return `tinker://${record.training_run_id}/${record.checkpoint_id}`;
}

/** A checkpoint name: a path segment (no slashes), as Tinker's paths have them. */
export const CHECKPOINT_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;

export class TinkerCheckpoints implements BlobReferences {
  private readonly checkpoints: Collection<TinkerCheckpointRecord>;

  constructor(db: Db) {
    this.checkpoints = db.collection<TinkerCheckpointRecord>("tinker_checkpoints");
  }

  async ensureIndexes(): Promise<void> {
    await this.checkpoints.createIndex({ training_run_id: 1, created_at: 1 });
    await this.checkpoints.createIndex({ entity: 1, created_at: -1 });
    await this.checkpoints.createIndex({ "state_files.sha256": 1 });
  }

  /** Adds a checkpoint; an existing one of that id is replaced only with `overwrite`. */
  async put(record: TinkerCheckpointRecord, overwrite: boolean): Promise<void> {
    if (overwrite) {
      await this.checkpoints.replaceOne({ _id: record._id }, record, { upsert: true });
      return;
    }
    try {
      await this.checkpoints.insertOne(record);
    } catch (error) {
      if (isDuplicateKey(error)) throw conflict(`The checkpoint ${tinkerPath(record)} exists already (save with overwrite, or another name).`);
      throw error;
    }
  }

  /** A checkpoint of the caller's entity (404 in the same words for absent, expired and another's). */
  async getOwned(entity: string, trainingRunId: string, checkpointId: string, now = new Date()): Promise<TinkerCheckpointRecord> {
    const record = await this.checkpoints.findOne({ _id: `${trainingRunId}/${checkpointId}` });
    if (!record || record.entity !== entity || (record.expires_at && record.expires_at <= now)) throw notFound(`The checkpoint tinker://${trainingRunId}/${checkpointId} does not exist.`);
    return record;
  }

  /** A run's live checkpoints, oldest first. */
  list(trainingRunId: string, offset: number, limit: number, now = new Date()): Promise<{ checkpoints: TinkerCheckpointRecord[]; total: number }> {
    return this.page({ training_run_id: trainingRunId }, 1, offset, limit, now);
  }

  /** Every live checkpoint of the entity's runs, newest first. */
  listOfEntity(entity: string, offset: number, limit: number, now = new Date()): Promise<{ checkpoints: TinkerCheckpointRecord[]; total: number }> {
    return this.page({ entity }, -1, offset, limit, now);
  }

  /** Unexpired checkpoints matching `filter` by creation time, by offset (Tinker's cursor), with their total. */
  private async page(filter: Filter<TinkerCheckpointRecord>, order: 1 | -1, offset: number, limit: number, now: Date): Promise<{ checkpoints: TinkerCheckpointRecord[]; total: number }> {
    const live = { ...filter, $or: [{ expires_at: null }, { expires_at: { $gt: now } }] };
    const [checkpoints, total] = await Promise.all([this.checkpoints.find(live).sort({ created_at: order, _id: 1 }).skip(offset).limit(limit).toArray(), this.checkpoints.countDocuments(live)]);
    return { checkpoints, total };
  }

  /** The newest live checkpoint of each type. */
  async latest(trainingRunId: string, type: TinkerCheckpointType, now = new Date()): Promise<TinkerCheckpointRecord | null> {
    return this.checkpoints.findOne({ training_run_id: trainingRunId, type, $or: [{ expires_at: null }, { expires_at: { $gt: now } }] }, { sort: { created_at: -1 } });
  }

  async setExpiry(id: string, expiresAt: Date | null): Promise<void> {
    await this.checkpoints.updateOne({ _id: id }, { $set: { expires_at: expiresAt } });
  }

  /** Deletes a checkpoint, and the model checkpoint (step) holding its adapter files, if any. */
  async remove(checkpoint: TinkerCheckpointRecord, modelCheckpoints: Pick<Checkpoints, "deleteSteps">): Promise<void> {
    if (checkpoint.model_step !== undefined) await modelCheckpoints.deleteSteps(checkpoint.training_run_id, [checkpoint.model_step]);
    await this.checkpoints.deleteOne({ _id: checkpoint._id });
  }

  async removeRun(trainingRunId: string): Promise<void> {
    await this.checkpoints.deleteMany({ training_run_id: trainingRunId });
  }

  /** Expired checkpoints, for the sweep to delete with what they hold. */
  async expired(now = new Date(), limit = 100): Promise<TinkerCheckpointRecord[]> {
    return this.checkpoints.find({ expires_at: { $ne: null, $lte: now } }).limit(limit).toArray();
  }

  async referencedBlobs(names: readonly string[]): Promise<Set<string>> {
    const found = await this.checkpoints.find({ "state_files.sha256": { $in: [...names] } }, { projection: { state_files: 1 } }).toArray();
    const wanted = new Set(names);
    return new Set(found.flatMap((c) => (c.state_files ?? []).map((f) => f.sha256)).filter((name) => wanted.has(name)));
  }
}
