// What the W&B API keeps of a run beyond the service's metric history (services/models/runs.ts):
// the run's config and summary as the SDK sent them, its display name, tags and notes, and the
// line counts and last history line that `wandb.init(resume=...)` reads to continue a run where
// it stopped. Config and summary are stored as JSON text: their keys may hold '.' and '$'.
// A record also names the run as its entity's W&B runs know it (`run_name`, unique per entity):
// W&B run ids are scoped per entity, while the service's runs (and so `_id`) share one namespace.
// The run's whole history rows are kept beside the records (run-history.ts), deleted with them.
import type { Collection, Db } from "mongodb";
import { isDuplicateKey } from "../store/index.js";
import { EVENTS_TAIL_BYTES, FIELD_LIMITS, HISTORY_TAIL_BYTES, tailWithin } from "./field-limits.js";
import { stepOf, type HistoryRow } from "./history-json.js";
import { countHistoryKeys, parseKeyTypeCounts } from "./history-keys.js";
import { WandbRunHistory } from "./run-history.js";

export interface WandbRunRecord {
  /** The service's run id (services/models/runs.ts). */
  _id: string;
  entity: string;
  project: string;
  /**
   * The id the entity's W&B API knows the run by: the `wandb.init(id=...)` id of a run made
   * here, the run's own id for a model's run. Records from before it existed get `_id` on start.
   */
  run_name: string;
  display_name: string | null;
  job_type: string | null;
  group: string | null;
  notes: string | null;
  tags: string[];
  /** W&B's config form: `{"key": {"value": ..., "desc": ...}}`, JSON text. */
  config: string;
  /** The latest `wandb-summary.json` line, JSON text. */
  summary: string;
  history_line_count: number;
  events_line_count: number;
  log_line_count: number;
  /** The last history lines (JSON text each), newest last. */
  history_tail: string[];
  events_tail: string[];
  /** The keys of the history rows and their value types (history-keys.ts), JSON text; absent before any row. */
  history_keys?: string;
  /** The `_step` of the newest history row; absent before any row. */
  history_last_step?: number;
  /**
   * History line counts at which the run finished, ascending: the rows between two of them never
   * change again, so they are served as parquet files (run-history-fields.ts).
   */
  history_exports?: number[];
  /** GraphQL ids of the artifact versions the run used (`useArtifact`), for `artifact.used_by()`. */
  used_artifacts?: string[];
  state: string;
  exit_code: number | null;
  created_at: Date;
  updated_at: Date;
}

const TAIL_LINES = 10;

export type RunAttributes = Partial<Pick<WandbRunRecord, "display_name" | "job_type" | "group" | "notes" | "tags" | "config" | "summary" | "state">>;

export class WandbRunStates {
  private readonly states: Collection<WandbRunRecord>;
  /** The runs' whole history rows. */
  readonly history: WandbRunHistory;

  constructor(db: Db) {
    this.states = db.collection<WandbRunRecord>("wandb_runs");
    this.history = new WandbRunHistory(db);
  }

  async ensureIndexes(): Promise<void> {
    // Records stored before run names were scoped per entity were named by their _id (ids were
    // global then, so the names are unique per entity). One update per record: FerretDB has no
    // pipeline updates to copy a field in one statement. Idempotent, so concurrent starts agree.
    const unnamed = this.states.find({ run_name: { $exists: false } }, { projection: { _id: 1 } });
    for await (const record of unnamed) await this.states.updateOne({ _id: record._id, run_name: { $exists: false } }, { $set: { run_name: record._id } });
    await this.states.createIndex({ entity: 1, run_name: 1 }, { unique: true, name: "entity_run_name_unique" });
    await this.states.createIndex({ entity: 1, project: 1, created_at: -1 }, { name: "entity_project_created" });
    await this.states.createIndex({ entity: 1, used_artifacts: 1 }, { name: "entity_used_artifacts" });
    await this.history.ensureIndexes();
  }

  async find(runId: string): Promise<WandbRunRecord | null> {
    return this.states.findOne({ _id: runId });
  }

  /** The record `entity`'s W&B API knows as `name`, in whichever project. */
  async findByName(entity: string, name: string): Promise<WandbRunRecord | null> {
    return this.states.findOne({ entity, run_name: name });
  }

