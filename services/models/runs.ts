// Tracking runs: one per model, with an append-only metric history (step, split, name, value,
// time) written by trajectory logs and by training jobs.
import { randomUUID, randomBytes } from "node:crypto";
import type { Collection, Db } from "mongodb";
import { notFound } from "../core/errors.js";
import { paginate, type Page } from "../store/pagination.js";

export interface RunRecord {
  _id: string;
  entity: string;
  project: string;
  name: string;
  model_id: string;
  created_at: Date;
  /** Next metric sequence number; reserved in blocks so one log call needs one round trip. */
  metric_seq: number;
  summary: Record<string, number>;
}

export interface RunMetricRecord {
  _id: string;
  run_id: string;
  seq: number;
  step: number;
  split: string;
  name: string;
  value: number;
  time: Date;
}

export class Runs {
  private readonly runs: Collection<RunRecord>;
  private readonly metrics: Collection<RunMetricRecord>;

  constructor(db: Db) {
    this.runs = db.collection<RunRecord>("runs");
    this.metrics = db.collection<RunMetricRecord>("run_metrics");
  }

  async ensureIndexes(): Promise<void> {
    await this.runs.createIndex({ model_id: 1 });
    await this.metrics.createIndex({ run_id: 1, seq: 1 }, { unique: true });
    await this.metrics.createIndex({ run_id: 1, name: 1, seq: 1 });
  }

  /** W&B-style run ids: 8 lowercase letters and digits. */
  static newRunId(): string {
    const alphabet = "abcdefghijklmnopqrstuvwxyz0123456789";
    return [...randomBytes(8)].map((b) => alphabet[b % alphabet.length]).join("");
  }

  /** Creates the run if it does not exist yet (idempotent, so a retried create repairs a missing run). */
  async ensure(run: Pick<RunRecord, "_id" | "entity" | "project" | "name" | "model_id">): Promise<void> {
    await this.runs.updateOne(
      { _id: run._id },
      { $setOnInsert: { ...run, created_at: new Date(), metric_seq: 0, summary: {} } },
      { upsert: true },
    );
  }

  async get(runId: string, entity: string): Promise<RunRecord> {
    const run = await this.runs.findOne({ _id: runId, entity });
    if (!run) throw notFound(`run ${runId} not found`);
    return run;
  }

  async append(runId: string, step: number, split: string, values: Record<string, number>): Promise<void> {
    const names = Object.keys(values);
    if (names.length === 0) return;
    const reserved = await this.runs.findOneAndUpdate({ _id: runId }, { $inc: { metric_seq: names.length } }, { returnDocument: "after" });
    if (!reserved) throw notFound(`run ${runId} not found`);
    const first = reserved.metric_seq - names.length;
    const time = new Date();
    await this.metrics.insertMany(
      names.map((name, index) => ({ _id: randomUUID(), run_id: runId, seq: first + index, step, split, name, value: values[name] as number, time })),
    );
    await this.runs.updateOne({ _id: runId }, { $set: Object.fromEntries(names.map((n) => [`summary.${fieldKey(n)}`, values[n]])) });
  }

  async listMetrics(runId: string, options: { after?: string; limit: number; name?: string }): Promise<Page<RunMetricRecord>> {
    return paginate(this.metrics, {
      filter: options.name ? { run_id: runId, name: options.name } : { run_id: runId },
      orderField: "seq",
      orderIsUnique: true,
      order: "asc",
      after: options.after,
      limit: options.limit,
      what: "metric",
    });
  }

  /** Deletes a run and its history; true if the run existed. */
  async delete(runId: string): Promise<boolean> {
    await this.metrics.deleteMany({ run_id: runId });
    return (await this.runs.deleteOne({ _id: runId })).deletedCount === 1;
  }

  async countMetrics(runId: string): Promise<number> {
    return this.metrics.countDocuments({ run_id: runId });
  }
}

/** Metric names become document keys: '.' would nest and '$' is reserved, so both are replaced. */
export function fieldKey(name: string): string {
  return name.replace(/\./g, "_").replace(/^\$/, "_");
}
