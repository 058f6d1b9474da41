// Append-only rows per owner (a job's events, a run's metrics), stored in buckets of `size` rows:
// `_id` = `{owner}:{bucket}`, each row carrying its sequence number, and row ids (UUID-shaped, the
// last group the sequence number in hex) that lead straight to their bucket. Reading a page is one
// or two `_id` lookups. One document per row made every page a scan of all rows of all owners on
// the embedded database (FerretDB's SQLite backend pushes down nothing but `_id` equality).
import { randomUUID } from "node:crypto";
import { MongoServerError, type Collection, type Db, type Filter, type UpdateFilter } from "mongodb";

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
      const filter = { _id: this.bucketId(owner, bucket) };
      try {
        const create = { $push: { rows: { $each: items } }, $setOnInsert: { [this.ownerField]: owner, bucket } } as UpdateFilter<Bucket>;
        await this.buckets.updateOne(filter, create, { upsert: true });
      } catch (error) {
        // Two writers creating one bucket at once: the loser's upsert collides, the bucket exists
        // now. (FerretDB reports that collision as error 1 rather than 11000.)
        if (!(error instanceof MongoServerError && (error.code === 11000 || /duplicate/i.test(error.message)))) throw error;
        await this.buckets.updateOne(filter, { $push: { rows: { $each: items } } });
      }
    }
  }

  /**
   * Rows after `afterSeq` in order, at most `limit`, optionally only those `keep` accepts, up to
   * `lastSeq` (the owner's counter: buckets up to its one are read even if one in between is
   * missing or short, as after a writer died between reserving a number and storing its row).
   */
  async read(owner: string, afterSeq: number, lastSeq: number, limit: number, keep: (row: Row) => boolean = () => true): Promise<Row[]> {
    const out: Row[] = [];
    for (let bucket = this.bucketOf(afterSeq + 1); out.length < limit && bucket <= this.bucketOf(lastSeq); bucket++) {
      const found = await this.buckets.findOne({ _id: this.bucketId(owner, bucket) });
      if (!found) continue;
      // Concurrent writers may have pushed out of order.
      const rows = (found.rows as Row[]).filter((row) => row.seq > afterSeq && row.seq <= lastSeq && keep(row)).sort((a, b) => a.seq - b.seq);
      out.push(...rows.slice(0, limit - out.length));
    }
    return out;
  }

  /** The sequence number of row `id` of this owner, or null when it is not one of its rows. */
  async seqOf(owner: string, id: string): Promise<number | null> {
    if (!/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/.test(id)) return null;
    const seq = parseInt(id.slice(24), 16);
    if (!(seq >= 1)) return null;
    const bucket = await this.buckets.findOne({ _id: this.bucketId(owner, this.bucketOf(seq)) });
    return bucket?.rows.some((row) => row.id === id) ? seq : null;
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
