// Tracking runs: one per model, with an append-only metric history (step, split, name, value,
// time) written by trajectory logs and by training jobs.
import { randomBytes } from "node:crypto";
import type { Collection, Db } from "mongodb";
import { badRequest, notFound } from "../core/errors.js";
import { BucketedLog, type Page } from "../store/index.js";

export interface RunRecord {
  _id: string;
  entity: string;
  project: string;
  name: string;
  /** null for a run made through the W&B API that is not a model's (a plain `wandb.init`). */
  model_id: string | null;
  created_at: Date;
  /** Next metric sequence number; reserved in blocks so one log call needs one round trip. */
  metric_seq: number;
  summary: Record<string, number>;
}

export interface RunMetricRecord {
  /** A UUID whose last group is the sequence number in hex (BucketedLog.rowId). */
  id: string;
  seq: number;
  step: number;
  split: string;
  name: string;
  value: number;
  time: Date;
}

export class Runs {
  private readonly runs: Collection<RunRecord>;
  // Per-run buckets (store/bucketed-log.ts): the console reads a run's history every few seconds,
  // which was a scan of every run's rows on the embedded database.
  private readonly metrics: BucketedLog<RunMetricRecord>;

  constructor(db: Db) {
    this.runs = db.collection<RunRecord>("runs");
    this.metrics = new BucketedLog<RunMetricRecord>(db, "run_metrics", "run_id", 512);
  }

  async ensureIndexes(): Promise<void> {
    await this.runs.createIndex({ model_id: 1 });
    await this.metrics.ensureIndexes();
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

  /** A run by id, whoever owns it (callers check the entity and project). */
  async find(runId: string): Promise<RunRecord | null> {
    return this.runs.findOne({ _id: runId });
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
    // Sequence numbers start at 1 (row ids encode them).
    await this.metrics.push(
      runId,
      names.map((name, index) => ({ id: BucketedLog.rowId(first + index + 1), seq: first + index + 1, step, split, name, value: values[name] as number, time })),
    );
    await this.runs.updateOne({ _id: runId }, { $set: Object.fromEntries(names.map((n) => [`summary.${fieldKey(n)}`, values[n]])) });
  }

  /** Sets summary values without adding history points (a summary written directly, as W&B's). */
  async mergeSummary(runId: string, values: Record<string, number>): Promise<void> {
    const set = Object.fromEntries(Object.entries(values).map(([name, value]) => [`summary.${fieldKey(name)}`, value]));
    if (Object.keys(set).length > 0) await this.runs.updateOne({ _id: runId }, { $set: set });
  }

  async listMetrics(runId: string, options: { after?: string; limit: number; name?: string }): Promise<Page<RunMetricRecord>> {
    const name = options.name;
    const keep = name === undefined ? undefined : (row: RunMetricRecord) => row.name === name;
    const lastSeq = (await this.runs.findOne({ _id: runId }))?.metric_seq ?? 0;
    const rows = options.after ? await this.metrics.readAfter(runId, options.after, lastSeq, options.limit + 1, keep) : await this.metrics.read(runId, 0, lastSeq, options.limit + 1, keep);
    if (!rows) throw badRequest(`after: no metric with id ${options.after} in this list`);
    return { items: rows.slice(0, options.limit), hasMore: rows.length > options.limit };
  }

  /** Deletes a run and its history; true if the run existed. */
  async delete(runId: string): Promise<boolean> {
    await this.metrics.deleteOwners([runId]);
    return (await this.runs.deleteOne({ _id: runId })).deletedCount === 1;
  }
}

/**
 * Metric names become document keys: '.' would nest and '$' is reserved, so both are replaced;
 * so are whitespace at either end (FerretDB trims path parts and then refuses the empty ones) and
 * the empty name.
 */
export function fieldKey(name: string): string {
  const key = name.replace(/\./g, "_").replace(/^\$/, "_").replace(/^\s+|\s+$/g, (edge) => "_".repeat(edge.length));
  return key === "" ? "_" : key;
}
