// Append-only rows per owner (a job's events, a run's metrics), stored in buckets of `size` rows:
// `_id` = `{owner}:{bucket}`, each row carrying its sequence number, and row ids (UUID-shaped, the
// last group the sequence number in hex) that lead straight to their bucket. Reading a page is one
// or two `_id` lookups. One document per row made every page a scan of all rows of all owners on
// the embedded database (FerretDB's SQLite backend pushes down nothing but `_id` equality).
import { randomUUID } from "node:crypto";
import type { Collection, Db, Filter, UpdateFilter } from "mongodb";
import { upsertTolerant } from "./mongo.js";

export interface SequencedRow {
  id: string;
  seq: number;
}

interface Bucket {
  _id: string;
  bucket: number;
  rows: SequencedRow[];
}

export class BucketedLog<Row extends SequencedRow> {
  private readonly buckets: Collection<Bucket>;

  /** `ownerField` names the owner in each bucket (`job_id`, `run_id`), for deletes and counts. */
  constructor(
    db: Db,
    collection: string,
    private readonly ownerField: string,
    private readonly size: number,
  ) {
    this.buckets = db.collection<Bucket>(collection);
  }

  async ensureIndexes(): Promise<void> {
    await this.buckets.createIndex({ [this.ownerField]: 1, bucket: 1 });
  }

  /** A row id for sequence number `seq` (1 and up). */
  static rowId(seq: number): string {
    return `${randomUUID().slice(0, 24)}${seq.toString(16).padStart(12, "0")}`;
  }

  /** Adds rows (numbered by the caller, who reserves their sequence numbers atomically). */
  async push(owner: string, rows: Row[]): Promise<void> {
    const byBucket = new Map<number, Row[]>();
    for (const row of rows) {
      const bucket = this.bucketOf(row.seq);
      byBucket.set(bucket, [...(byBucket.get(bucket) ?? []), row]);
    }
    for (const [bucket, items] of byBucket) {
      // Two writers may create one bucket at once.
      const update = { $push: { rows: { $each: items } }, $setOnInsert: { [this.ownerField]: owner, bucket } } as UpdateFilter<Bucket>;
      await upsertTolerant(this.buckets, { _id: this.bucketId(owner, bucket) }, update);
    }
  }

  /**
   * Rows after `afterSeq` in order, at most `limit`, optionally only those `keep` accepts, up to
   * `lastSeq` (the owner's counter: buckets up to its one are read even if one in between is
   * missing or short, as after a writer died between reserving a number and storing its row).
   */
  async read(owner: string, afterSeq: number, lastSeq: number, limit: number, keep: (row: Row) => boolean = () => true): Promise<Row[]> {
    return this.collect(owner, afterSeq, lastSeq, limit, keep, this.bucketOf(afterSeq + 1), []);
  }

  /**
   * The same, after the row `afterId` (a page cursor); null when that is not one of this owner's
   * rows. The cursor's bucket is read once, both to check the cursor and for the rows after it.
   */
  async readAfter(owner: string, afterId: string, lastSeq: number, limit: number, keep: (row: Row) => boolean = () => true): Promise<Row[] | null> {
    const afterSeq = seqInRowId(afterId);
    if (afterSeq === null) return null;
    const home = await this.buckets.findOne({ _id: this.bucketId(owner, this.bucketOf(afterSeq)) });
    if (!home?.rows.some((row) => row.id === afterId)) return null;
    return this.collect(owner, afterSeq, lastSeq, limit, keep, this.bucketOf(afterSeq) + 1, this.rowsOf(home, afterSeq, lastSeq, keep));
  }

  /** The sequence number of row `id` of this owner, or null when it is not one of its rows. */
  async seqOf(owner: string, id: string): Promise<number | null> {
    const seq = seqInRowId(id);
    if (seq === null) return null;
    const bucket = await this.buckets.findOne({ _id: this.bucketId(owner, this.bucketOf(seq)) });
    return bucket?.rows.some((row) => row.id === id) ? seq : null;
  }

  /** `first` rows already taken, then buckets from `bucket` up to the counter's. */
  private async collect(owner: string, afterSeq: number, lastSeq: number, limit: number, keep: (row: Row) => boolean, bucket: number, first: Row[]): Promise<Row[]> {
    const out = first.slice(0, limit);
    for (; out.length < limit && bucket <= this.bucketOf(lastSeq); bucket++) {
      const found = await this.buckets.findOne({ _id: this.bucketId(owner, bucket) });
      if (found) out.push(...this.rowsOf(found, afterSeq, lastSeq, keep).slice(0, limit - out.length));
    }
    return out;
  }

  /** A bucket's rows in the window, in order (concurrent writers may have pushed out of order). */
  private rowsOf(bucket: Bucket, afterSeq: number, lastSeq: number, keep: (row: Row) => boolean): Row[] {
    return (bucket.rows as Row[]).filter((row) => row.seq > afterSeq && row.seq <= lastSeq && keep(row)).sort((a, b) => a.seq - b.seq);
  }

  async deleteOwners(owners: string[]): Promise<number> {
    if (owners.length === 0) return 0;
    return (await this.buckets.deleteMany(this.ofOwners(owners))).deletedCount;
  }

  /** Stored bucket documents of these owners (for "nothing left behind" checks). */
  async countOwners(owners: string[]): Promise<number> {
    return this.buckets.countDocuments(this.ofOwners(owners));
  }

  private ofOwners(owners: string[]): Filter<Bucket> {
    return { [this.ownerField]: { $in: owners } } as Filter<Bucket>;
  }

  private bucketOf(seq: number): number {
    return Math.floor((seq - 1) / this.size);
  }

  private bucketId(owner: string, bucket: number): string {
    return `${owner}:${bucket}`;
  }
}

/** The sequence number a row id carries (see rowId), or null for anything else. */
function seqInRowId(id: string): number | null {
  if (!/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/.test(id)) return null;
  const seq = parseInt(id.slice(24), 16);
  return seq >= 1 ? seq : null;
}
