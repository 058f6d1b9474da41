// Every history row a run logged through the W&B API, as the SDK wrote it (one line of
// `wandb-history.jsonl` per `run.log`): what `run.history()`, `run.scan_history()` and the run's
// parquet history files read back. The service's metric history (services/models/runs.ts) keeps
// only the numbers; this keeps the rows whole (strings, nested values, `_step`, `_runtime`,
// `_timestamp`). Rows are numbered by their line in the file (the file stream's offsets), so a
// retried request stores nothing twice; a run's `_step` grows with its line number.
import type { Collection, Db, Filter } from "mongodb";
import { isDuplicateKey } from "../store/index.js";
import { FieldTooLarge } from "./field-limits.js";
import { stepOf, type HistoryRow } from "./history-json.js";

interface HistoryLineRecord {
  /** `{run}#{index}`: a line stored again (a retried request) is a duplicate, not a second row. */
  _id: string;
  run_id: string;
  /** The line's number in the run's `wandb-history.jsonl` (0 is the first `run.log`). */
  index: number;
  /** The row's `_step`; null for a line that is not a JSON object. */
  step: number | null;
  line: string;
}

export interface HistoryLine {
  index: number;
  step: number | null;
  line: string;
}

/** What one read may return at most (lines are up to 4 MiB each): past it, the caller asks less. */
export const HISTORY_READ_BYTES = 128 * 1024 * 1024;

export class WandbRunHistory {
  private readonly lines: Collection<HistoryLineRecord>;

  constructor(db: Db) {
    this.lines = db.collection<HistoryLineRecord>("wandb_history");
  }

  async ensureIndexes(): Promise<void> {
    await this.lines.createIndex({ run_id: 1, index: 1 }, { name: "run_index" });
    await this.lines.createIndex({ run_id: 1, step: 1 }, { name: "run_step" });
  }

  /**
   * Stores `lines` as the run's lines `firstIndex`, `firstIndex + 1`, ... (those stored already are
   * kept); `rows` are the lines parsed (parseHistoryRow), one per line.
   */
  async append(runId: string, firstIndex: number, lines: readonly string[], rows: readonly (HistoryRow | null)[]): Promise<void> {
    if (lines.length === 0) return;
    const records = lines.map((line, offset) => {
      const index = firstIndex + offset;
      return { _id: `${runId}#${index}`, run_id: runId, index, step: stepOf(rows[offset] ?? null), line };
    });
    try {
      await this.lines.insertMany(records, { ordered: false });
    } catch (error) {
      if (!isDuplicateKey(error)) throw error;
    }
  }

  /** The lines numbered `from` to `to - 1`, in order. */
  range(runId: string, from: number, to: number): Promise<HistoryLine[]> {
    return this.read({ run_id: runId, index: { $gte: from, $lt: to } });
  }

  /** Whether any line numbered `from` to `to - 1` is stored (lines logged before rows were kept are not). */
  async has(runId: string, from: number, to: number): Promise<boolean> {
    return (await this.lines.findOne({ run_id: runId, index: { $gte: from, $lt: to } }, { projection: { _id: 1 } })) !== null;
  }

  /** The lines with these numbers, in order. */
  at(runId: string, indexes: readonly number[]): Promise<HistoryLine[]> {
    return this.read({ run_id: runId, index: { $in: [...indexes] } });
  }

  /**
   * The first and last line numbers of the rows whose step is within the bounds (each optional;
   * `maxStep` inclusive or not), or null when there is none.
   */
  async bounds(runId: string, minStep: number | null, maxStep: number | null, maxInclusive: boolean): Promise<{ first: number; last: number } | null> {
    const step: Record<string, number> = {};
    if (minStep !== null) step.$gte = minStep;
    if (maxStep !== null) step[maxInclusive ? "$lte" : "$lt"] = maxStep;
    const filter: Filter<HistoryLineRecord> = { run_id: runId, step: Object.keys(step).length > 0 ? step : { $ne: null } };
    const edge = (order: 1 | -1) => this.lines.findOne(filter, { sort: { step: order, index: order }, projection: { index: 1 } });
    const [first, last] = await Promise.all([edge(1), edge(-1)]);
    return first && last ? { first: first.index, last: last.index } : null;
  }

  /** Every line numbered `first` to `last`, in order, one at a time (no bound on their size together). */
  async *each(runId: string, first: number, last: number): AsyncGenerator<HistoryLine> {
    for await (const record of this.lines.find({ run_id: runId, index: { $gte: first, $lte: last } }, { sort: { index: 1 } })) {
      yield { index: record.index, step: record.step, line: record.line };
    }
  }

  /** The steps of the lines from `from` on, at most `limit`, in order. */
  async steps(runId: string, from: number, limit: number): Promise<number[]> {
    const found = await this.lines.find({ run_id: runId, index: { $gte: from }, step: { $ne: null } }, { sort: { index: 1 }, limit, projection: { step: 1 } }).toArray();
    return found.map((record) => record.step as number);
  }

  async deleteRun(runId: string): Promise<void> {
    await this.lines.deleteMany({ run_id: runId });
  }

  private async read(filter: Filter<HistoryLineRecord>): Promise<HistoryLine[]> {
    const found: HistoryLine[] = [];
    let bytes = 0;
    for await (const record of this.lines.find(filter, { sort: { index: 1 } })) {
      bytes += record.line.length;
      if (bytes > HISTORY_READ_BYTES) throw new FieldTooLarge(`these history rows are over ${HISTORY_READ_BYTES / 2 ** 20} MiB together; ask for fewer (samples, or a smaller step range)`);
      found.push({ index: record.index, step: record.step, line: record.line });
    }
    return found;
  }
}