  /**
   * Creates the record on first use and sets the given attributes (absent ones are kept). A
   * duplicate-key failure on a first insert other than this run's own race is the caller's: the
   * name is the entity's already (run-state's unique index).
   */
  async upsert(runId: string, owner: { entity: string; project: string; runName: string }, attributes: RunAttributes): Promise<WandbRunRecord> {
    const now = new Date();
    const given = Object.fromEntries(Object.entries(attributes).filter(([, value]) => value !== undefined)) as RunAttributes;
    const existing = await this.states.findOne({ _id: runId });
    if (!existing) {
      const record: WandbRunRecord = {
        _id: runId,
        entity: owner.entity,
        project: owner.project,
        run_name: owner.runName,
        display_name: null,
        job_type: null,
        group: null,
        notes: null,
        tags: [],
        config: "{}",
        summary: "{}",
        history_line_count: 0,
        events_line_count: 0,
        log_line_count: 0,
        history_tail: [],
        events_tail: [],
        state: "running",
        exit_code: null,
        created_at: now,
        updated_at: now,
        ...given,
      };
      try {
        await this.states.insertOne(record);
        return record;
      } catch (error) {
        if (!isDuplicateKey(error)) throw error;
        // Our own concurrent insert won (the same _id): update it. Another run holding the name: the caller's conflict.
        if (!(await this.states.findOne({ _id: runId }, { projection: { _id: 1 } }))) throw error;
      }
    }
    const updated = await this.states.findOneAndUpdate({ _id: runId }, { $set: { ...given, updated_at: now } }, { returnDocument: "after" });
    if (!updated) throw new Error(`run ${runId} vanished while it was updated`);
    return updated;
  }

  /** The entity's runs of a project, newest first: `limit` of them after the first `offset`. */
  list(entity: string, project: string, offset: number, limit: number): Promise<WandbRunRecord[]> {
    return this.states.find({ entity, project }, { sort: { created_at: -1, _id: -1 }, skip: offset, limit }).toArray();
  }

  count(entity: string, project: string): Promise<number> {
    return this.states.countDocuments({ entity, project });
  }

  /** Notes that the run used the artifact version `artifactId` (idempotent). */
  async recordUse(runId: string, artifactId: string): Promise<void> {
    await this.states.updateOne({ _id: runId }, { $addToSet: { used_artifacts: artifactId } });
  }

  /** The entity's runs that used the artifact version `artifactId`, the first `limit`, oldest first. */
  usersOf(entity: string, artifactId: string, limit: number): Promise<WandbRunRecord[]> {
    return this.states.find({ entity, used_artifacts: artifactId }, { sort: { created_at: 1, _id: 1 }, limit }).toArray();
  }

  /**
   * Records what one file-stream request carried: line counts, the tails, the history keys, the
   * summary and the exit. The SDK sends one run's requests one after another, so reading then
   * writing is safe. `historyRows` are the parsed `historyLines` (null where one is not an object).
   */
  async recordStream(
    runId: string,
    update: { historyLines: string[]; historyRows: (HistoryRow | null)[]; eventsLines: string[]; logLines: number; summary: string | null; exitCode: number | null },
  ): Promise<void> {
    const current = await this.states.findOne({ _id: runId });
    if (!current) return;
    const rows = update.historyRows.filter((row): row is HistoryRow => row !== null);
    const historyLines = current.history_line_count + update.historyLines.length;
    const lastStep = rows.map(stepOf).filter((step): step is number => step !== null).at(-1);
    const set: Partial<WandbRunRecord> = {
      updated_at: new Date(),
      history_line_count: historyLines,
      events_line_count: current.events_line_count + update.eventsLines.length,
      log_line_count: current.log_line_count + update.logLines,
      history_tail: tailWithin([...current.history_tail, ...update.historyLines.slice(-TAIL_LINES)], TAIL_LINES, HISTORY_TAIL_BYTES),
      events_tail: tailWithin([...current.events_tail, ...update.eventsLines.slice(-TAIL_LINES)], TAIL_LINES, EVENTS_TAIL_BYTES),
    };
    if (rows.length > 0) set.history_keys = JSON.stringify(countHistoryKeys(parseKeyTypeCounts(current.history_keys), rows, FIELD_LIMITS.metricsPerRun));
    if (lastStep !== undefined) set.history_last_step = lastStep;
    if (update.summary !== null) set.summary = update.summary;
    if (update.exitCode !== null) {
      set.exit_code = update.exitCode;
      set.state = update.exitCode === 0 ? "finished" : "failed";
      const exports = current.history_exports ?? [];
      if (historyLines > (exports.at(-1) ?? 0)) set.history_exports = [...exports, historyLines];
    }
    await this.states.updateOne({ _id: runId }, { $set: set });
  }

  async delete(runId: string): Promise<void> {
    await this.states.deleteOne({ _id: runId });
    await this.history.deleteRun(runId);
  }
}
