// Tinker training runs: one per training client (create_model, or load_weights into a new
// client). Each is also a registered model of the Models service (project "tinker", the same id),
// so its sampler checkpoints are that model's checkpoints: served by the engines, listed with the
// entity's models, deleted with them.
import type { JsonObject } from "@bufbuild/protobuf";
import type { Collection, Db } from "mongodb";
import { notFound } from "../core/errors.js";

export interface TinkerLora {
  rank: number;
  seed: number;
  train_unembed: boolean;
  train_mlp: boolean;
  train_attn: boolean;
}

export interface TrainingRunRecord {
  /** The training run id, Tinker's `model_id`: the registered model's `_id`. */
  _id: string;
  entity: string;
  session_id: string;
  base_model: string;
  lora: TinkerLora;
  user_metadata: JsonObject | null;
  created_at: Date;
  last_request_at: Date;
  /** Sampler checkpoints saved without a name are numbered from here. */
  next_sampler_index: number;
  /** Released by unload_model: its live adapter is gone, its checkpoints stay. */
  unloaded: boolean;
}

export class TrainingRuns {
  private readonly runs: Collection<TrainingRunRecord>;

  constructor(db: Db) {
    this.runs = db.collection<TrainingRunRecord>("tinker_training_runs");
  }

  async ensureIndexes(): Promise<void> {
    await this.runs.createIndex({ entity: 1, created_at: -1 });
    await this.runs.createIndex({ entity: 1, session_id: 1 });
  }

  async create(record: TrainingRunRecord): Promise<void> {
    await this.runs.insertOne(record);
  }

  async getOwned(entity: string, runId: string): Promise<TrainingRunRecord> {
    const record = await this.runs.findOne({ _id: runId });
    if (!record || record.entity !== entity) throw notFound(`The training run \`${runId}\` does not exist.`);
    return record;
  }

  /** The caller's run of that id, or null (absent, or another entity's). */
  async find(entity: string, runId: string): Promise<TrainingRunRecord | null> {
    const record = await this.runs.findOne({ _id: runId });
    return record && record.entity === entity ? record : null;
  }

  /** Runs whose live adapter is held (not unloaded). */
  async countLoaded(entity: string): Promise<number> {
    return this.runs.countDocuments({ entity, unloaded: false });
  }

  async ofSession(entity: string, sessionId: string): Promise<TrainingRunRecord[]> {
    return this.runs.find({ entity, session_id: sessionId }).toArray();
  }

  /** The caller's run, its last request time set to now in the same round trip (404 as getOwned). */
  async touchOwned(entity: string, runId: string): Promise<TrainingRunRecord> {
    const record = await this.runs.findOneAndUpdate({ _id: runId, entity }, { $set: { last_request_at: new Date() } }, { returnDocument: "after" });
    if (!record) throw notFound(`The training run \`${runId}\` does not exist.`);
    return record;
  }

  /** The next number for an unnamed sampler checkpoint. */
  async takeSamplerIndex(runId: string): Promise<number> {
    const before = await this.runs.findOneAndUpdate({ _id: runId }, { $inc: { next_sampler_index: 1 } });
    if (!before) throw notFound(`The training run \`${runId}\` does not exist.`);
    return before.next_sampler_index;
  }

  async markUnloaded(runId: string, unloaded: boolean): Promise<void> {
    await this.runs.updateOne({ _id: runId }, { $set: { unloaded } });
  }

  /** Newest first, by offset (Tinker's cursor), with the total. */
  async list(entity: string, offset: number, limit: number): Promise<{ runs: TrainingRunRecord[]; total: number }> {
    const [runs, total] = await Promise.all([this.runs.find({ entity }).sort({ created_at: -1, _id: 1 }).skip(offset).limit(limit).toArray(), this.runs.countDocuments({ entity })]);
    return { runs, total };
  }

  async remove(runId: string): Promise<void> {
    await this.runs.deleteOne({ _id: runId });
  }
}
